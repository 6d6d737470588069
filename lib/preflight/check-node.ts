/**
 * checkNode: the preflight. It runs the probes of a configuration (each in a fresh anonymous namespace that goes when
 * the probe ends, or reading the node without changing it), turns each into a row, and never throws for a missing
 * feature: a probe that fails or cannot run is a row saying why. A report of the default probes is kept per
 * configuration for the process.
 */
import { failure, preflightCheckChannel, timing, type PreflightCheckMessage } from '../diagnostics.js';
import { SAFE_PATH } from '../spawn.js';
import { checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { defaultProbes } from './probe-list.js';
import { isSysctlKey, isSysctlValue, withScratchNetns } from './scratch.js';
import type { PreflightBackend, PreflightContext, PreflightOptions, PreflightProbe, PreflightProbeFn, PreflightReport, PreflightRow } from './types.js';

/** How many probes run at once: each is mostly waiting on programs and the kernel, and the node is not ours. */
const CONCURRENCY = 4;
const cache = new Map<string, Promise<PreflightReport>>();

/** Checked are checkNode's options, checked, with their defaults. */
export interface Checked {
  backend: PreflightBackend;
  ipv6: boolean;
  hostProcRoot: string;
  path: string;
  sysctls: [string, string][];
  probes: Partial<Record<string, PreflightProbeFn>> | undefined;
  cache: boolean;
  requiredOnly: boolean;
}

function checkBool(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidType(name, 'a boolean', value);
  return value;
}

/**
 * checkPreflightOptions checks checkNode's options and returns them with their defaults. Throws
 * InvalidArgumentError naming the bad one (`options.<name>`).
 */
export function checkPreflightOptions(options: unknown): Checked {
  const o = checkOptions<PreflightOptions>('options', options);
  const backend = o.backend ?? 'iptables';
  if (backend !== 'iptables' && backend !== 'nftables') throw invalidValue('options.backend', "'iptables' or 'nftables'", backend);
  const hostProcRoot = checkString('options.hostProcRoot', o.hostProcRoot ?? '/proc', 4096);
  if (!hostProcRoot.startsWith('/')) throw invalidValue('options.hostProcRoot', 'an absolute path', hostProcRoot);
  const path = checkString('options.path', o.path ?? SAFE_PATH, 4096);
  for (const dir of path.split(':')) {
    if (!dir.startsWith('/')) throw invalidValue('options.path', 'colon-separated absolute folders', path);
  }
  const sysctls: [string, string][] = [];
  for (const [key, value] of Object.entries(checkOptions<Record<string, string>>('options.netnsSysctls', o.netnsSysctls))) {
    if (!isSysctlKey(key)) throw invalidValue('options.netnsSysctls', 'sysctl names such as net.ipv6.conf.all.disable_ipv6', key);
    if (typeof value !== 'string' || !isSysctlValue(value)) throw invalidValue(`options.netnsSysctls.${key}`, 'a sysctl value of letters, digits and " .:/_-"', value);
    sysctls.push([key, value]);
  }
  const probes = o.probes === undefined ? undefined : checkOptions<Record<string, PreflightProbeFn>>('options.probes', o.probes);
  const known = new Set(defaultProbes('iptables', true).concat(defaultProbes('nftables', true)).map((p) => p.id as string));
  for (const [id, fn] of Object.entries(probes ?? {})) {
    if (!known.has(id)) throw invalidValue('options.probes', `probe ids (${[...known].join(', ')})`, id);
    if (typeof fn !== 'function') throw invalidType(`options.probes.${id}`, 'a function', fn);
  }
  return { backend, ipv6: checkBool('options.ipv6', o.ipv6, false), hostProcRoot, path, sysctls, probes, cache: checkBool('options.cache', o.cache, true), requiredOnly: checkBool('options.requiredOnly', o.requiredOnly, false) };
}

/** describeFailure is a row's detail for a probe that failed: what was said, and what provides the feature. */
function describeFailure(err: unknown, probe: PreflightProbe): string {
  const said = err instanceof Error ? err.message : String(err);
  const code = typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string' ? ` [${(err as { code: string }).code}]` : '';
  return `${said}${code} (provided by ${probe.provides})`;
}

async function runProbe(probe: PreflightProbe, run: PreflightProbeFn, context: PreflightContext): Promise<PreflightRow> {
  const row = { feature: probe.feature, needed_by: probe.neededBy, required: probe.required };
  try {
    const detail = await run(context);
    return { ...row, ok: true, detail: typeof detail === 'string' ? detail : 'ok' };
  } catch (err) {
    return { ...row, ok: false, detail: describeFailure(err, probe) };
  }
}

async function runAll(checked: Checked): Promise<PreflightReport> {
  const start = performance.now();
  const context: PreflightContext = {
    backend: checked.backend,
    ipv6: checked.ipv6,
    hostProcRoot: checked.hostProcRoot,
    path: checked.path,
    scratch: (fn) => withScratchNetns(checked.sysctls, fn),
  };
  const probes = defaultProbes(checked.backend, checked.ipv6).filter((p) => p.required || !checked.requiredOnly);
  const rows = new Array<PreflightRow>(probes.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < probes.length) {
      const i = next++;
      const probe = probes[i]!;
      rows[i] = await runProbe(probe, checked.probes?.[probe.id] ?? probe.run, context);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, probes.length) }, worker));
  const missing = rows.filter((r) => r.required && !r.ok);
  return { ok: missing.length === 0, backend: checked.backend, ipv6: checked.ipv6, rows, missing, durationMs: performance.now() - start };
}

function publish(checked: Checked, start: number, cached: boolean, report: PreflightReport | undefined, error?: unknown): void {
  const base = { backend: checked.backend, ipv6: checked.ipv6, cached };
  const message: PreflightCheckMessage = report
    ? { ...base, rows: report.rows.length, missing: report.missing.map((r) => r.feature), ...timing(start, report.ok ? 'ok' : 'ERR_PREFLIGHT_MISSING') }
    : { ...base, rows: 0, missing: [], ...failure(start, error) };
  preflightCheckChannel.publish(message);
}

/**
 * checkNode probes what the chosen configuration (backend, IPv6) needs of this node and resolves a report with one
 * row per feature; `ok` is false when a required feature is missing, and `missing` names those rows. Throws
 * InvalidArgumentError for bad options; never rejects for a missing or unprobeable feature (that is a row). Each
 * probe that changes anything does so in a fresh anonymous network namespace (Netns.create), gone when the probe
 * ends. With the default probes the report is kept for the process: later calls for the same configuration resolve
 * it again (`cache: false` probes anew).
 */
export async function checkNode(options?: PreflightOptions): Promise<PreflightReport> {
  const checked = checkPreflightOptions(options);
  const start = preflightCheckChannel.hasSubscribers ? performance.now() : -1;
  const cacheable = checked.cache && checked.probes === undefined;
  const key = JSON.stringify([checked.backend, checked.ipv6, checked.hostProcRoot, checked.path, checked.sysctls, checked.requiredOnly]);
  const earlier = cacheable ? cache.get(key) : undefined;
  const pending = earlier ?? runAll(checked);
  if (cacheable && !earlier) {
    cache.set(key, pending);
    pending.catch(() => cache.delete(key));
  }
  try {
    const report = await pending;
    if (start >= 0) publish(checked, start, earlier !== undefined, report);
    return report;
  } catch (err) {
    if (start >= 0) publish(checked, start, earlier !== undefined, undefined, err);
    throw err;
  }
}

/** describeMissing names the missing required rows of a report in one line ("'ipset hash:ip with comment' (...)"). */
export function describeMissing(report: PreflightReport): string {
  return report.missing.map((r) => `'${r.feature}' for ${r.needed_by}: ${r.detail}`).join('; ');
}
