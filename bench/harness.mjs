// A small benchmark harness: warm-up, several samples, median / p95 / spread, a table and JSON.
// Every scenario times its contenders in the same process run, on the same data, so ratios are comparable
// even on a shared, noisy machine (absolute times alone prove nothing).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));

/** buildReference compiles the C reference program reference/<name>.c into binDir and returns the binary's path. */
export function buildReference(binDir, name) {
  const bin = join(binDir, name);
  execFileSync('cc', ['-O2', '-Wall', '-o', bin, join(BENCH_DIR, 'reference', `${name}.c`)], { stdio: 'inherit' });
  return bin;
}

/** now returns a monotonic time in ms. */
export function now() {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** stats summarises samples (ms): median, p95, min, max, mean, spread (max/min). */
export function stats(samples) {
  if (samples.length === 0) throw new Error('no samples');
  const s = [...samples].sort((a, b) => a - b);
  const at = (q) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
  const median = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  const mean = s.reduce((a, b) => a + b, 0) / s.length;
  return { n: s.length, median, p95: at(0.95), min: s[0], max: s[s.length - 1], mean, spread: s[0] > 0 ? s[s.length - 1] / s[0] : Infinity };
}

/**
 * sample runs fn warmup times untimed, then samples times, timing each call (ms). fn may be async. setup/teardown
 * run around each call, untimed.
 */
export async function sample(fn, { warmup = 1, samples = 5, setup, teardown } = {}) {
  for (let i = 0; i < warmup; i++) {
    if (setup) await setup(i);
    await fn(i);
    if (teardown) await teardown(i);
  }
  const out = [];
  for (let i = 0; i < samples; i++) {
    if (setup) await setup(i);
    const t0 = now();
    await fn(i);
    out.push(now() - t0);
    if (teardown) await teardown(i);
  }
  return out;
}

/**
 * alternating lists indices 0..n-1 for a round: forwards in even rounds, backwards in odd ones (A B C, C B A, ...).
 * What one contender leaves behind (an `ip netns exec` run leaves the VM slower for a few hundred ms, measured:
 * 1000 single adds went from 6 to 8.5-10 us after five of them) must not land on one contender more than on the
 * others. Scenarios put such a contender in the middle of their list: alternating, the ones on either side then
 * follow it equally often (a rotation, A B C, B C A, C A B, put C after B twice as often as A: it made addMany look
 * 20% faster against the C reference, which it followed twice as often after `ipset restore`).
 */
function alternating(n, round) {
  const order = Array.from({ length: n }, (_, i) => i);
  return round % 2 === 0 ? order : order.reverse();
}

/**
 * interleaved samples several contenders round-robin: warm-up rounds, then `samples` rounds of one sample each,
 * in alternating order. Each contender is { setup?, run }; run's time is measured here (ms) unless it returns a
 * number, its own measure (by its own clock, e.g. the C reference's, in the scenario's unit). On this shared VM
 * the load drifts within seconds: taking every contender's samples in one block let a slow phase land on one of
 * them; round-robin spreads it over all alike.
 */
export async function interleaved(contenders, { warmup = 1, samples = 5 } = {}) {
  const out = contenders.map(() => []);
  for (let round = 0; round < warmup + samples; round++) {
    for (const c of alternating(contenders.length, round)) {
      const { setup, run } = contenders[c];
      if (setup) await setup();
      const t0 = now();
      const own = await run();
      const ms = typeof own === 'number' ? own : now() - t0;
      if (round >= warmup) out[c].push(ms);
    }
  }
  return out;
}

/** busyShare is the share of CPU time, over all CPUs, spent outside idle and iowait between two /proc/stat reads. */
function cpuTimes() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  return { idle: f[3] + f[4], total: f.reduce((a, b) => a + b, 0) };
}

/**
 * settle waits (up to maxMs) until the machine has been at least 90% idle over a 250 ms window. A group that
 * deletes hundreds of namespaces leaves the kernel tearing them down for seconds after (cleanup_net holds the RTNL
 * and a CPU): the next group's samples would pay for it. Returns how long it waited (ms).
 */
export async function settle(maxMs = 15_000) {
  const t0 = now();
  for (;;) {
    const a = cpuTimes();
    await new Promise((r) => setTimeout(r, 250));
    const b = cpuTimes();
    const busy = 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total);
    if (busy <= 0.1 || now() - t0 >= maxMs) return now() - t0;
  }
}

/** Results collects rows (scenario, contender, unit, stats) and the targets checked on them. */
export class Results {
  rows = [];
  targets = [];
  notes = [];

  /** row records one contender's samples; podnet: true marks the scenario's podnet row (ratio base). */
  row(scenario, contender, samples, { unit = 'ms', podnet = false, note } = {}) {
    const r = { scenario, contender, unit, podnet, ...stats(samples), samples, ...(note ? { note } : {}) };
    this.rows.push(r);
    return r;
  }

  /** fixed records a value measured elsewhere (e.g. by the C reference's own clock) with its own median/p95. */
  fixed(scenario, contender, { median, p95, min, max, n = 1, unit = 'ms', podnet = false, note }) {
    const r = { scenario, contender, unit, podnet, n, median, p95: p95 ?? median, min: min ?? median, max: max ?? median, mean: median, spread: min && max ? max / min : 1, samples: [], ...(note ? { note } : {}) };
    this.rows.push(r);
    return r;
  }

  /**
   * target records a check (gate: false = reported, but not part of the CI gate; see run.mjs): value compared with limit by op ('<=' for "at most", '>=' for "at least").
   * It holds when value op limit; in CI it fails only when it misses by more than `slack` (3x).
   */
  target(scenario, what, value, op, limit, unit = 'x', { gate = true } = {}) {
    const holds = op === '<=' ? value <= limit : value >= limit;
    const within3x = op === '<=' ? value <= limit * 3 : value >= limit / 3;
    const t = { scenario, what, value, op, limit, unit, holds, within3x, gate };
    this.targets.push(t);
    return t;
  }

  note(text) {
    this.notes.push(text);
  }

  /** table renders the rows with the ratio of each median to its scenario's podnet row. */
  table() {
    const base = new Map();
    for (const r of this.rows) if (r.podnet && !base.has(r.scenario)) base.set(r.scenario, r);
    const lines = [['scenario', 'contender', 'median', 'p95', 'spread', 'n', 'ratio to podnet']];
    for (const r of this.rows) {
      const b = base.get(r.scenario);
      const ratio = b && b.unit === r.unit && b.median > 0 ? `${fmtNum(r.median / b.median)}x` : '';
      lines.push([r.scenario, r.contender, `${fmtNum(r.median)} ${r.unit}`, `${fmtNum(r.p95)} ${r.unit}`, `${fmtNum(r.spread)}x`, String(r.n), ratio]);
    }
    return markdown(lines);
  }

  targetTable() {
    const lines = [['scenario', 'target', 'measured', 'holds', 'within 3x (CI gate)']];
    for (const t of this.targets) {
      lines.push([t.scenario, `${t.what} ${t.op} ${fmtNum(t.limit)}${t.unit}`, `${fmtNum(t.value)}${t.unit}`, t.holds ? 'yes' : 'NO', `${t.within3x ? 'yes' : 'NO'}${t.gate ? '' : ' (not gated)'}`]);
    }
    return markdown(lines);
  }

  /** write stores everything as JSON under bench/results/ and returns the path. */
  write(meta) {
    const dir = join(BENCH_DIR, 'results');
    mkdirSync(dir, { recursive: true });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const file = join(dir, `${meta.mode}-${stamp}.json`);
    writeFileSync(file, JSON.stringify({ ...meta, rows: this.rows, targets: this.targets, notes: this.notes }, null, 2));
    writeFileSync(join(dir, `latest-${meta.mode}.json`), JSON.stringify({ ...meta, rows: this.rows, targets: this.targets, notes: this.notes }, null, 2));
    return file;
  }
}

export function fmtNum(x) {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(1);
  if (a >= 10) return x.toFixed(2);
  if (a >= 1) return x.toFixed(3);
  return x.toPrecision(3);
}

function markdown(lines) {
  const widths = lines[0].map((_, c) => Math.max(...lines.map((l) => l[c].length)));
  const fmt = (l) => `| ${l.map((cell, c) => cell.padEnd(widths[c])).join(' | ')} |`;
  return [fmt(lines[0]), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...lines.slice(1).map(fmt)].join('\n');
}
