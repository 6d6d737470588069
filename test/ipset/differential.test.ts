// Random operation sequences replayed on the real kernel and on FakeIpsetKernel:
// every operation must have the same outcome on both, and the final dumps
// must match. This is what makes the fake worth trusting.
import { expect, it } from 'vitest';

import { Ipset, type IpsetEntry, type IpsetListing } from '../../lib/index.js';
import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { mulberry32 as rng } from '../helpers/random.js';

type Kind = { type: 'hash:ip' | 'hash:net' | 'hash:ip,port'; family: 'inet' | 'inet6'; comment: boolean };
const KINDS: Kind[] = [
  { type: 'hash:ip', family: 'inet', comment: true },
  { type: 'hash:ip', family: 'inet', comment: false },
  { type: 'hash:ip', family: 'inet6', comment: true },
  { type: 'hash:net', family: 'inet', comment: false },
  { type: 'hash:ip,port', family: 'inet', comment: true },
];
const NAMES = ['s0', 's1', 's2', 's3'];

interface Op {
  label: string;
  run(ipset: Ipset): Promise<unknown>;
}

function makeOps(seed: number, count: number): Op[] {
  const r = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)]!;
  const kindOf = new Map<string, Kind>();
  // Entries are drawn for some kind; a kind mismatch is a legitimate (typed) failure too.
  const entry = (kind: Kind | undefined): IpsetEntry => {
    const k = kind ?? pick(KINDS);
    const host = Math.floor(r() * 12);
    const e: IpsetEntry = { ip: k.family === 'inet6' ? `fd00::${host}` : `10.0.0.${host}` };
    if (k.type === 'hash:net') e.cidr = pick([8, 16, 24, 32]);
    if (k.type === 'hash:ip,port') {
      e.port = pick([53, 80, 443]);
      e.proto = pick(['tcp', 'udp'] as const);
    }
    if (k.comment && r() < 0.7) e.comment = `uid-${Math.floor(r() * 5)}`;
    return e;
  };
  const ops: Op[] = [];
  for (let i = 0; i < count; i++) {
    const name = pick(NAMES);
    const kind = kindOf.get(name);
    const roll = r();
    if (roll < 0.1) {
      const k = pick(KINDS);
      const exist = r() < 0.3;
      ops.push({ label: `create ${name} ${k.type} ${k.family}${exist ? ' exist' : ''}`, run: (s) => s.create(name, k, { exist }) });
      if (!kind) kindOf.set(name, k);
    } else if (roll < 0.14) {
      ops.push({ label: `destroy ${name}`, run: (s) => s.destroy(name) });
      kindOf.delete(name);
    } else if (roll < 0.17) {
      ops.push({ label: `flush ${name}`, run: (s) => s.flush(name) });
    } else if (roll < 0.2) {
      const to = pick(NAMES);
      ops.push({ label: `rename ${name} ${to}`, run: (s) => s.rename(name, to) });
      if (kind && !kindOf.has(to)) {
        kindOf.set(to, kind);
        kindOf.delete(name);
      }
    } else if (roll < 0.23) {
      const other = pick(NAMES);
      ops.push({ label: `swap ${name} ${other}`, run: (s) => s.swap(name, other) });
    } else if (roll < 0.55) {
      const e = entry(r() < 0.9 ? kind : undefined);
      const replace = r() < 0.25;
      ops.push({ label: `add ${name} ${JSON.stringify(e)}${replace ? ' replace' : ''}`, run: (s) => s.add(name, e, { replace }) });
    } else if (roll < 0.7) {
      const e = entry(kind);
      const ignoreMissing = r() < 0.3;
      ops.push({ label: `del ${name} ${JSON.stringify(e)}${ignoreMissing ? ' ignoreMissing' : ''}`, run: (s) => s.del(name, e, { ignoreMissing }) });
    } else if (roll < 0.8) {
      const e = entry(kind);
      ops.push({ label: `test ${name} ${JSON.stringify(e)}`, run: (s) => s.test(name, e) });
    } else if (roll < 0.88) {
      const batch = Array.from({ length: 1 + Math.floor(r() * 8) }, () => entry(kind));
      const replace = r() < 0.2;
      ops.push({
        label: `addMany ${name} ${JSON.stringify(batch)}`,
        run: async (s) => summarize(await s.addMany(name, batch, { replace })),
      });
    } else if (roll < 0.92) {
      const batch = Array.from({ length: 1 + Math.floor(r() * 6) }, () => entry(kind));
      ops.push({ label: `delMany ${name} ${JSON.stringify(batch)}`, run: async (s) => summarize(await s.delMany(name, batch)) });
    } else if (roll < 0.97) {
      ops.push({ label: `list ${name}`, run: async (s) => normalize(await s.list(name)) });
    } else {
      ops.push({ label: 'listNames', run: async (s) => (await s.listNames()).sort() });
    }
  }
  return ops;
}

function summarize(result: { applied: number; failed: { index: number; error: Error }[] }) {
  return { applied: result.applied, failed: result.failed.map((f) => [f.index, (f.error as { code?: string }).code]) };
}

function normalize(l: IpsetListing) {
  // Hash order, memory size, bucket growth and references are the kernel's business.
  const entries = l.entries.map((e) => JSON.stringify(e)).sort();
  return { name: l.name, type: l.type, family: l.family, revision: l.revision, maxelem: l.maxelem, comment: l.comment, counters: l.counters, elements: l.elements, entries };
}

async function outcome(op: Op, ipset: Ipset): Promise<unknown> {
  try {
    return { ok: await op.run(ipset) ?? null };
  } catch (err) {
    const e = err as { code?: string; name?: string };
    return { error: e.code ?? String(err), class: e.name };
  }
}

async function finalState(ipset: Ipset) {
  const names = (await ipset.listNames()).sort();
  return Promise.all(names.map(async (n) => normalize(await ipset.list(n))));
}

describePrivileged(
  'ipset differential: kernel vs FakeIpsetKernel',
  () => {
    it.each([1, 2, 3, 4])('replays 600 random operations identically (seed %i)', async (seed) => {
      const ns = new TestNetns('diff');
      try {
        using kernel = await Ipset.open({ netns: ns.path });
        using fake = await Ipset.open({ netlink: new FakeIpsetKernel() });
        const ops = makeOps(seed, 600);
        const codes = new Map<string, number>();
        for (const [i, op] of ops.entries()) {
          const [k, f] = [await outcome(op, kernel), await outcome(op, fake)];
          expect({ step: i, op: op.label, outcome: f }).toEqual({ step: i, op: op.label, outcome: k });
          const code = (k as { error?: string }).error ?? 'ok';
          codes.set(code, (codes.get(code) ?? 0) + 1);
        }
        // The sequence must exercise failures as well as successes, or it proves little.
        expect(codes.get('ok')).toBeGreaterThan(200);
        for (const code of ['IPSET_ERR_EXIST', 'ENOENT', 'EEXIST', 'ERR_INVALID_ARG_VALUE']) expect(codes.get(code), code).toBeGreaterThan(0);
        expect(await finalState(fake)).toEqual(await finalState(kernel));
      } finally {
        ns.delete();
      }
    });
  },
  missingBinary('ipset'),
);
