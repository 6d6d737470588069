/**
 * Pure transformations of the primary network's CNI config text: which file of a config dir is the primary one (as
 * libcni picks it), podnet's entry chained at the end of a conflist's plugins or taken out, and a single-plugin
 * `.conf` turned into a conflist. Edits are made in the text itself, so every byte outside podnet's entry (key order,
 * formatting, number spelling) stays as the primary CNI wrote it.
 */
import { CniInstallError } from './install-errors.js';

/** PODNET_PLUGIN_TYPE is the `type` of podnet's conflist entry, the plugin binary's file name. */
export const PODNET_PLUGIN_TYPE = 'podnet-cni';

/** PodnetConfEntry is podnet's entry in a conflist's plugins. */
export interface PodnetConfEntry {
  /** Always `podnet-cni`. */
  type: typeof PODNET_PLUGIN_TYPE;
  /** The agent's CniServer socket. */
  socketPath: string;
  /** The plugin's deadline in ms for the whole exchange with the agent. */
  timeoutMs: number;
}

/** ConfigFileKind is how libcni reads a config file: a list of plugins, or one plugin. */
export type ConfigFileKind = 'conflist' | 'conf';

/** EditResult is the text after an edit, and whether the edit changed it. */
export interface EditResult {
  /** The config text after the edit (the input when nothing changed). */
  text: string;
  /** Whether text differs from the input. */
  changed: boolean;
}

/**
 * configFileKind tells how a runtime reads the file called name (a base name): `.conflist` as a list, `.conf` and
 * `.json` as one plugin, anything else not at all. The extension is what follows the last dot, as Go's filepath.Ext
 * has it (so a file called `.conf` counts).
 */
export function configFileKind(name: string): ConfigFileKind | undefined {
  const dot = name.lastIndexOf('.');
  if (dot < 0) return undefined;
  const ext = name.slice(dot);
  if (ext === '.conflist') return 'conflist';
  if (ext === '.conf' || ext === '.json') return 'conf';
  return undefined;
}

/** compareConfigNames orders file names by their UTF-8 bytes, as Go's sort.Strings does. */
export function compareConfigNames(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * primaryConfigName picks the primary network's config among the regular files (base names) of a config dir: the
 * lexically first `.conflist`, `.conf` or `.json`, which is what containerd and CRI-O load as the default network
 * (libcni's ConfFiles over those extensions, sorted). Undefined when there is none.
 */
export function primaryConfigName(names: readonly string[]): string | undefined {
  let first: string | undefined;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    if (configFileKind(name) === undefined) continue;
    if (first === undefined || compareConfigNames(name, first) < 0) first = name;
  }
  return first;
}

/** conflistNameFor is the name a single-plugin config (`10-bridge.conf`, `10-bridge.json`) gets as a conflist. */
export function conflistNameFor(confName: string): string {
  return `${confName.slice(0, confName.lastIndexOf('.'))}.conflist`;
}

// ---- a JSON scanner that keeps positions --------------------------------------------------------------------------
// JSON.parse has judged the text valid before any of these run, so they only find where values start and end.

interface Member {
  key: string;
  /** Start of the key's opening quote. */
  start: number;
  valueStart: number;
  valueEnd: number;
}

interface Element {
  start: number;
  end: number;
}

function skipSpace(text: string, i: number): number {
  while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  return i;
}

function skipString(text: string, i: number): number {
  i++;
  while (i < text.length) {
    const c = text[i];
    if (c === '\\') i += 2;
    else if (c === '"') return i + 1;
    else i++;
  }
  return i;
}

function skipValue(text: string, i: number): number {
  const c = text[i];
  if (c === '"') return skipString(text, i);
  if (c === '{' || c === '[') {
    let depth = 0;
    while (i < text.length) {
      const d = text[i];
      if (d === '"') {
        i = skipString(text, i);
        continue;
      }
      if (d === '{' || d === '[') depth++;
      else if (d === '}' || d === ']') {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  while (i < text.length && !',]} \t\n\r'.includes(text[i]!)) i++;
  return i;
}

function objectMembers(text: string, open: number): Member[] {
  const members: Member[] = [];
  let i = skipSpace(text, open + 1);
  if (text[i] === '}') return members;
  for (;;) {
    const start = i;
    const keyEnd = skipString(text, i);
    const key = JSON.parse(text.slice(start, keyEnd)) as string;
    i = skipSpace(text, keyEnd) + 1; // the colon
    const valueStart = skipSpace(text, i);
    const valueEnd = skipValue(text, valueStart);
    members.push({ key, start, valueStart, valueEnd });
    i = skipSpace(text, valueEnd);
    if (text[i] !== ',') return members;
    i = skipSpace(text, i + 1);
  }
}

function arrayElements(text: string, open: number): Element[] {
  const elements: Element[] = [];
  let i = skipSpace(text, open + 1);
  if (text[i] === ']') return elements;
  for (;;) {
    const end = skipValue(text, i);
    elements.push({ start: i, end });
    i = skipSpace(text, end);
    if (text[i] !== ',') return elements;
    i = skipSpace(text, i + 1);
  }
}

// ---- parsing a config ---------------------------------------------------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

interface ParsedObject {
  value: Record<string, Json>;
  /** Position of the top-level `{`. */
  open: number;
  members: Member[];
}

function parseObject(text: string, file: string): ParsedObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new CniInstallError(`network config '${file}' is not JSON: ${(err as Error).message}`, 'ERR_CNI_CONFIG_PARSE', { file }, { cause: err });
  }
  if (!isObject(value)) {
    throw new CniInstallError(`network config '${file}' is not a JSON object`, 'ERR_CNI_CONFIG_INVALID', { file });
  }
  const open = skipSpace(text, 0);
  return { value, open, members: objectMembers(text, open) };
}

/** lastMember is the member JSON.parse (and Go's decoder) takes when a key repeats: the last one. */
function lastMember(members: readonly Member[], key: string): Member | undefined {
  let found: Member | undefined;
  for (const m of members) if (m.key === key) found = m;
  return found;
}

interface PluginList {
  open: number;
  elements: Element[];
  /** Indexes of podnet's entries. */
  podnet: number[];
}

function pluginList(text: string, file: string): PluginList {
  const parsed = parseObject(text, file);
  const member = lastMember(parsed.members, 'plugins');
  if (member === undefined || text[member.valueStart] !== '[') {
    throw new CniInstallError(`network config '${file}' has no plugins list`, 'ERR_CNI_CONFIG_INVALID', { file });
  }
  const elements = arrayElements(text, member.valueStart);
  const podnet: number[] = [];
  for (let i = 0; i < elements.length; i++) {
    const el = elements[i]!;
    const value: unknown = JSON.parse(text.slice(el.start, el.end));
    if (isObject(value) && value.type === PODNET_PLUGIN_TYPE) podnet.push(i);
  }
  return { open: member.valueStart, elements, podnet };
}

// ---- formatting podnet's entry ------------------------------------------------------------------------------------

/** indentBefore is the whitespace that starts the line of pos, when only whitespace precedes pos on it. */
function indentBefore(text: string, pos: number): string | undefined {
  const lineStart = text.lastIndexOf('\n', pos - 1) + 1;
  const lead = text.slice(lineStart, pos);
  return /^[ \t]*$/.test(lead) && lineStart > 0 ? lead : undefined;
}

function formatEntry(entry: PodnetConfEntry, indent: string | undefined): string {
  const ordered = { type: entry.type, socketPath: entry.socketPath, timeoutMs: entry.timeoutMs };
  if (indent === undefined) {
    return `{"type": ${JSON.stringify(ordered.type)}, "socketPath": ${JSON.stringify(ordered.socketPath)}, "timeoutMs": ${ordered.timeoutMs}}`;
  }
  const unit = indent.startsWith('\t') ? '\t' : '  ';
  return JSON.stringify(ordered, null, unit).split('\n').join(`\n${indent}`);
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (!isObject(a) || !isObject(b)) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) if (!Object.hasOwn(b, k) || !jsonEqual(a[k], b[k])) return false;
  return true;
}

// ---- edits --------------------------------------------------------------------------------------------------------

/** removeElement takes element k out of its array with the separator that joined it to a neighbour. */
function removeElement(text: string, elements: readonly Element[], k: number): string {
  const el = elements[k]!;
  if (k > 0) return text.slice(0, elements[k - 1]!.end) + text.slice(el.end);
  const next = elements[1];
  return text.slice(0, el.start) + text.slice(next === undefined ? el.end : next.start);
}

/**
 * unchainPodnet takes every podnet entry out of a conflist's plugins, leaving the rest of the text byte for byte (an
 * entry chainPodnet appended goes with exactly the separator it added). Throws CniInstallError when text is not a
 * conflist (file names it in the error).
 */
export function unchainPodnet(text: string, file: string): EditResult {
  let out = text;
  for (;;) {
    const list = pluginList(out, file);
    const k = list.podnet[list.podnet.length - 1];
    if (k === undefined) return { text: out, changed: out !== text };
    out = removeElement(out, list.elements, k);
  }
}

/**
 * chainPodnet puts entry at the end of a conflist's plugins, or when podnet already has an entry there, makes that
 * one equal to entry where it stands (extra podnet entries go). Text that already holds exactly entry comes back
 * unchanged. Throws CniInstallError `ERR_CNI_CONFIG_PARSE` for text that is not JSON and `ERR_CNI_CONFIG_INVALID`
 * for JSON without a non-empty plugins list (libcni refuses an empty one), naming file.
 */
export function chainPodnet(text: string, entry: PodnetConfEntry, file: string): EditResult {
  let out = text;
  let list = pluginList(out, file);
  if (list.elements.length === 0) {
    throw new CniInstallError(`network config '${file}' has an empty plugins list`, 'ERR_CNI_CONFIG_INVALID', { file });
  }
  while (list.podnet.length > 1) {
    out = removeElement(out, list.elements, list.podnet[list.podnet.length - 1]!);
    list = pluginList(out, file);
  }
  const at = list.podnet[0];
  if (at !== undefined) {
    const el = list.elements[at]!;
    if (jsonEqual(JSON.parse(out.slice(el.start, el.end)), entry)) return { text: out, changed: out !== text };
    out = out.slice(0, el.start) + formatEntry(entry, indentBefore(out, el.start)) + out.slice(el.end);
    return { text: out, changed: true };
  }
  const last = list.elements[list.elements.length - 1]!;
  const indent = indentBefore(out, last.start);
  const separator = indent === undefined ? ', ' : `,\n${indent}`;
  out = out.slice(0, last.end) + separator + formatEntry(entry, indent) + out.slice(last.end);
  return { text: out, changed: true };
}

/**
 * conflistFromConf turns a single-plugin config into a conflist chaining entry after that plugin:
 * `{cniVersion, name, plugins: [<the config without name and cniVersion>, entry]}`, each kept value spelled as in
 * text. Throws CniInstallError `ERR_CNI_CONFIG_PARSE` for text that is not JSON, `ERR_CNI_CONFIG_INVALID` for a
 * config without a string `type` and `name` (what libcni needs to load it), a non-string `cniVersion`, or one that is
 * podnet's own entry.
 */
export function conflistFromConf(text: string, entry: PodnetConfEntry, file: string): string {
  const parsed = parseObject(text, file);
  const { value } = parsed;
  if (typeof value.type !== 'string' || value.type === '') {
    throw new CniInstallError(`network config '${file}' has no plugin type`, 'ERR_CNI_CONFIG_INVALID', { file });
  }
  if (value.type === PODNET_PLUGIN_TYPE) {
    throw new CniInstallError(`network config '${file}' is podnet's own entry, not a primary network`, 'ERR_CNI_CONFIG_INVALID', { file });
  }
  if (typeof value.name !== 'string') {
    throw new CniInstallError(`network config '${file}' has no network name`, 'ERR_CNI_CONFIG_INVALID', { file });
  }
  if (value.cniVersion !== undefined && typeof value.cniVersion !== 'string') {
    throw new CniInstallError(`network config '${file}' has a cniVersion that is not a string`, 'ERR_CNI_CONFIG_INVALID', { file });
  }
  const raw = (m: Member): string => text.slice(m.valueStart, m.valueEnd);
  const kept = parsed.members.filter((m) => m.key !== 'name' && m.key !== 'cniVersion');
  const plugin = `{\n${kept.map((m) => `      ${text.slice(m.start, m.valueEnd)}`).join(',\n')}\n    }`;
  const version = lastMember(parsed.members, 'cniVersion');
  const lines = ['{'];
  if (version !== undefined) lines.push(`  "cniVersion": ${raw(version)},`);
  lines.push(`  "name": ${raw(lastMember(parsed.members, 'name')!)},`);
  lines.push('  "plugins": [', `    ${plugin},`, `    ${formatEntry(entry, '    ')}`, '  ]', '}', '');
  return lines.join('\n');
}

/**
 * conflistRevertsToConf tells whether conflistText, podnet's entry aside, is still exactly the conflist that
 * conflistFromConf made of confText: then nothing but podnet touched it, and confText may take its place again.
 * False for texts that do not parse.
 */
export function conflistRevertsToConf(conflistText: string, confText: string): boolean {
  try {
    const placeholder: PodnetConfEntry = { type: PODNET_PLUGIN_TYPE, socketPath: '/', timeoutMs: 1 };
    const made = unchainPodnet(conflistFromConf(confText, placeholder, 'original'), 'original').text;
    return unchainPodnet(conflistText, 'current').text === made;
  } catch {
    return false;
  }
}
