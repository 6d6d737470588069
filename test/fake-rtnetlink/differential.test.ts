// Random differential test: the same random sequence of route and rule changes (fixed seeds) goes to the real kernel
// in a throwaway namespace and to FakeRtnetlink; every answer must be the same after masking, and so must the dumps
// taken along the way and at the end.
import { expect, it } from 'vitest';

import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { mulberry32 as rng } from '../helpers/random.js';
import { type World, diff, setUp } from './helpers/kernel.js';
import { APPEND, ACK, CREATE, EXCL, REPLACE, REQ, T, dump, route, rule, type RouteOptions, type RuleOptions } from './helpers/requests.js';

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
const maybe = <T>(r: () => number, p: number, v: () => T): T | undefined => (r() < p ? v() : undefined);

const WORLD: World = {
  links: [
    { name: 'd0', address: '02:00:00:00:00:05' },
    { name: 'd1', address: '02:00:00:00:00:06', up: false },
    { name: 'd2', address: '02:00:00:00:00:07' },
  ],
  addresses: [
    ['d0', '10.0.0.1/24'],
    ['d0', 'fd00::1/64'],
    ['d2', '10.2.0.1/16'],
    ['d2', 'fd02::1/64'],
    ['d1', '10.1.0.1/24'],
  ],
};

const DST4: readonly [string, number][] = [
  ['10.9.0.0', 24], ['10.9.0.0', 16], ['10.9.1.0', 24], ['0.0.0.0', 0], ['10.10.0.0', 24], ['10.9.0.128', 25],
  ['192.168.1.0', 24], ['10.0.0.0', 24], ['10.9.0.1', 24], ['10.9.0.0', 33], ['10.0.0.77', 32],
];
const DST6: readonly [string, number][] = [
  ['fd09::', 64], ['fd09::', 48], ['fd09:0:0:1::', 64], ['::', 0], ['fd0a::', 64], ['fd09::', 63], ['fe80::', 64],
  ['fd00::', 64], ['fd09::1', 64], ['fd00::', 9], ['fd08::', 16], ['fd00::77', 128],
];
const TABLES = [254, 254, 254, 100, 100, 300, 44, 0, 255] as const;
const TYPES = [1, 1, 1, 1, 2, 6, 7, 8, 9, 3, 0] as const;
const ADD_FLAGS = [REQ | ACK | CREATE | EXCL, REQ | ACK | CREATE | EXCL, REQ | ACK | CREATE, REQ | ACK | CREATE | REPLACE, REQ | ACK | REPLACE, REQ | ACK, REQ | ACK | CREATE | APPEND];

function routeOp(r: () => number, family: 4 | 6, op: 'add' | 'del'): { label: string; bytes: Uint8Array } {
  const [dst, dstLen] = pick(r, family === 4 ? DST4 : DST6);
  const o: RouteOptions = { family, dst, dstLen, table: pick(r, TABLES) };
  if (op === 'add') {
    o.type = pick(r, TYPES);
    o.scope = family === 4 ? pick(r, [0, 0, 253, 253, 254, 255]) : 0;
    if (o.type === 2 && family === 4 && r() < 0.8) o.scope = 254;
    o.protocol = pick(r, [3, 3, 4, 0]);
    o.flags = pick(r, ADD_FLAGS);
    const errorType = o.type >= 6 && o.type <= 9;
    o.oif = maybe(r, errorType ? 0.1 : 0.85, () => pick(r, [1, 2, 2, 2, 3, 4, 99]));
    const gw = family === 4 ? ['10.0.0.7', '10.0.0.1', '10.7.0.1', '10.0.0.255', '10.9.0.5', '10.2.3.4'] : ['fd00::7', 'fd00::1', 'fe80::9', 'fd07::1', 'fd02::9', 'fd09::5'];
    // Two IPv6 gateway routes of one prefix and metric become one multipath route in the kernel (not modelled),
    // so IPv6 gateways only go with EXCL or REPLACE.
    if (family === 4 || o.flags & (EXCL | REPLACE)) o.gateway = maybe(r, 0.25, () => pick(r, gw));
    o.priority = maybe(r, 0.3, () => pick(r, [5, 10, 1024]));
    if (family === 4) o.tos = maybe(r, 0.1, () => pick(r, [4, 8]));
    o.prefsrc = maybe(r, 0.05, () => pick(r, family === 4 ? ['10.0.0.1', '10.0.0.9'] : ['fd00::1', 'fd00::9']));
    if (r() < 0.03) o.rtmFlags = 4;
    return { label: `add ${JSON.stringify(o)}`, bytes: route(o) };
  }
  o.type = maybe(r, 0.2, () => pick(r, [1, 2, 6]));
  if (family === 4) o.scope = r() < 0.8 ? 255 : pick(r, [0, 253, 254]);
  o.oif = maybe(r, 0.2, () => pick(r, [1, 2, 3]));
  o.priority = maybe(r, 0.2, () => pick(r, [5, 10, 1024]));
  o.protocol = maybe(r, 0.1, () => pick(r, [2, 3, 4]));
  o.gateway = maybe(r, 0.1, () => pick(r, family === 4 ? ['10.0.0.7', '10.9.0.5'] : ['fd00::7', 'fe80::9']));
  if (family === 4) o.tos = maybe(r, 0.05, () => 8);
  return { label: `del ${JSON.stringify(o)}`, bytes: route(o, T.delroute) };
}

function ruleOp(r: () => number, family: 4 | 6, op: 'add' | 'del'): { label: string; bytes: Uint8Array } {
  const o: RuleOptions = { family };
  o.priority = maybe(r, 0.8, () => pick(r, [100, 1000, 32764, 32764, 32765, 32766]));
  o.table = pick(r, [100, 100, 101, 300, 254, 0]);
  o.action = op === 'add' ? pick(r, [1, 1, 1, 1, 6, 7, 3]) : maybe(r, 0.3, () => pick(r, [1, 6]));
  if (r() < 0.6) {
    o.mark = pick(r, [0x111, 0x222, 0]);
    o.mask = maybe(r, 0.8, () => pick(r, [0xfff, 0xffffffff]));
  }
  if (r() < 0.15) {
    o.src = family === 4 ? '10.0.0.0' : 'fd00::';
    o.srcLen = pick(r, [8, 24]);
  }
  if (r() < 0.15) {
    o.dst = family === 4 ? '10.9.0.0' : 'fd09::';
    o.dstLen = pick(r, [16, 24]);
  }
  o.iif = maybe(r, 0.1, () => pick(r, ['lo', 'd0', 'nope']));
  o.oif = maybe(r, 0.05, () => pick(r, ['d0', 'nope']));
  o.protocol = maybe(r, 0.1, () => pick(r, [2, 4]));
  if (op === 'add') o.flags = r() < 0.7 ? REQ | ACK | CREATE | EXCL : REQ | ACK | CREATE;
  return { label: `${op} rule ${JSON.stringify(o)}`, bytes: rule(o, op === 'add' ? T.newrule : T.delrule) };
}

/** operations returns n random requests; the same list goes to both sides. */
function operations(seed: number, n: number): { label: string; bytes: Uint8Array }[] {
  const r = rng(seed);
  const out: { label: string; bytes: Uint8Array }[] = [];
  for (let i = 0; i < n; i++) {
    const family = r() < 0.5 ? 4 : 6;
    const roll = r();
    if (roll < 0.45) out.push(routeOp(r, family, 'add'));
    else if (roll < 0.7) out.push(routeOp(r, family, 'del'));
    else if (roll < 0.83) out.push(ruleOp(r, family, 'add'));
    else if (roll < 0.93) out.push(ruleOp(r, family, 'del'));
    else out.push({ label: 'dump', bytes: dump(pick(r, [T.getroute, T.getrule]), pick(r, [0, 2, 10])) });
  }
  out.push({ label: 'final routes', bytes: dump(T.getroute) }, { label: 'final rules', bytes: dump(T.getrule) });
  return out;
}

// Six seeds of 1500 requests by default; PODNET_DIFF_SEEDS=1-40 and PODNET_DIFF_OPS=3000 hunt further.
const SEEDS = ((r) => (r ? Array.from({ length: r[2]! - r[1]! + 1 }, (_, i) => r[1]! + i) : [1, 2, 3, 4, 5, 6]))(
  /^(\d+)-(\d+)$/.exec(process.env.PODNET_DIFF_SEEDS ?? '')?.map(Number),
);

describePrivileged(
  'FakeRtnetlink against the live kernel: random route and rule changes',
  () => {
    it.each(SEEDS)('answers random requests like the kernel (seed %i)', (seed) => {
      const ops = operations(seed, Number(process.env.PODNET_DIFF_OPS ?? 1500));
      const ns = new TestNetns('rd');
      try {
        const fake = setUp(ns, WORLD);
        const seen = new Set<number>();
        const mismatches = diff(ns, fake, ops, false, seen);
        // PODNET_DIFF_DEBUG=<regexp> lists the requests before the first mismatch whose label matches it.
        if (process.env.PODNET_DIFF_DEBUG && mismatches.length > 0) {
          const first = Number(/^#(\d+)/.exec(mismatches[0]!)![1]);
          const re = new RegExp(process.env.PODNET_DIFF_DEBUG);
          console.log(ops.slice(0, first + 1).map((o, k) => `${k} ${o.label}`).filter((l) => re.test(l)).join('\n'));
        }
        expect(mismatches.slice(0, 3)).toEqual([]);
        // The run must have gone past the happy path: many routes and rules, and many kinds of errors.
        expect([...seen].filter((c) => c < 0).length).toBeGreaterThanOrEqual(8);
        const state = fake.dump();
        expect(state.routes.length).toBeGreaterThan(20);
        expect(state.rules.length).toBeGreaterThan(5);
      } finally {
        ns.delete();
      }
    });
  },
  missingBinary('python3'),
);
