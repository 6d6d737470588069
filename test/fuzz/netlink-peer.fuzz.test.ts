// JS-level fuzzing of the netlink engine and its codecs: every public Ipset and Rtnetlink operation, sync and
// async, driven through a MutatingPeer that corrupts FakeIpsetKernel's and FakeRtnetlink's replies. Run against the
// sanitizer build with `npm run fuzz:js` (and by `npm run test:asan` with everything else); `npm test` runs a
// bounded pass.
//
// The oracle, for each mutated call:
// - it resolves with a well-formed value (its shape is checked), or throws / rejects with a podnet typed error
//   (instanceof PodnetError, a string code, an errno if any in -65535..0). Anything else is a finding: a TypeError,
//   a RangeError, a plain Error, a value of the wrong shape, a promise still pending 20 s after the call (its deadline
//   is 1 s: a lost reply from a JS peer is an immediate ETIMEDOUT), the event loop blocked (the watchdog), or a
//   sanitizer report (which aborts the process).
// - the client is still usable: unmutated follow-up calls on the same client succeed and agree with the fake's
//   state (ipset: listNames() on the main socket and list() on the dump socket; rtnetlink: links() and rules()).
//   That is what the engine promises: an exchange that ended early drains what is left before the next request,
//   replies to other sequence numbers are dropped, and the session's queue survives failures. What a corrupted
//   reply that still parses says is believed, as it would be from the kernel: a set's shape learnt from a header
//   with a flipped family is cached, and a later add may fail InvalidArgumentError. The follow-ups therefore use
//   only calls that depend on no cached knowledge.
//
// Replaying: iteration i of a seed runs in session floor(i / SESSION) with a fresh fake and client, seeded from
// (seed, session) alone. PODNET_FUZZ_SEED=<seed> PODNET_FUZZ_REPLAY=<i> reruns just that session up to i and logs
// every call and mutation. PODNET_FUZZ_ITERATIONS=<n> (per seed and target) and PODNET_FUZZ_SEED=<a,b,...> make
// longer runs; a summary is printed when either is set.
import { isIP } from 'node:net';
import { Worker } from 'node:worker_threads';

import { afterAll, describe, expect, it } from 'vitest';

import { PodnetError } from '../../lib/errors.js';
import { Ipset, Rtnetlink, type IpsetEntry } from '../../lib/index.js';
import type { IpsetBatchResult, IpsetHeader, IpsetListedEntry } from '../../lib/ipset/types.js';
import { native } from '../../lib/native.js';
import type { Address, Link, Route, RoutingRule, RouteSpec, RoutingRuleSpec } from '../../lib/rtnetlink/types.js';
import { FakeIpsetKernel, FakeRtnetlink, type FakeSetSnapshot } from '../../lib/testing/index.js';
import { mulberry32 } from '../helpers/random.js';
import { MutatingPeer, ipsetLayout, rtnetlinkLayout, type Mutation } from './mutating-peer.js';

const env = process.env;
function envInt(name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, not '${text}'`);
  return n;
}

const LONG_RUN = env.PODNET_FUZZ_ITERATIONS !== undefined || env.PODNET_FUZZ_SEED !== undefined;
/** Iterations per seed and target. The default keeps `npm test` to a few seconds of this file. */
const ITERATIONS = envInt('PODNET_FUZZ_ITERATIONS', 1000);
const SEEDS = env.PODNET_FUZZ_SEED ? env.PODNET_FUZZ_SEED.split(',').map((s) => Number(s) >>> 0) : [1, 0x5eed, 0xc0ffee];
const REPLAY = env.PODNET_FUZZ_REPLAY === undefined ? undefined : envInt('PODNET_FUZZ_REPLAY', 0);
/** Iterations per fresh fake and client. */
const SESSION = 40;
const TIMEOUT_MS = 1000;
/** A call still pending this long after it started is hung: its deadline is TIMEOUT_MS. */
const HANG_MS = 20_000;
const MAX_FINDINGS = 20;

type Rand = () => number;
const int = (rand: Rand, n: number) => Math.floor(rand() * n);
const pick = <T>(rand: Rand, list: readonly T[]): T => list[int(rand, list.length)]!;
const chance = (rand: Rand, p: number) => rand() < p;

function sessionRand(seed: number, session: number): Rand {
  return mulberry32((Math.imul(seed, 0x9e3779b1) ^ Math.imul(session + 1, 0x85ebca6b)) >>> 0);
}

// ---------------------------------------------------------------------------------------------------------------
// The watchdog: a worker thread that notices when the JS thread has been stuck in one call (a native loop that
// never ends cannot be raced by a timer), prints the call and aborts the process.

const watchdog = (() => {
  const shared = new SharedArrayBuffer(8 + 4096);
  const state = new Int32Array(shared, 0, 2);
  const label = new Uint8Array(shared, 8);
  const source = `
    const { workerData } = require('node:worker_threads');
    const { writeSync } = require('node:fs');
    const state = new Int32Array(workerData.shared, 0, 2);
    const label = new Uint8Array(workerData.shared, 8);
    let seen = 0;
    let since = Date.now();
    for (;;) {
      Atomics.wait(state, 0, seen, 1000);
      const now = Atomics.load(state, 0);
      if (now === -1) break;
      if (now !== seen) { seen = now; since = Date.now(); continue; }
      if (now !== 0 && Date.now() - since > workerData.limitMs) {
        const text = Buffer.from(label.subarray(0, Atomics.load(state, 1))).toString();
        writeSync(2, '\\nnetlink fuzz: FINDING: the JS thread is stuck in one call for ' + workerData.limitMs + ' ms: ' + text + '\\n');
        process.kill(process.pid, 'SIGABRT');
      }
    }
  `;
  const worker = new Worker(source, { eval: true, workerData: { shared, limitMs: HANG_MS * 3 } });
  worker.unref();
  let generation = 0;
  return {
    /** busy says the JS thread starts the call described. */
    busy(text: string): void {
      const bytes = Buffer.from(text.slice(0, 4000));
      label.set(bytes);
      Atomics.store(state, 1, bytes.length);
      generation = (generation % 0x7ffffff0) + 1;
      Atomics.store(state, 0, generation);
      Atomics.notify(state, 0);
    },
    idle(): void {
      Atomics.store(state, 0, 0);
      Atomics.notify(state, 0);
    },
    stop(): Promise<number> {
      Atomics.store(state, 0, -1);
      Atomics.notify(state, 0);
      return worker.terminate();
    },
  };
})();

afterAll(() => watchdog.stop());

// ---------------------------------------------------------------------------------------------------------------
// The oracle.

class Malformed extends Error {}

function fail(what: string, value: unknown): never {
  let text: string;
  try {
    text = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  } catch {
    text = String(value);
  }
  throw new Malformed(`${what}: ${text?.slice(0, 300)}`);
}

const isUint = (v: unknown, max = 0xffffffff) => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;
const isOptUint = (v: unknown, max = 0xffffffff) => v === undefined || isUint(v, max);
const isOptString = (v: unknown) => v === undefined || typeof v === 'string';
/**
 * A name podnet takes back as an argument (a set name, 1..31 bytes; a link name, 1..15) must be one it would take:
 * the kernel sends no other, so a reply with another is malformed.
 */
const isName = (v: unknown, maxBytes: number) => typeof v === 'string' && v.length > 0 && Buffer.byteLength(v) <= maxBytes && !v.includes('\0');
const isOptName = (v: unknown, maxBytes: number) => v === undefined || isName(v, maxBytes);

/** What is wrong with a thrown value, or undefined for a podnet typed error. */
function untyped(err: unknown): string | undefined {
  if (err instanceof Malformed) return `malformed value: ${err.message}`;
  if (!(err instanceof PodnetError)) {
    const name = err instanceof Error ? err.constructor.name : typeof err;
    return `untyped ${name}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
  }
  if (typeof err.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(err.code)) return `typed error with a bad code ${String(err.code)}: ${err.message}`;
  if (typeof err.message !== 'string' || err.message === '') return `typed error ${err.code} without a message`;
  const errno = (err as { errno?: unknown }).errno;
  if (errno !== undefined && !(typeof errno === 'number' && Number.isInteger(errno) && errno <= 0 && errno >= -0xffff)) {
    return `typed error ${err.code} with errno ${String(errno)} out of range: ${err.message}`;
  }
  // Nothing here calls a client from inside its peer.
  if (err.code.endsWith('_REENTERED')) return `re-entry refused without re-entry: ${err.message}`;
  return undefined;
}

function checkHeader(h: IpsetHeader): void {
  if (typeof h !== 'object' || h === null) fail('header is not an object', h);
  if (!isName(h.name, 31) || typeof h.type !== 'string') fail('header name/type', h);
  if (!['inet', 'inet6', 'unspec'].includes(h.family)) fail('header family', h);
  for (const k of ['revision', 'references', 'maxelem', 'hashsize', 'elements', 'memsize'] as const) if (!isUint(h[k])) fail(`header ${k}`, h);
  for (const k of ['comment', 'counters', 'decoded'] as const) if (typeof h[k] !== 'boolean') fail(`header ${k}`, h);
  if (!isOptUint(h.timeout)) fail('header timeout', h);
}

function checkListedEntry(e: IpsetListedEntry): void {
  if (typeof e !== 'object' || e === null || isIP(e.ip) === 0) fail('entry ip', e);
  if (!isOptUint(e.cidr, 128) || !isOptUint(e.port, 65535) || !isOptUint(e.timeout)) fail('entry numbers', e);
  if (e.proto !== undefined && typeof e.proto !== 'string' && !isUint(e.proto, 255)) fail('entry proto', e);
  if (!isOptString(e.comment) || (e.comment !== undefined && Buffer.byteLength(e.comment) > 255 * 3)) fail('entry comment', e);
  for (const k of ['bytes', 'packets'] as const) if (e[k] !== undefined && !(typeof e[k] === 'number' && e[k] >= 0)) fail(`entry ${k}`, e);
  if (e.nomatch !== undefined && e.nomatch !== true) fail('entry nomatch', e);
}

function checkBatch(r: IpsetBatchResult, n: number): void {
  if (typeof r !== 'object' || r === null || !isUint(r.applied, n) || !Array.isArray(r.failed)) fail('batch result', r);
  const seen = new Set<number>();
  for (const f of r.failed) {
    if (!isUint(f.index, n - 1) || seen.has(f.index)) fail('batch failure index', { index: f.index, n });
    seen.add(f.index);
    const problem = untyped(f.error);
    if (problem) fail(`batch failure error (${problem})`, f.index);
  }
  if (r.applied + r.failed.length !== n) fail(`applied ${r.applied} + failed ${r.failed.length} is not the ${n} entries sent`, r.applied);
}

function checkRaw(raw: unknown): void {
  if (!Array.isArray(raw)) fail('raw attributes', raw);
  for (const a of raw as { type: unknown; data: unknown }[]) if (!isUint(a.type, 0x3fff) || !Buffer.isBuffer(a.data)) fail('raw attribute', a);
}

function checkLink(l: Link): void {
  if (!Object.isFrozen(l) || !isUint(l.index) || !isName(l.name, 15) || !isUint(l.flags) || typeof l.up !== 'boolean') fail('link', l);
  if (!isOptUint(l.mtu) || !isUint(l.linkType, 0xffff) || !isUint(l.operstate, 255) || !isOptUint(l.master)) fail('link numbers', l);
  if (!isOptString(l.address) || !isOptString(l.kind)) fail('link strings', l);
  checkRaw(l.raw);
}

function checkAddress(a: Address): void {
  if (!Object.isFrozen(a) || (a.family !== 4 && a.family !== 6) || isIP(a.address) !== a.family) fail('address', a);
  if (!isUint(a.prefixLength, 255) || !isUint(a.link) || !isUint(a.flags)) fail('address numbers', a);
  if (typeof a.scope !== 'string' && !isUint(a.scope, 255)) fail('address scope', a);
  if ((a.peer !== undefined && isIP(a.peer) !== a.family) || !isOptString(a.label)) fail('address peer/label', a);
  checkRaw(a.raw);
}

function checkRoute(r: Route): void {
  if (!Object.isFrozen(r) || (r.family !== 4 && r.family !== 6) || isIP(r.dst) !== r.family) fail('route', r);
  for (const k of ['src', 'gateway', 'prefsrc'] as const) if (r[k] !== undefined && isIP(r[k]) !== r.family) fail(`route ${k}`, r);
  if (!isUint(r.dstLength, 255) || !isUint(r.srcLength, 255) || !isUint(r.tos, 255) || !isUint(r.table) || !isUint(r.flags)) fail('route numbers', r);
  if (!isOptUint(r.oif) || !isOptUint(r.priority)) fail('route oif/priority', r);
  for (const k of ['type', 'scope', 'protocol'] as const) if (typeof r[k] !== 'string' && !isUint(r[k], 255)) fail(`route ${k}`, r);
  checkRaw(r.raw);
}

function checkRule(r: RoutingRule): void {
  if (!Object.isFrozen(r) || (r.family !== 4 && r.family !== 6) || !isUint(r.priority) || !isUint(r.table)) fail('rule', r);
  for (const k of ['src', 'dst'] as const) if (r[k] !== undefined && isIP(r[k]) !== r.family) fail(`rule ${k}`, r);
  if (!isUint(r.srcLength, 255) || !isUint(r.dstLength, 255) || !isUint(r.tos, 255) || !isUint(r.flags) || typeof r.invert !== 'boolean') fail('rule numbers', r);
  if (!isOptUint(r.mark) || !isOptUint(r.mask) || !isOptUint(r.goto) || !isOptName(r.iifname, 15) || !isOptName(r.oifname, 15)) fail('rule options', r);
  for (const k of ['action', 'protocol'] as const) if (typeof r[k] !== 'string' && !isUint(r[k], 255)) fail(`rule ${k}`, r);
  checkRaw(r.raw);
}

function arrayOf<T>(check: (v: T) => void): (v: unknown) => void {
  return (v) => {
    if (!Array.isArray(v)) fail('not an array', v);
    for (const x of v as T[]) check(x);
  };
}

const isVoid = (v: unknown) => {
  if (v !== undefined) fail('expected undefined', v);
};

// ---------------------------------------------------------------------------------------------------------------
// The harness.

/** One call an operation makes: chosen (with its arguments) before the peer is armed. */
interface Call {
  label: string;
  run: () => unknown;
  check: (value: unknown) => void;
}

interface World {
  peer: MutatingPeer;
  close(): void;
}

interface Target<W extends World> {
  name: string;
  setup(rand: Rand): Promise<W>;
  operations: readonly { weight: number; make: (w: W, rand: Rand) => Call }[];
  /** Unmutated calls after each mutated one; throws what is wrong. */
  followUp(w: W): Promise<void>;
}

interface Finding {
  seed: number;
  iteration: number;
  operation: string;
  problem: string;
  mutations: Mutation[];
}

interface Stats {
  iterations: number;
  resolved: number;
  rejected: number;
  mutated: number;
  mutations: number;
  codes: Map<string, number>;
  kinds: Map<string, number>;
  seconds: number;
}

const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

/** settle runs a call and waits for it at most HANG_MS; a sync throw counts as a rejection. */
async function settle(call: Call): Promise<{ ok: true; value: unknown } | { ok: false; error: unknown } | { hung: true }> {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<{ hung: true }>((resolve) => {
    timer = setTimeout(() => resolve({ hung: true }), HANG_MS);
  });
  const run = (async () => call.run())().then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  try {
    return await Promise.race([run, hang]);
  } finally {
    clearTimeout(timer);
  }
}

function describeMutations(ms: readonly Mutation[]): string {
  return ms.length ? ms.map((m) => JSON.stringify(m)).join('\n      ') : '(none)';
}

function report(f: Finding): string {
  return (
    `seed ${f.seed} iteration ${f.iteration} (replay: PODNET_FUZZ_SEED=${f.seed} PODNET_FUZZ_REPLAY=${f.iteration}): ${f.operation}\n` +
    `    ${f.problem.split('\n').slice(0, 12).join('\n    ')}\n    mutations:\n      ${describeMutations(f.mutations)}`
  );
}

async function fuzz<W extends World>(target: Target<W>, seed: number, iterations: number, replay?: number): Promise<{ findings: Finding[]; stats: Stats }> {
  const findings: Finding[] = [];
  const stats: Stats = { iterations: 0, resolved: 0, rejected: 0, mutated: 0, mutations: 0, codes: new Map(), kinds: new Map(), seconds: 0 };
  const started = performance.now();
  const total = replay === undefined ? iterations : replay + 1;
  const weights = target.operations.reduce((n, o) => n + o.weight, 0);
  const log = (text: string) => {
    if (replay !== undefined) console.log(text);
  };
  for (let first = replay === undefined ? 0 : replay - (replay % SESSION); first < total && findings.length < MAX_FINDINGS; first += SESSION) {
    const rand = sessionRand(seed, first / SESSION);
    let world: W;
    try {
      world = await target.setup(rand);
    } catch (err) {
      findings.push({ seed, iteration: first, operation: 'setup', problem: `unmutated setup failed: ${String(err)}`, mutations: [] });
      continue;
    }
    try {
      for (let iteration = first; iteration < Math.min(first + SESSION, total); iteration++) {
        let r = rand() * weights;
        const op = target.operations.find((o) => (r -= o.weight) < 0) ?? target.operations[0]!;
        const call = op.make(world, rand);
        const operation = `${target.name}.${call.label}`;
        watchdog.busy(`${operation} seed ${seed} iteration ${iteration}`);
        world.peer.arm(rand);
        const outcome = await settle(call);
        const mutations = world.peer.disarm();
        const applied = mutations.filter((m) => !('skipped' in m));
        stats.iterations++;
        if (applied.length) stats.mutated++;
        stats.mutations += applied.length;
        for (const m of applied) bump(stats.kinds, m.kind);
        const finding = (problem: string) => findings.push({ seed, iteration, operation, problem, mutations });
        if ('hung' in outcome) {
          finding(`did not settle within ${HANG_MS} ms (deadline ${TIMEOUT_MS} ms)`);
          break; // the session's queue is stuck behind it
        }
        if (outcome.ok) {
          try {
            call.check(outcome.value);
            stats.resolved++;
            log(`${iteration} ${operation}: ok`);
          } catch (err) {
            finding(untyped(err) ?? String(err));
          }
        } else {
          const problem = untyped(outcome.error);
          if (problem) finding(problem);
          else {
            stats.rejected++;
            bump(stats.codes, (outcome.error as PodnetError).code);
            log(`${iteration} ${operation}: ${(outcome.error as PodnetError).code} ${(outcome.error as Error).message}`);
          }
        }
        if (mutations.length) log(`    mutations:\n      ${describeMutations(mutations)}`);
        watchdog.busy(`${operation} follow-up, seed ${seed} iteration ${iteration}`);
        const follow = await settle({ label: 'follow-up', run: () => target.followUp(world), check: () => undefined });
        if ('hung' in follow) {
          finding(`the unmutated follow-up did not settle within ${HANG_MS} ms`);
          break;
        }
        if (!follow.ok) finding(`the unmutated follow-up failed: ${follow.error instanceof Error ? (follow.error.stack ?? follow.error.message) : String(follow.error)}`);
        if (findings.length >= MAX_FINDINGS) break;
      }
    } finally {
      watchdog.idle();
      world.close();
    }
  }
  stats.seconds = (performance.now() - started) / 1000;
  return { findings, stats };
}

function summary(name: string, seed: number, s: Stats): string {
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
  return (
    `netlink fuzz ${name} seed ${seed}: ${s.iterations} iterations in ${s.seconds.toFixed(1)} s ` +
    `(${s.mutated} mutated, ${s.mutations} mutations; ${s.resolved} resolved, ${s.rejected} typed rejections)\n` +
    `  codes: ${top(s.codes)}\n  mutations: ${top(s.kinds)}`
  );
}

// ---------------------------------------------------------------------------------------------------------------
// ipset

interface IpsetWorld extends World {
  fake: FakeIpsetKernel;
  ipset: Ipset;
}

const SET_NAMES = ['a', 'b', 'c', 'd', 'e'];
const TYPES = ['hash:ip', 'hash:net', 'hash:ip,port'] as const;

function setOf(w: IpsetWorld, name: string): FakeSetSnapshot | undefined {
  return w.fake.dump().sets.find((s) => s.name === name);
}

/** An entry for set (its real type, or a guess when it is gone): new, or one it holds. */
function entryFor(rand: Rand, set: FakeSetSnapshot | undefined): IpsetEntry {
  if (set && set.entries.length && chance(rand, 0.4)) {
    const e = pick(rand, set.entries);
    const out: IpsetEntry = { ip: e.ip };
    if (e.cidr !== undefined) out.cidr = e.cidr;
    if (e.port !== undefined) out.port = e.port;
    if (e.proto !== undefined) out.proto = e.proto;
    if (e.comment !== undefined && chance(rand, 0.5)) out.comment = e.comment;
    return out;
  }
  const type = set?.type ?? pick(rand, TYPES);
  const v6 = (set?.family ?? 'inet') === 'inet6';
  const n = int(rand, 1 << 16);
  let entry: IpsetEntry;
  if (type === 'hash:net') {
    entry = v6 ? { ip: `fd00:0:${n.toString(16)}::`, cidr: 48 } : { ip: `10.${n >> 8}.${n & 255}.0`, cidr: 24 };
  } else {
    entry = { ip: v6 ? `fd00::${n.toString(16)}` : `10.${int(rand, 4)}.${n >> 8}.${n & 255}` };
    if (type === 'hash:ip,port') {
      entry.port = int(rand, 65536);
      entry.proto = pick(rand, ['tcp', 'udp', 'sctp'] as const);
    }
  }
  if (set?.options.comment && chance(rand, 0.7)) entry.comment = chance(rand, 0.1) ? 'é'.repeat(100) : `pod-${int(rand, 1000)}`;
  if (set?.options.timeout !== undefined && chance(rand, 0.3)) entry.timeout = int(rand, 10_000);
  return entry;
}

function entriesFor(rand: Rand, set: FakeSetSnapshot | undefined, n: number): IpsetEntry[] {
  return Array.from({ length: n }, () => entryFor(rand, set));
}

function* stream(entries: IpsetEntry[]): Generator<IpsetEntry> {
  yield* entries;
}

function checkListing(v: unknown): void {
  const l = v as IpsetHeader & { entries: IpsetListedEntry[] };
  checkHeader(l);
  if (!Array.isArray(l.entries)) fail('listing entries', l.entries);
  for (const e of l.entries) checkListedEntry(e);
}

const ipsetTarget: Target<IpsetWorld> = {
  name: 'ipset',
  async setup(rand) {
    const fake = new FakeIpsetKernel({ now: () => 1_700_000_000_000, dumpPageSize: 256 + int(rand, 2048), seed: 1 + int(rand, 1000) });
    const peer = new MutatingPeer(fake, ipsetLayout);
    const ipset = await Ipset.open({ netlink: peer, timeoutMs: TIMEOUT_MS });
    const w: IpsetWorld = { fake, peer, ipset, close: () => ipset.close() };
    await ipset.create('a', { type: 'hash:ip', comment: true, timeout: 600 });
    await ipset.create('b', { type: 'hash:net', family: 'inet6' });
    await ipset.create('c', { type: 'hash:ip,port', counters: true, comment: true });
    for (const name of ['a', 'b', 'c']) await ipset.addMany(name, entriesFor(rand, setOf(w, name), 20 + int(rand, 100)), { replace: true });
    return w;
  },
  operations: [
    {
      weight: 3,
      make: (w, rand) => {
        const name = pick(rand, SET_NAMES);
        const type = pick(rand, TYPES);
        const options = { type, family: pick(rand, ['inet', 'inet6'] as const), comment: chance(rand, 0.5), counters: chance(rand, 0.3), ...(chance(rand, 0.3) ? { timeout: int(rand, 1000) } : {}) };
        const exist = chance(rand, 0.3);
        return { label: `create(${name}, ${JSON.stringify(options)}, exist ${exist})`, run: () => w.ipset.create(name, options, { exist }), check: isVoid };
      },
    },
    {
      weight: 1,
      make: (w, rand) => {
        const name = chance(rand, 0.1) ? undefined : pick(rand, SET_NAMES);
        return { label: `destroy(${name ?? ''})`, run: () => w.ipset.destroy(name), check: isVoid };
      },
    },
    {
      weight: 1,
      make: (w, rand) => {
        const name = chance(rand, 0.2) ? undefined : pick(rand, SET_NAMES);
        return { label: `flush(${name ?? ''})`, run: () => w.ipset.flush(name), check: isVoid };
      },
    },
    {
      weight: 1,
      make: (w, rand) => {
        const [from, to] = [pick(rand, SET_NAMES), pick(rand, SET_NAMES)];
        return chance(rand, 0.5)
          ? { label: `rename(${from}, ${to})`, run: () => w.ipset.rename(from, to), check: isVoid }
          : { label: `swap(${from}, ${to})`, run: () => w.ipset.swap(from, to), check: isVoid };
      },
    },
    {
      weight: 5,
      make: (w, rand) => {
        // 1..6 concurrent single adds and dels: those queued back to back for one set coalesce into one batch.
        const calls = Array.from({ length: 1 + int(rand, 6) }, () => {
          const name = chance(rand, 0.8) ? 'a' : pick(rand, SET_NAMES);
          const del = chance(rand, 0.3);
          const entry = entryFor(rand, setOf(w, name));
          const lenient = chance(rand, 0.5);
          return { name, del, entry, lenient };
        });
        return {
          label: `add/del ×${calls.length} ${JSON.stringify(calls)}`,
          run: async () => {
            const settled = await Promise.allSettled(
              calls.map((c) => (c.del ? w.ipset.del(c.name, c.entry, { ignoreMissing: c.lenient }) : w.ipset.add(c.name, c.entry, { replace: c.lenient }))),
            );
            // Each caller's own answer is checked: a value, or a typed error.
            for (const s of settled) {
              if (s.status === 'fulfilled') isVoid(s.value);
              else if (untyped(s.reason)) throw s.reason;
            }
          },
          check: isVoid,
        };
      },
    },
    {
      weight: 4,
      make: (w, rand) => {
        const name = pick(rand, SET_NAMES);
        const entry = entryFor(rand, setOf(w, name));
        const lenient = chance(rand, 0.5);
        return chance(rand, 0.6)
          ? { label: `addSync(${name}, ${JSON.stringify(entry)})`, run: () => w.ipset.addSync(name, entry, { replace: lenient }), check: isVoid }
          : { label: `delSync(${name}, ${JSON.stringify(entry)})`, run: () => w.ipset.delSync(name, entry, { ignoreMissing: lenient }), check: isVoid };
      },
    },
    {
      weight: 3,
      make: (w, rand) => {
        const name = pick(rand, SET_NAMES);
        const entry = entryFor(rand, setOf(w, name));
        const isBool = (v: unknown) => {
          if (typeof v !== 'boolean') fail('test result', v);
        };
        return chance(rand, 0.5)
          ? { label: `test(${name}, ${JSON.stringify(entry)})`, run: () => w.ipset.test(name, entry), check: isBool }
          : { label: `testSync(${name}, ${JSON.stringify(entry)})`, run: () => w.ipset.testSync(name, entry), check: isBool };
      },
    },
    {
      weight: 4,
      make: (w, rand) => {
        const name = pick(rand, SET_NAMES);
        const entries = entriesFor(rand, setOf(w, name), 1 + int(rand, chance(rand, 0.2) ? 1500 : 60));
        const del = chance(rand, 0.3);
        const streamed = chance(rand, 0.4);
        const lenient = chance(rand, 0.5);
        const source = () => (streamed ? stream(entries) : entries);
        return {
          label: `${del ? 'delMany' : 'addMany'}(${name}, ${entries.length} entries${streamed ? ', streamed' : ''})`,
          run: () => (del ? w.ipset.delMany(name, source(), { ignoreMissing: lenient }) : w.ipset.addMany(name, source(), { replace: lenient })),
          check: (v) => checkBatch(v as IpsetBatchResult, entries.length),
        };
      },
    },
    {
      weight: 4,
      make: (w, rand) => {
        const name = pick(rand, ['a', 'a', 'b', 'c', ...SET_NAMES]);
        return { label: `list(${name})`, run: () => w.ipset.list(name), check: checkListing };
      },
    },
    {
      weight: 2,
      make: (w, rand) => {
        const name = pick(rand, SET_NAMES);
        return { label: `header(${name})`, run: () => w.ipset.header(name), check: (v) => checkHeader(v as IpsetHeader) };
      },
    },
    {
      weight: 2,
      make: (w) => ({
        label: 'listNames()',
        run: () => w.ipset.listNames(),
        check: arrayOf<string>((s) => {
          if (!isName(s, 31)) fail('set name', s);
        }),
      }),
    },
    {
      weight: 3,
      make: (w, rand) => {
        const name = pick(rand, ['a', 'b', 'c', ...SET_NAMES]);
        const chunk = 1 + int(rand, 50);
        const stopAfter = chance(rand, 0.2) ? int(rand, 30) : Infinity;
        return {
          label: `entries(${name}, chunk ${chunk}${stopAfter < Infinity ? `, break after ${stopAfter}` : ''})`,
          run: async () => {
            const got: IpsetListedEntry[] = [];
            for await (const e of w.ipset.entries(name, { chunk })) {
              got.push(e);
              if (got.length >= stopAfter) break;
            }
            return got;
          },
          check: arrayOf(checkListedEntry),
        };
      },
    },
    {
      weight: 1,
      make: (w) => ({
        label: 'Ipset.open()',
        run: async () => {
          const other = await Ipset.open({ netlink: w.peer, timeoutMs: TIMEOUT_MS });
          const ok = other instanceof Ipset && !other.closed;
          other.close();
          return ok;
        },
        check: (v) => {
          if (v !== true) fail('Ipset.open', v);
        },
      }),
    },
  ],
  async followUp(w) {
    const names = await w.ipset.listNames();
    const sets = w.fake.dump().sets;
    const truth = sets.map((s) => s.name);
    if ([...names].sort().join() !== [...truth].sort().join()) throw new Error(`listNames() says ${names.join()} but the fake holds ${truth.join()}`);
    const set = sets[0];
    if (set) {
      const listing = await w.ipset.list(set.name);
      if (listing.entries.length !== set.entries.length) throw new Error(`list(${set.name}) has ${listing.entries.length} entries, the fake ${set.entries.length}`);
    }
  },
};

// ---------------------------------------------------------------------------------------------------------------
// rtnetlink

interface RtWorld extends World {
  fake: FakeRtnetlink;
  rt: Rtnetlink;
}

const LINKS = ['lo', 'eth0', 'eth1', 'nope0', 1, 2, 3, 99] as const;

function routeSpec(rand: Rand): RouteSpec {
  const v6 = chance(rand, 0.3);
  const n = int(rand, 64);
  const spec: RouteSpec = v6 ? { dst: `fd10:${n.toString(16)}::`, dstLength: 64 } : { dst: `10.50.${n}.0`, dstLength: 24 };
  spec.table = pick(rand, [254, 100, 70000]);
  const kind = int(rand, 4);
  if (kind === 0) spec.type = 'blackhole';
  else if (kind === 1) spec.oif = pick(rand, ['eth0', 'eth1', 2, 3, 'nope0']);
  else if (kind === 2) {
    spec.gateway = v6 ? 'fd00::fe' : '10.0.0.254';
    spec.oif = 'eth0';
  } else {
    spec.type = 'unicast';
    spec.oif = pick(rand, [1, 2, 3]);
  }
  if (chance(rand, 0.5)) spec.priority = int(rand, 100);
  return spec;
}

function ruleSpec(rand: Rand): RoutingRuleSpec {
  const spec: RoutingRuleSpec = { family: chance(rand, 0.3) ? 6 : 4, priority: 100 + int(rand, 50), table: pick(rand, [100, 200, 70000]) };
  if (chance(rand, 0.4)) spec.mark = int(rand, 16);
  if (chance(rand, 0.3)) spec.iifname = pick(rand, ['eth0', 'eth1']);
  if (chance(rand, 0.2)) Object.assign(spec, spec.family === 6 ? { src: 'fd00::', srcLength: 16 } : { src: '10.0.0.0', srcLength: 8 });
  return spec;
}

const familyFilter = (rand: Rand) => pick(rand, [undefined, 4, 6] as const);

const rtTarget: Target<RtWorld> = {
  name: 'rtnetlink',
  async setup(rand) {
    const fake = new FakeRtnetlink({ now: () => 1_700_000_000_000, dumpPageSize: 256 + int(rand, 2048) });
    fake.addLink({ name: 'eth0' });
    fake.addLink({ name: 'eth1', mtu: 9000 });
    fake.addAddress('eth0', '10.0.0.1/24');
    fake.addAddress('eth0', 'fd00::1/64');
    fake.addAddress('eth1', '10.1.0.1/16');
    const peer = new MutatingPeer(fake, rtnetlinkLayout);
    const rt = await Rtnetlink.open({ netlink: peer, timeoutMs: TIMEOUT_MS });
    const w: RtWorld = { fake, peer, rt, close: () => rt.close() };
    for (let i = 0; i < 10 + int(rand, 30); i++) await rt.addRoute(routeSpec(rand), { replace: true }).catch(() => undefined);
    for (let i = 0; i < 3 + int(rand, 10); i++) await rt.addRule(ruleSpec(rand)).catch(() => undefined);
    return w;
  },
  operations: [
    { weight: 3, make: (w) => ({ label: 'links()', run: () => w.rt.links(), check: arrayOf(checkLink) }) },
    {
      weight: 3,
      make: (w, rand) => {
        const which = pick(rand, LINKS);
        return { label: `link(${which})`, run: () => w.rt.link(which), check: (v) => checkLink(v as Link) };
      },
    },
    {
      weight: 3,
      make: (w, rand) => {
        const filter = { ...(chance(rand, 0.4) ? { link: pick(rand, LINKS) } : {}), family: familyFilter(rand) };
        return { label: `addresses(${JSON.stringify(filter)})`, run: () => w.rt.addresses(filter), check: arrayOf(checkAddress) };
      },
    },
    {
      weight: 3,
      make: (w, rand) => {
        const filter = { ...(chance(rand, 0.3) ? { table: pick(rand, [254, 255, 100, 70000]) } : {}), family: familyFilter(rand) };
        return { label: `routes(${JSON.stringify(filter)})`, run: () => w.rt.routes(filter), check: arrayOf(checkRoute) };
      },
    },
    {
      weight: 3,
      make: (w, rand) => {
        const filter = { family: familyFilter(rand) };
        return { label: `rules(${JSON.stringify(filter)})`, run: () => w.rt.rules(filter), check: arrayOf(checkRule) };
      },
    },
    {
      weight: 3,
      make: (w, rand) => {
        const spec = routeSpec(rand);
        const replace = chance(rand, 0.3);
        return { label: `addRoute(${JSON.stringify(spec)}, replace ${replace})`, run: () => w.rt.addRoute(spec, { replace }), check: isVoid };
      },
    },
    {
      weight: 2,
      make: (w, rand) => {
        const spec = routeSpec(rand);
        const ignoreMissing = chance(rand, 0.5);
        return { label: `delRoute(${JSON.stringify(spec)}, ignoreMissing ${ignoreMissing})`, run: () => w.rt.delRoute(spec, { ignoreMissing }), check: isVoid };
      },
    },
    {
      weight: 2,
      make: (w, rand) => {
        const spec = ruleSpec(rand);
        return { label: `addRule(${JSON.stringify(spec)})`, run: () => w.rt.addRule(spec), check: isVoid };
      },
    },
    {
      weight: 2,
      make: (w, rand) => {
        const spec = ruleSpec(rand);
        const ignoreMissing = chance(rand, 0.5);
        return { label: `delRule(${JSON.stringify(spec)}, ignoreMissing ${ignoreMissing})`, run: () => w.rt.delRule(spec, { ignoreMissing }), check: isVoid };
      },
    },
  ],
  async followUp(w) {
    const links = await w.rt.links();
    const truth = w.fake.dump();
    if (links.map((l) => l.name).join() !== truth.links.map((l) => l.name).join()) {
      throw new Error(`links() says ${links.map((l) => l.name).join()} but the fake holds ${truth.links.map((l) => l.name).join()}`);
    }
    const rules = await w.rt.rules();
    if (rules.length !== truth.rules.length) throw new Error(`rules() lists ${rules.length} rules, the fake holds ${truth.rules.length}`);
  },
};

// ---------------------------------------------------------------------------------------------------------------

describe('netlink peers with mutated replies (JS-level fuzzing)', () => {
  // Generous: the sanitizer build and a loaded machine make iterations several times slower; a hang is caught
  // per call well before this.
  const timeout = 120_000 + ITERATIONS * 200;
  const register = <W extends World>(target: Target<W>) => {
    for (const seed of SEEDS) {
      const what = REPLAY === undefined ? `${ITERATIONS} iterations` : `replaying iteration ${REPLAY}`;
      it(`${target.name}: every operation, seed ${seed}, ${what}`, async () => {
        const { findings, stats } = await fuzz(target, seed, ITERATIONS, REPLAY);
        if (LONG_RUN) console.log(summary(target.name, seed, stats));
        expect(findings.map(report), `${findings.length} finding(s)`).toEqual([]);
        if (REPLAY !== undefined) return;
        // The mutations reached both outcomes: some calls still succeeded, others failed typed.
        expect(stats.mutations).toBeGreaterThan(0);
        expect(stats.resolved).toBeGreaterThan(0);
        expect(stats.rejected).toBeGreaterThan(0);
      }, timeout);
    }
  };
  register(ipsetTarget);
  register(rtTarget);

  it('runs on the sanitizer build when npm run fuzz:js or test:asan asks for it', () => {
    expect(native.buildInfo().asan).toBe(env.PODNET_EXPECT_ASAN === '1');
  });
});
