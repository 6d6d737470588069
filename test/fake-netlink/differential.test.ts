// Differential test: the same random request bytes go to the real kernel (in a throwaway namespace, through a small
// python bridge) and to FakeIpsetKernel; every reply must be identical after masking, and so must the final dump.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { expect, it } from 'vitest';

import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { hex } from './helpers/fixtures.js';
import { codes } from './helpers/replies.js';
import {
  ACK,
  CMD,
  CREATE,
  DUMP,
  EXCL,
  PROTO,
  REQ,
  type Bytes,
  type EntryOptions,
  adt,
  batch,
  be16,
  create,
  entry,
  list,
  msg,
  setname,
  simple,
  str,
  u8,
} from './helpers/requests.js';
import { mulberry32 as rng } from '../helpers/random.js';
const BRIDGE = fileURLToPath(new URL('./helpers/kernel-bridge.py', import.meta.url));


interface Kind {
  type: string;
  family: number;
  entry: (r: () => number) => [string, EntryOptions];
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

const KINDS: Kind[] = [
  {
    type: 'hash:ip',
    family: 2,
    entry: (r) => [`10.0.0.${1 + Math.floor(r() * 24)}`, r() < 0.1 ? { ipTo: `10.0.0.${Math.floor(r() * 26)}` } : {}],
  },
  { type: 'hash:ip', family: 10, entry: (r) => [`fd00::${(1 + Math.floor(r() * 16)).toString(16)}`, {}] },
  {
    type: 'hash:net',
    family: 2,
    entry: (r) => {
      const net = `10.${Math.floor(r() * 3)}.${Math.floor(r() * 4)}`;
      // Ranges stay inside one /24: a set that grows past a few hundred entries makes the kernel resize its
      // table, which the fake does not model.
      const o: EntryOptions = r() < 0.1 ? { ipTo: `${net}.${Math.floor(r() * 40)}` } : { cidr: pick(r, [24, 28, 30, 32]), nomatch: r() < 0.15 };
      return [`${net}.${Math.floor(r() * 3)}`, o];
    },
  },
  {
    type: 'hash:ip,port',
    family: 2,
    entry: (r) => [
      `192.168.0.${1 + Math.floor(r() * 6)}`,
      { port: pick(r, [0, 22, 80, 443]), proto: pick(r, [6, 17, 47, 1, 0]), ...(r() < 0.1 ? { portTo: pick(r, [20, 25, 81]) } : {}) },
    ],
  },
];

const NAMES = ['s0', 's1', 's2', 's3', 'renamed'];

/** operations returns n random requests over a few sets; the same list goes to both backends. */
function operations(seed: number, n: number): { label: string; bytes: Bytes }[] {
  const r = rng(seed);
  const kindOf = new Map<string, Kind>();
  const out: { label: string; bytes: Bytes }[] = [];
  const anyKind = () => pick(r, KINDS);
  for (let i = 0; i < n; i++) {
    const name = pick(r, NAMES);
    const kind = kindOf.get(name) ?? anyKind();
    const excl = r() < 0.7 ? EXCL : 0;
    const ack = r() < 0.9 ? ACK : 0;
    const ext = (o: EntryOptions): EntryOptions => ({
      ...o,
      ...(r() < 0.3 ? { comment: `c${Math.floor(r() * 3)}` } : {}),
      ...(r() < 0.2 ? { bytes: BigInt(Math.floor(r() * 1000)) } : {}),
      ...(r() < 0.1 ? { timeout: 1000 + Math.floor(r() * 100) } : {}),
      ...(r() < 0.05 ? { skbmark: BigInt(Math.floor(r() * 3)) << 32n, skbprio: Math.floor(r() * 2), skbqueue: Math.floor(r() * 2) } : {}),
    });
    const roll = r();
    let bytes: Bytes;
    let label: string;
    if (roll < 0.12) {
      const k = anyKind();
      kindOf.set(name, k);
      const small = r() < 0.2;
      // forceadd on a full set evicts an entry of the new key's hash bucket, if it has one: that depends on the
      // kernel's random hash seed, so only sets that never fill up get the flag here.
      const forceadd = !small && r() < 0.3 ? 0x20 : 0;
      bytes = create(name, k.type, k.family, {
        cadtFlags: (r() < 0.5 ? 0x10 : 0) | (r() < 0.3 ? 0x08 : 0) | (r() < 0.1 ? 0x40 : 0) | forceadd,
        ...(small ? { maxelem: 4 } : {}),
        ...(r() < 0.2 ? { timeout: 600 } : {}),
        // Above 1024 buckets the kernel splits maxelem over lock regions and lets a set overflow it depending on
        // the hash of each key; the fake's limit is exact, so the generator stays at one region.
        ...(r() < 0.3 ? { hashsize: pick(r, [1, 64, 100, 1024]) } : {}),
      }, REQ | ack | CREATE | excl);
      label = `create ${name} ${k.type}/${k.family}`;
    } else if (roll < 0.55) {
      const [ip, o] = kind.entry(r);
      bytes = adt(CMD.add, name, ip, ext(o), REQ | ack | excl);
      label = `add ${name} ${ip} ${JSON.stringify(o)}`;
    } else if (roll < 0.68) {
      const [ip, o] = kind.entry(r);
      bytes = adt(CMD.del, name, ip, o, REQ | ack | excl);
      label = `del ${name} ${ip}`;
    } else if (roll < 0.78) {
      const [ip, o] = kind.entry(r);
      bytes = adt(CMD.test, name, ip, o, REQ | ack);
      label = `test ${name} ${ip}`;
    } else if (roll < 0.86) {
      const entries: Bytes[] = [];
      const count = 1 + Math.floor(r() * 6);
      for (let k = 0; k < count; k++) {
        const [ip, o] = kind.entry(r);
        entries.push(entry(ip, ext({ ...o, lineno: r() < 0.9 ? k + 1 : 0 })));
      }
      const cmd = r() < 0.75 ? CMD.add : CMD.del;
      bytes = batch(cmd, name, entries, REQ | ack | excl);
      label = `batch ${cmd === CMD.add ? 'add' : 'del'} ${name} x${count}`;
    } else if (roll < 0.89) {
      bytes = simple(CMD.flush, [setname(name)], REQ | ack);
      label = `flush ${name}`;
    } else if (roll < 0.92) {
      bytes = simple(CMD.destroy, [setname(name)], REQ | ack | excl);
      label = `destroy ${name}`;
      kindOf.delete(name);
    } else if (roll < 0.95) {
      const to = pick(r, NAMES);
      bytes = simple(CMD.rename, [setname(name), str(3, to)], REQ | ack);
      label = `rename ${name} ${to}`;
      // Which name holds which kind is only a hint for the generator; both backends get the same bytes anyway.
      if (!kindOf.has(to)) kindOf.set(to, kind);
    } else if (roll < 0.97) {
      const other = pick(r, NAMES);
      bytes = simple(CMD.swap, [setname(name), str(3, other)], REQ | ack);
      label = `swap ${name} ${other}`;
    } else if (roll < 0.985) {
      const which = Math.floor(r() * 6);
      const [ip, o] = kind.entry(r);
      bytes = [
        simple(CMD.header, [setname(name)]),
        simple(CMD.getByName, [setname(name)]),
        simple(CMD.getByIndex, [be16(11, Math.floor(r() * 6))]),
        simple(CMD.type, [str(3, kind.type), u8(5, kind.family)]),
        msg(CMD.save, REQ | ACK | DUMP, [PROTO, setname(name)]),
        // Several messages in one sendmsg, one of them without NLM_F_REQUEST.
        Buffer.concat([adt(CMD.add, name, ip, o), msg(CMD.del, ACK, [PROTO, setname(name), entry(ip, o)]), adt(CMD.test, name, ip, o, REQ | ACK)]),
      ][which]!;
      label = ['header', 'get by name', 'get by index', 'type', 'save', 'multi'][which]!;
    } else {
      bytes = r() < 0.5 ? list(name) : list();
      label = 'list';
    }
    out.push({ label, bytes });
  }
  return out;
}

function kernelReplies(ns: TestNetns, requests: Bytes[]): Uint8Array[][] {
  const input = requests.map((b) => Buffer.from(b).toString('hex')).join('\n') + '\n';
  const out = execFileSync('ip', ['netns', 'exec', ns.name, 'python3', BRIDGE], { input, encoding: 'utf8', maxBuffer: 1 << 28 });
  return out
    .split('\n')
    .slice(0, requests.length)
    .map((line) => (line.trim() === '' ? [] : line.trim().split(' ').map((h) => Buffer.from(h, 'hex'))));
}

describePrivileged(
  'FakeIpsetKernel against the live kernel',
  () => {
    it.each([1, 2, 3, 4, 5])('answers 2500 random operations like the kernel (seed %i)', (seed) => {
      const ops = operations(seed, 2500);
      ops.unshift({ label: 'destroy all', bytes: simple(CMD.destroy, []) });
      ops.push({ label: 'final list', bytes: list() });
      const ns = new TestNetns('fk');
      try {
        const fake = new FakeIpsetKernel();
        const got = ops.map((op) => JSON.stringify(hex(fake.exchange(op.bytes), { hashsize: true })));
        const compare = (kernel: Uint8Array[][]) =>
          ops.flatMap((op, i) => {
            const want = hex(kernel[i] ?? [], { hashsize: true });
            return got[i] === JSON.stringify(want) ? [] : [`#${i} ${op.label}\n  kernel ${want.join(' ')}\n  fake   ${JSON.parse(got[i]!).join(' ')}`];
          });
        // The kernel seeds each set's hash at random, and a rare answer depends on where a key lands (seen once: an
        // add to a full hash:ip set accepted, where every other run of the same bytes refused it): the fake, which
        // has no seed, answers as the kernel does for most seeds. A run that differs is run again, from the same
        // first request (destroy all); the fake must match one of four runs whole. A fault of the fake's differs in
        // every run.
        const requests = ops.map((o) => o.bytes);
        let kernel: Uint8Array[][] = [];
        let mismatches: string[] = [];
        for (let run = 0; run < 4; run++) {
          kernel = kernelReplies(ns, requests);
          mismatches = compare(kernel);
          if (mismatches.length === 0) break;
        }
        if (process.env.PODNET_DIFF_DEBUG && mismatches.length > 0) {
          const first = Number(/^#(\d+)/.exec(mismatches[Number(process.env.PODNET_DIFF_DEBUG) - 1] ?? mismatches[0]!)![1]);
          console.log(ops.slice(Math.max(0, first - 400), first + 1).map((o, k) => `${Math.max(0, first - 400) + k} ${o.label}`).join('\n'));
        }
        expect(mismatches.slice(0, 5)).toEqual([]);
        // The run must have exercised more than the happy path: successes, dumps and many kinds of errors.
        const seen = new Set(kernel.flatMap((d) => codes(d)));
        if (process.env.PODNET_DIFF_DEBUG) console.log([...seen].sort((a, b) => a - b).join(' '));
        expect(seen.size).toBeGreaterThanOrEqual(10);
        expect(fake.dump().sets.length).toBeGreaterThan(0);
      } finally {
        ns.delete();
      }
    });
  },
  missingBinary('python3'),
);
