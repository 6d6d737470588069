/**
 * A CNI invocation's inputs, checked as the CNI spec says before any handler sees them: the CNI_* variables, the
 * CNI_ARGS pairs, the network config (stdin) and, per command, what it must carry. Every refusal is a CniError with
 * the spec's code: 4 for an environment variable (named), 6 for a config that is not a JSON object, 7 for an
 * invalid network config, 1 for a version podnet does not support or a prevResult it cannot convert.
 */
import { constants } from 'node:os';

import { CNI_ERROR_CODES, CniError } from './errors.js';
import { CNI_VERSIONS, type CniResult, type CniVersion, isCniVersion, parseResult, resultAddresses, versionAtLeast } from './result.js';
import { WIRE_LIMITS } from './wire.js';

/** CniCommand is a CNI_COMMAND value. VERSION is answered by the plugin and only reaches the server by mistake. */
export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'STATUS' | 'GC' | 'VERSION';

const COMMANDS: readonly string[] = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC', 'VERSION'];

/** isCniCommand tells whether value is a CNI_COMMAND podnet knows. */
export function isCniCommand(value: string): value is CniCommand {
  return COMMANDS.includes(value);
}

/** The earliest config cniVersion that has each command (older ones answer code 1, as the spec's skel does). */
const SINCE: Partial<Record<CniCommand, CniVersion>> = { CHECK: '0.4.0', STATUS: '1.1.0', GC: '1.1.0' };

/** CniPod is the pod named by CNI_ARGS; each field is absent when the runtime did not pass it (podman gives a name only). */
export interface CniPod {
  /** K8S_POD_UID. */
  uid?: string;
  /** K8S_POD_NAME. */
  name?: string;
  /** K8S_POD_NAMESPACE. */
  namespace?: string;
}

/** CniAttachment is one entry of a GC config's `cni.dev/valid-attachments`: an attachment to keep. */
export interface CniAttachment {
  containerID: string;
  ifname: string;
}

/** CniNetworkConfig is the parsed network config of a request (stdin). */
export interface CniNetworkConfig {
  /** The network's name. */
  name: string;
  /** The config's version: the version of every answer. */
  cniVersion: CniVersion;
  /** The previous plugin's result, typed, in the version it came in (undefined when absent: DEL, STATUS, GC). */
  prevResult: CniResult | undefined;
  /** The whole config object as parsed, the plugin's own keys (socketPath, timeoutMs, ...) included. */
  raw: Readonly<Record<string, unknown>>;
}

/** ParsedRequest is a request whose inputs passed every check; the server adds the netns handle. */
export interface ParsedRequest {
  command: CniCommand;
  /** CNI_CONTAINERID ('' for STATUS and GC when the runtime passed none). */
  containerId: string;
  /** CNI_IFNAME ('' for STATUS and GC when the runtime passed none). */
  ifName: string;
  /** CNI_NETNS as the runtime gave it (undefined when unset or empty). */
  netnsPath: string | undefined;
  /** The pod named by CNI_ARGS, or undefined when it names none. */
  pod: CniPod | undefined;
  /** The pod's addresses from prevResult, without prefix length (empty without prevResult). */
  ips: string[];
  config: CniNetworkConfig;
  /** Every CNI_ARGS pair (a key given twice keeps its last value). */
  args: ReadonlyMap<string, string>;
  /** GC only: the attachments to keep (`cni.dev/valid-attachments`); undefined for other commands. */
  validAttachments: CniAttachment[] | undefined;
  /** Every CNI_* variable the plugin forwarded (a name given twice keeps its first value, as getenv does). */
  env: ReadonlyMap<string, string>;
}

/** RequestInput is what arrived on the wire. */
export interface RequestInput {
  env: readonly (readonly [string, string])[];
  stdin: Uint8Array;
  hasNetnsFd: boolean;
  netnsErrno: number;
}

/** ParseOutcome is a parsed request, or the CniError to answer with and the cniVersion to echo in it. */
export type ParseOutcome = { ok: true; request: ParsedRequest } | { ok: false; error: CniError; cniVersion: string };

/** The variables podnet reads (others are forwarded to handlers in `env` as they came). */
const READ_VARIABLES = ['CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_NETNS', 'CNI_ARGS'];

const CONTAINER_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const MAX_IFNAME_BYTES = 15; // IFNAMSIZ - 1

function envError(variable: string, message: string): CniError {
  return new CniError(CNI_ERROR_CODES.invalidEnvironment, `${variable} ${message}`, variable);
}

function configError(message: string, field: string): CniError {
  return new CniError(CNI_ERROR_CODES.invalidNetworkConfig, `invalid network config: ${message}`, field);
}

function errnoName(errno: number): string {
  for (const [name, value] of Object.entries(constants.errno)) if (value === errno) return name;
  return `errno ${errno}`;
}

/** checkIfName returns the refusal of an interface name, or undefined when the spec's rules allow it. */
function ifNameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (Buffer.byteLength(name) > MAX_IFNAME_BYTES) return `'${name}' is longer than ${MAX_IFNAME_BYTES} bytes`;
  if (name === '.' || name === '..') return `'${name}' is not an interface name`;
  if (/[/:\s]/.test(name)) return `'${name}' contains '/', ':' or whitespace`;
  return undefined;
}

/**
 * parseCniArgs parses CNI_ARGS (`K=V;K=V`): an empty string has no pairs. Throws CniError code 4 naming CNI_ARGS
 * for a pair without `=` or with an empty key (an empty pair, `a=1;;b=2`, included).
 */
export function parseCniArgs(text: string): Map<string, string> {
  const args = new Map<string, string>();
  if (text === '') return args;
  const pairs = text.split(';');
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i]!;
    const eq = pair.indexOf('=');
    if (eq < 1) throw envError('CNI_ARGS', `pair ${i + 1} '${pair}' is not K=V`);
    args.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return args;
}

/** parseConfig decodes stdin as a JSON object; code 6 when it is over 1 MiB, not UTF-8 JSON, or not an object. */
function parseConfig(stdin: Uint8Array): Record<string, unknown> {
  if (stdin.byteLength > WIRE_LIMITS.maxConfig) {
    throw new CniError(CNI_ERROR_CODES.decodingFailure, `network config of ${stdin.byteLength} bytes is over 1 MiB`, 'stdin');
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(stdin));
  } catch (err) {
    throw new CniError(CNI_ERROR_CODES.decodingFailure, `failed to decode network config: ${(err as Error).message}`, 'stdin');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CniError(CNI_ERROR_CODES.decodingFailure, 'failed to decode network config: not a JSON object', 'stdin');
  }
  return value as Record<string, unknown>;
}

function parseAttachments(value: unknown): CniAttachment[] {
  const field = 'cni.dev/valid-attachments';
  if (!Array.isArray(value)) throw configError(`'${field}' is not an array`, field);
  const out: CniAttachment[] = [];
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    const entry = typeof item === 'object' && item !== null ? (item as Record<string, unknown>) : undefined;
    if (!entry || typeof entry.containerID !== 'string' || typeof entry.ifname !== 'string') {
      throw configError(`'${field}'[${i}] is not {containerID, ifname}`, field);
    }
    out.push({ containerID: entry.containerID, ifname: entry.ifname });
  }
  return out;
}

function podOf(args: ReadonlyMap<string, string>): CniPod | undefined {
  const pod: CniPod = {};
  const uid = args.get('K8S_POD_UID');
  const name = args.get('K8S_POD_NAME');
  const namespace = args.get('K8S_POD_NAMESPACE');
  if (uid !== undefined) pod.uid = uid;
  if (name !== undefined) pod.name = name;
  if (namespace !== undefined) pod.namespace = namespace;
  return uid === undefined && name === undefined && namespace === undefined ? undefined : pod;
}

function parse(input: RequestInput, seen: { cniVersion: string }): ParsedRequest {
  const env = new Map<string, string>();
  for (const [name, value] of input.env) if (!env.has(name)) env.set(name, value);

  // The config's version is echoed in every error, those about CNI_COMMAND included.
  let raw: Record<string, unknown> | undefined;
  let configProblem: unknown;
  try {
    raw = parseConfig(input.stdin);
    if (typeof raw.cniVersion === 'string' && raw.cniVersion !== '') seen.cniVersion = raw.cniVersion;
  } catch (err) {
    configProblem = err;
  }

  for (const name of READ_VARIABLES) {
    // U+FFFD stands for bytes that were not UTF-8: such a value cannot be used as the runtime meant it.
    if (env.get(name)?.includes('\ufffd')) throw envError(name, 'is not valid UTF-8');
  }

  const command = env.get('CNI_COMMAND');
  if (command === undefined || command === '') throw envError('CNI_COMMAND', 'is not set');
  if (!isCniCommand(command)) throw envError('CNI_COMMAND', `'${command}' is not one of ${COMMANDS.join(', ')}`);
  const cmd = command as CniCommand;

  if (raw === undefined) throw configProblem;
  if (typeof raw.cniVersion !== 'string' || raw.cniVersion === '') throw configError("'cniVersion' is missing", 'cniVersion');
  if (typeof raw.name !== 'string' || raw.name === '') throw configError("'name' is missing", 'name');
  const cniVersion = raw.cniVersion;
  if (!isCniVersion(cniVersion)) {
    throw new CniError(
      CNI_ERROR_CODES.incompatibleVersion,
      `incompatible CNI version ${cniVersion}: podnet supports ${CNI_VERSIONS.join(', ')}`,
      'cniVersion',
    );
  }
  const since = SINCE[cmd];
  if (since !== undefined && !versionAtLeast(cniVersion, since)) {
    throw new CniError(CNI_ERROR_CODES.incompatibleVersion, `config version ${cniVersion} does not allow ${cmd} (${since} or later)`, 'cniVersion');
  }

  const perContainer = cmd === 'ADD' || cmd === 'DEL' || cmd === 'CHECK';
  const containerId = env.get('CNI_CONTAINERID') ?? '';
  if (perContainer || containerId !== '') {
    if (containerId === '') throw envError('CNI_CONTAINERID', 'is not set');
    if (!CONTAINER_ID.test(containerId)) {
      throw envError('CNI_CONTAINERID', `'${containerId}' must start with a letter or digit, then letters, digits, '_', '.', '-'`);
    }
  }
  const ifName = env.get('CNI_IFNAME') ?? '';
  if (perContainer || ifName !== '') {
    const problem = ifName === '' ? 'is not set' : ifNameProblem(ifName);
    if (problem !== undefined) throw envError('CNI_IFNAME', problem);
  }

  const netnsPath = env.get('CNI_NETNS') || undefined;
  const needsNetns = cmd === 'ADD' || cmd === 'CHECK';
  if (netnsPath === undefined) {
    if (needsNetns) throw envError('CNI_NETNS', `is required for ${cmd}`);
    if (input.hasNetnsFd) throw envError('CNI_NETNS', 'is not set but a netns fd came with the request');
  } else if (input.netnsErrno !== 0) {
    // DEL must succeed when the namespace is gone: only the commands that work in it need it open.
    if (needsNetns) throw envError('CNI_NETNS', `'${netnsPath}' could not be opened: ${errnoName(input.netnsErrno)}`);
  } else if (!input.hasNetnsFd && needsNetns) {
    throw envError('CNI_NETNS', `'${netnsPath}' came without its fd`);
  }

  const args = parseCniArgs(env.get('CNI_ARGS') ?? '');

  let prevResult: CniResult | undefined;
  if (raw.prevResult !== undefined) {
    if (typeof raw.prevResult !== 'object' || raw.prevResult === null || Array.isArray(raw.prevResult)) {
      throw configError("'prevResult' is not an object", 'prevResult');
    }
    prevResult = parseResult(raw.prevResult, cniVersion);
  } else if (needsNetns) {
    throw configError(`'prevResult' is required for ${cmd}: podnet-cni is a chained plugin`, 'prevResult');
  }

  let validAttachments: CniAttachment[] | undefined;
  if (cmd === 'GC') {
    // Without the list a GC cannot tell what to keep: refused rather than read as "keep nothing".
    if (raw['cni.dev/valid-attachments'] === undefined) {
      throw configError("'cni.dev/valid-attachments' is required for GC", 'cni.dev/valid-attachments');
    }
    validAttachments = parseAttachments(raw['cni.dev/valid-attachments']);
  }

  return {
    command: cmd,
    containerId,
    ifName,
    netnsPath,
    pod: podOf(args),
    ips: prevResult ? resultAddresses(prevResult) : [],
    config: { name: raw.name, cniVersion, prevResult, raw },
    args,
    validAttachments,
    env,
  };
}

/**
 * parseRequest checks a request's inputs in the order the spec's own plugins do (CNI_COMMAND, the config, its
 * version, the other variables, prevResult) and answers the first refusal as a CniError, with the config's
 * cniVersion to echo (or the newest podnet supports when the config has none). It never throws.
 */
export function parseRequest(input: RequestInput): ParseOutcome {
  const seen = { cniVersion: CNI_VERSIONS[CNI_VERSIONS.length - 1] as string };
  try {
    return { ok: true, request: parse(input, seen) };
  } catch (err) {
    const error = err instanceof CniError ? err : new CniError(CNI_ERROR_CODES.decodingFailure, String(err), 'request');
    return { ok: false, error, cniVersion: seen.cniVersion };
  }
}
