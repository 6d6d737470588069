// Random operation sequences through Nftables, replayed on the kernel (in a throwaway namespace) and on
// FakeNftables: after every step the outcome (ok, or the error's code, errno, op index and element) and the whole
// listing (tables, chains, rules, sets, elements, with handles) must be the same on both. Seeded, so a failure replays.
import { expect, it } from 'vitest';

import { Nftables, nftExpr as x, type NftChainSpec, type NftElementSpec, type NftExpr, type NftSetFlag, type NftTableRef, type NftTransaction } from '../../lib/index.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { mulberry32 as rng } from '../helpers/random.js';

const TABLES: NftTableRef[] = [
  { family: 'inet', name: 'a' },
  { family: 'inet', name: 'b' },
  { family: 'ip', name: 'a' },
];
const CHAINS = ['c0', 'c1', 'c2'];
const SETS = ['s0', 's1'];
const BASES: Omit<NftChainSpec, 'family' | 'table' | 'name'>[] = [
  { type: 'filter', hook: 'prerouting', priority: -150 },
  { type: 'nat', hook: 'postrouting', priority: 100 },
  { type: 'route', hook: 'output', priority: -150, policy: 'accept' },
  { type: 'filter', hook: 'input', priority: 0, policy: 'drop' },
  { type: 'filter', hook: 'input', priority: 10 },
  { type: 'nat', hook: 'prerouting', priority: -300 },
];
const FLAGS: NftSetFlag[][] = [[], [], ['timeout'], ['constant'], ['constant', 'timeout']];
/** Rule bodies: matches and verdicts that the kernel takes in any chain (NAT and jumps have a test of their own below). */
const BODIES: (() => NftExpr[][])[] = [
  () => [x.counter(), x.accept()],
  () => [x.l4proto('tcp'), x.addr('ip saddr', '169.254.7.127'), x.counter(), x.accept()],
  () => [x.addr('ip daddr', '127.0.0.1', { not: true }), x.port('tcp dport', 15008, { not: true }), x.mark(0x539, 0xfff, { not: true }), x.drop()],
  () => [x.addrInSet('ip daddr', 's0'), x.counter(), x.return()],
  () => [x.addrInSet('ip6 saddr', 's1'), x.drop()],
  () => [x.ctMark(0x111, 0xfff), x.counter(), x.setMarkFromCtMark()],
  () => [x.oifname('lo'), x.accept()],
];

interface Step {
  label: string;
  run(nft: Nftables): Promise<unknown>;
}

/** A transaction-building op of a random step. */
interface Op {
  label: string;
  apply: (tx: NftTransaction) => void;
}

/** batchStep runs ops in one transaction, labelled by theirs. */
function batchStep(ops: Op[]): Step {
  return {
    label: ops.map((o) => o.label).join('; '),
    run: (nft) => {
      const tx = nft.transaction();
      for (const o of ops) o.apply(tx);
      return nft.run(tx);
    },
  };
}

function makeSteps(seed: number, count: number): Step[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number) => r() < p;
  const v6 = new Map<string, boolean>();
  const address = (set: string): string => {
    const six = chance(0.05) ? !v6.get(set) : (v6.get(set) ?? false);
    const host = 1 + Math.floor(r() * 8);
    return six ? `fd00::${host}` : `10.0.0.${host}`;
  };
  const elements = (set: string, comments: boolean): NftElementSpec[] => {
    const seen = new Set<string>();
    const out: NftElementSpec[] = [];
    const n = 1 + Math.floor(r() * 3);
    for (let i = 0; i < n; i++) {
      const a = address(set);
      if (seen.has(a)) continue;
      seen.add(a);
      out.push(comments && chance(0.7) ? { address: a, comment: `uid-${Math.floor(r() * 4)}` } : { address: a });
    }
    return out;
  };
  // Every random choice is drawn here, once: the same closures then build the same transaction for both backends.
  const op = (): Op => {
    const t = pick(TABLES);
    const at = `${t.family} ${t.name}`;
    const roll = r();
    if (chance(0.3)) return ruleOp(t, at);
    if (roll < 0.12) {
      const exclusive = chance(0.2);
      const spec = chance(0.3) ? { ...t, comment: 'podnet' } : t;
      return { label: `addTable ${at}${exclusive ? ' exclusive' : ''}`, apply: (tx) => tx.addTable(spec, { exclusive }) };
    }
    if (roll < 0.14) return { label: `deleteTable ${at}`, apply: (tx) => tx.deleteTable(t) };
    if (roll < 0.19) return { label: `flushTable ${at}`, apply: (tx) => tx.flushTable(t) };
    if (roll < 0.33) {
      const name = pick(CHAINS);
      const base = chance(0.5) ? pick(BASES) : {};
      const exclusive = chance(0.15);
      const spec: NftChainSpec = { family: t.family, table: t.name, name, ...base, ...(chance(0.2) ? { comment: 'chain' } : {}) };
      return { label: `addChain ${at} ${name} ${JSON.stringify(base)}${exclusive ? ' exclusive' : ''}`, apply: (tx) => tx.addChain(spec, { exclusive }) };
    }
    if (roll < 0.38) {
      const name = pick(CHAINS);
      return { label: `deleteChain ${at} ${name}`, apply: (tx) => tx.deleteChain({ family: t.family, table: t.name, name }) };
    }
    if (roll < 0.5) {
      const name = pick(SETS);
      const six = chance(0.3);
      const flags = pick(FLAGS);
      const exclusive = chance(0.15);
      if (!v6.has(name)) v6.set(name, six);
      const spec = { family: t.family, table: t.name, name, type: six ? 'ipv6_addr' : 'ipv4_addr', flags, ...(chance(0.3) ? { comment: 'probes' } : {}) } as const;
      return { label: `addSet ${at} ${name} ${six ? 'v6' : 'v4'} [${flags.join(',')}]${exclusive ? ' exclusive' : ''}`, apply: (tx) => tx.addSet(spec, { exclusive }) };
    }
    if (roll < 0.55) {
      const name = pick(SETS);
      return { label: `deleteSet ${at} ${name}`, apply: (tx) => tx.deleteSet({ family: t.family, table: t.name, name }) };
    }
    if (roll < 0.85) {
      const name = pick(SETS);
      const els = elements(name, true);
      const replace = chance(0.25);
      return { label: `addElement ${at} ${name} ${JSON.stringify(els)}${replace ? ' replace' : ''}`, apply: (tx) => tx.addElement(t, name, els, { replace }) };
    }
    const name = pick(SETS);
    const els = elements(name, false);
    return { label: `deleteElement ${at} ${name} ${JSON.stringify(els)}`, apply: (tx) => tx.deleteElement(t, name, els) };
  };
  // Handles are drawn from the small numbers both backends hand out; jumps go only to a later chain (no loops).
  const handle = () => 1 + Math.floor(r() * 24);
  const ruleOp = (t: NftTableRef, at: string): Op => {
    const ci = Math.floor(r() * CHAINS.length);
    const chain = CHAINS[ci]!;
    const where = { family: t.family, table: t.name, chain };
    const roll = r();
    if (roll < 0.55) {
      const later = CHAINS.slice(ci + 1);
      const jump = later.length > 0 && chance(0.25) ? pick(later) : undefined;
      const exprs = jump ? [chance(0.5) ? x.jump(jump) : x.goto(jump)] : pick(BODIES)();
      const comment = chance(0.3) ? `rule-${Math.floor(r() * 3)}` : undefined;
      const insert = chance(0.3);
      const at2 = chance(0.15) ? handle() : undefined;
      const spec = { ...where, exprs, ...(comment ? { comment } : {}) };
      const label = `${insert ? 'insertRule' : 'addRule'} ${at} ${chain}${jump ? ` -> ${jump}` : ''}${at2 ? ` at ${at2}` : ''}`;
      return {
        label,
        apply: (tx) => (insert ? tx.insertRule(spec, at2 ? { before: at2 } : {}) : tx.addRule(spec, at2 ? { after: at2 } : {})),
      };
    }
    if (roll < 0.85) {
      const h = handle();
      return { label: `deleteRule ${at} ${chain} ${h}`, apply: (tx) => tx.deleteRule({ ...where, handle: h }) };
    }
    return { label: `flushChain ${at} ${chain}`, apply: (tx) => tx.flushChain({ family: t.family, table: t.name, name: chain }) };
  };
  const steps: Step[] = [];
  for (let i = 0; i < count; i++) {
    // Every 50 steps the world is set up again (tables, regular chains, a set each), so that rules find chains.
    if (i % 50 === 0) {
      const t = pick(TABLES);
      steps.push({
        label: `setup ${t.family} ${t.name}`,
        run: (nft) => {
          const tx = nft.transaction().addTable(t);
          for (const name of CHAINS) tx.addChain({ family: t.family, table: t.name, name });
          return nft.run(tx.addSet({ family: t.family, table: t.name, name: 's0', type: 'ipv4_addr' }));
        },
      });
      continue;
    }
    if (chance(0.08)) {
      const t = pick(TABLES);
      const set = pick(SETS);
      const a = address(set);
      steps.push({ label: `testElement ${t.family} ${t.name} ${set} ${a}`, run: (nft) => nft.testElement(t, set, a) });
      continue;
    }
    // Mostly single ops, so that enough of them apply; longer batches for the all-or-nothing paths.
    steps.push(batchStep(Array.from({ length: chance(0.5) ? 1 : 2 + Math.floor(r() * 3) }, op)));
  }
  return steps;
}

interface Listing {
  tables: unknown[];
}

async function listing(nft: Nftables): Promise<Listing> {
  const tables = await nft.tables();
  const out: unknown[] = [];
  for (const t of tables) {
    if (typeof t.family !== 'string') continue;
    const ref = { family: t.family, name: t.name };
    const sets = await nft.sets(ref);
    const withElements = [];
    for (const s of sets) {
      const els = (await nft.elements(ref, s.name)).sort((a, b) => a.address.localeCompare(b.address));
      withElements.push({ ...s, elements: els });
    }
    const rules = await nft.rules(ref);
    out.push({ ...t, chains: await nft.chains(ref), sets: withElements, rules });
  }
  return { tables: out };
}

async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return { ok: await p };
  } catch (err) {
    const e = err as { code?: unknown; errno?: unknown; index?: unknown; element?: unknown };
    return { code: e.code, errno: e.errno, index: e.index, element: e.element };
  }
}

/** The chains of the NAT test: a base chain at each hook NAT cares about, filter and nat, and three regular ones. */
const NAT_BASES: NftChainSpecOf[] = [
  { name: 'fpre', type: 'filter', hook: 'prerouting', priority: 0 },
  { name: 'fpost', type: 'filter', hook: 'postrouting', priority: 0 },
  { name: 'npre', type: 'nat', hook: 'prerouting', priority: -100 },
  { name: 'npost', type: 'nat', hook: 'postrouting', priority: 100 },
  { name: 'nout', type: 'nat', hook: 'output', priority: -100 },
  { name: 'nin', type: 'nat', hook: 'input', priority: 100 },
];
type NftChainSpecOf = Omit<NftChainSpec, 'family' | 'table'>;
const NAT_REGULAR = ['r0', 'r1', 'r2'];
const NAT_CHAINS = [...NAT_BASES.map((b) => b.name), ...NAT_REGULAR];
const NAT_TABLES: NftTableRef[] = [
  { family: 'inet', name: 'n' },
  { family: 'ip', name: 'n' },
];
const dnat = (address: string): NftExpr[] => [
  { type: 'immediate', dreg: 1, data: Uint8Array.from(address.split('.').map(Number)) },
  { type: 'nat', nat: 'dnat', family: 'ip', addrMin: 1 },
];
/** Statements the kernel takes in some chains only (and snat ip6 in an ip table never), and one it takes anywhere. */
const NAT_BODIES: [string, () => NftExpr[][]][] = [
  ['redirect', () => [x.l4proto('tcp'), x.counter(), x.redirect(15001)]],
  ['snat', () => [x.l4proto('tcp'), x.snat('169.254.7.127')]],
  ['snat ip6', () => [x.snat('fd00::1')]],
  ['dnat', () => [dnat('10.0.0.1')]],
  ['masquerade', () => [x.masquerade()]],
  ['setMarkFromCtMark', () => [x.ctMark(0x111, 0xfff), x.setMarkFromCtMark()]],
];
/**
 * Jump rules each chain may be given in a run: the kernel validates by walking every path from every base chain
 * down to 16 jumps, so more jumps per chain with a loop among them would cost it seconds per batch.
 */
const JUMPS_PER_CHAIN = 2;

function makeNatSteps(seed: number, count: number): Step[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number) => r() < p;
  const jumps = new Map<string, number>();
  const op = (): Op => {
    const t = pick(NAT_TABLES);
    const at = `${t.family} ${t.name}`;
    const chain = pick(NAT_CHAINS);
    const where = { family: t.family, table: t.name, chain };
    const roll = r();
    const used = jumps.get(`${at} ${chain}`) ?? 0;
    if (roll < 0.35 && used < JUMPS_PER_CHAIN) {
      jumps.set(`${at} ${chain}`, used + 1);
      const to = pick(NAT_REGULAR);
      const go = chance(0.3);
      return { label: `addRule ${at} ${chain} ${go ? 'goto' : 'jump'} ${to}`, apply: (tx) => tx.addRule({ ...where, exprs: go ? x.goto(to) : x.jump(to) }) };
    }
    if (roll < 0.8) {
      const [name, body] = pick(NAT_BODIES);
      const exprs = body();
      return { label: `addRule ${at} ${chain} ${name}`, apply: (tx) => tx.addRule({ ...where, exprs }) };
    }
    if (roll < 0.95) {
      const h = 10 + Math.floor(r() * 30);
      return { label: `deleteRule ${at} ${chain} ${h}`, apply: (tx) => tx.deleteRule({ ...where, handle: h }) };
    }
    return { label: `flushChain ${at} ${chain}`, apply: (tx) => tx.flushChain({ family: t.family, table: t.name, name: chain }) };
  };
  const steps: Step[] = [
    {
      label: 'setup',
      run: (nft) => {
        const tx = nft.transaction();
        for (const t of NAT_TABLES) {
          tx.addTable(t);
          for (const b of NAT_BASES) tx.addChain({ family: t.family, table: t.name, ...b });
          for (const name of NAT_REGULAR) tx.addChain({ family: t.family, table: t.name, name });
        }
        return nft.run(tx);
      },
    },
  ];
  for (let i = 1; i < count; i++) {
    steps.push(batchStep(Array.from({ length: chance(0.6) ? 1 : 2 + Math.floor(r() * 2) }, op)));
  }
  return steps;
}

/** Every family with a table named f, the hook names and chain types, and the ct statements of Nftables. */
const ALL_FAMILIES = ['inet', 'ip', 'ip6', 'arp', 'bridge', 'netdev'] as const;
const HOOK_NAMES = ['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress'] as const;
const CHAIN_TYPES = ['filter', 'filter', 'nat', 'route'] as const;
const CT_BODIES: [string, () => NftExpr[][]][] = [
  ['ctState', () => [x.ctState(['established', 'related']), x.accept()]],
  ['ctMark', () => [x.ctMark(0x111, 0xfff), x.counter()]],
  ['setCtMark', () => [x.setCtMark(0xffff0000, 0x22)]],
  ['setCtZone', () => [x.setCtZone(7)]],
  ['counter', () => [x.counter(), x.accept()]],
  ['mark', () => [x.mark(0x539), x.drop()]],
];

/** makeFamilySteps: base chains at any hook of any type and ct statements in them, in a table of every family. */
function makeFamilySteps(seed: number, count: number): Step[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number) => r() < p;
  const op = (): Op => {
    const family = pick(ALL_FAMILIES);
    const name = pick(['b0', 'b1', 'r']);
    const roll = r();
    if (roll < 0.3) {
      const base = name === 'r' ? {} : { type: pick(CHAIN_TYPES), hook: pick(HOOK_NAMES), priority: pick([-150, 0, 100]) };
      const spec: NftChainSpec = { family, table: 'f', name, ...base };
      return { label: `addChain ${family} ${name} ${JSON.stringify(base)}`, apply: (tx) => tx.addChain(spec) };
    }
    if (roll < 0.8) {
      const [what, body] = pick(CT_BODIES);
      const exprs = body();
      return { label: `addRule ${family} ${name} ${what}`, apply: (tx) => tx.addRule({ family, table: 'f', chain: name, exprs }) };
    }
    if (roll < 0.9) return { label: `flushChain ${family} ${name}`, apply: (tx) => tx.flushChain({ family, table: 'f', name }) };
    return { label: `deleteChain ${family} ${name}`, apply: (tx) => tx.deleteChain({ family, table: 'f', name }) };
  };
  const steps: Step[] = [
    {
      label: 'setup',
      run: (nft) => {
        const tx = nft.transaction();
        for (const family of ALL_FAMILIES) tx.addTable({ family, name: 'f' }).addChain({ family, table: 'f', name: 'r' });
        return nft.run(tx);
      },
    },
  ];
  for (let i = 1; i < count; i++) steps.push(batchStep(Array.from({ length: chance(0.6) ? 1 : 2 + Math.floor(r() * 2) }, op)));
  return steps;
}

/**
 * makeSetSteps: sets resized (or made constant) and their elements changed in the batches that add and delete the
 * rules that look them up, in one table with a regular chain c.
 */
function makeSetSteps(seed: number, count: number): Step[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const chance = (p: number) => r() < p;
  const t: NftTableRef = { family: 'inet', name: 't' };
  const els = (): NftElementSpec[] => [...new Set(Array.from({ length: 1 + Math.floor(r() * 3) }, () => `10.0.0.${1 + Math.floor(r() * 6)}`))].map((address) => ({ address }));
  const op = (): Op => {
    const name = pick(['k', 'z']);
    const roll = r();
    if (roll < 0.2) {
      // k is constant and z is not, so that an add of either again is an update (a resize) more often than a clash.
      const flags: NftSetFlag[] = name === 'k' ? ['constant'] : [];
      const size = chance(0.8) ? 1 + Math.floor(r() * 4) : undefined;
      const spec = { family: t.family, table: t.name, name, type: 'ipv4_addr', flags, ...(size ? { size } : {}) } as const;
      return { label: `addSet ${name} [${flags.join(',')}] size ${size}`, apply: (tx) => tx.addSet(spec) };
    }
    if (roll < 0.5) {
      const e = els();
      return { label: `addElement ${name} ${e.map((a) => a.address).join(',')}`, apply: (tx) => tx.addElement(t, name, e) };
    }
    if (roll < 0.6) {
      const e = els();
      return { label: `deleteElement ${name} ${e.map((a) => a.address).join(',')}`, apply: (tx) => tx.deleteElement(t, name, e) };
    }
    if (roll < 0.75) {
      const exprs = [x.addrInSet('ip saddr', name), x.counter()];
      return { label: `addRule c lookup ${name}`, apply: (tx) => tx.addRule({ family: t.family, table: t.name, chain: 'c', exprs }) };
    }
    if (roll < 0.85) {
      const h = 2 + Math.floor(r() * 30);
      return { label: `deleteRule c ${h}`, apply: (tx) => tx.deleteRule({ family: t.family, table: t.name, chain: 'c', handle: h }) };
    }
    if (roll < 0.95) return { label: 'flushChain c', apply: (tx) => tx.flushChain({ family: t.family, table: t.name, name: 'c' }) };
    return { label: `deleteSet ${name}`, apply: (tx) => tx.deleteSet({ family: t.family, table: t.name, name }) };
  };
  const steps: Step[] = [];
  for (let i = 0; i < count; i++) {
    // Every 40 steps the table starts again, so that sets of both kinds and sizes come and go.
    if (i % 40 === 0) {
      steps.push({
        label: 'setup',
        run: async (nft) => {
          await nft.run(nft.transaction().addTable(t)).catch(() => undefined);
          return nft.run(nft.transaction().deleteTable(t).addTable(t).addChain({ family: t.family, table: t.name, name: 'c' }));
        },
      });
      continue;
    }
    steps.push(batchStep(Array.from({ length: chance(0.3) ? 1 : 2 + Math.floor(r() * 3) }, op)));
  }
  return steps;
}

/** replay runs the steps on the kernel and the fake, comparing the outcome and the whole listing after each. */
async function replay(seed: number, steps: Step[], tag: string): Promise<{ outcomes: unknown[]; withRules: number }> {
  using ns = new TestNetns(tag);
  const kernel = await Nftables.open({ netns: ns.path });
  const fake = await Nftables.open({ netlink: new FakeNftables() });
  try {
    const outcomes: unknown[] = [];
    let withRules = 0;
    const history: string[] = [];
    for (const [i, step] of steps.entries()) {
      const k = await outcome(step.run(kernel));
      const f = await outcome(step.run(fake));
      history.push(`#${i} ${step.label} -> ${JSON.stringify(k)}`);
      const recent = `seed ${seed}, the last steps:\n${history.slice(-(Number(process.env.NFT_DIFF_HISTORY) || 8)).join('\n')}`;
      expect({ step: i, label: step.label, outcome: f }, recent).toEqual({ step: i, label: step.label, outcome: k });
      outcomes.push(k);
      const want = await listing(kernel);
      expect({ step: i, listing: await listing(fake) }, recent).toEqual({ step: i, listing: want });
      if (want.tables.some((t) => (t as { rules: unknown[] }).rules.length > 0)) withRules++;
    }
    return { outcomes, withRules };
  } finally {
    kernel.close();
    fake.close();
  }
}

const errnoOf = (o: unknown): unknown => (o as { errno?: unknown }).errno;

describePrivileged('FakeNftables against the kernel through Nftables', () => {
  it.each([1, 2, 3, 4, 5])('answers 250 random transactions like the kernel (seed %i)', async (seed) => {
    const steps = makeSteps(seed, 250);
    const { outcomes, withRules } = await replay(seed, steps, 'nftd');
    const applied = outcomes.filter((o) => 'ok' in (o as object)).length;
    // The sequence is worth something only if both kinds of outcome happened often.
    expect(applied).toBeGreaterThan(40);
    expect(steps.length - applied).toBeGreaterThan(40);
    expect(withRules).toBeGreaterThan(40);
  });

  it.each([1, 2, 3])('answers 120 random NAT statements and jumps in random chains like the kernel (seed %i)', async (seed) => {
    const steps = makeNatSteps(seed, 120);
    const { outcomes } = await replay(seed, steps, 'nftn');
    // Taken, refused for a chain (EOPNOTSUPP) and for a walk too deep (EMLINK): all three, or the run proves little.
    expect(outcomes.filter((o) => 'ok' in (o as object)).length).toBeGreaterThan(30);
    expect(outcomes.filter((o) => errnoOf(o) === -95).length).toBeGreaterThan(10);
    expect(outcomes.filter((o) => errnoOf(o) === -31).length).toBeGreaterThan(0);
  });

  it.each([1, 2, 3])('answers 120 random base chains and ct statements over every family and hook like the kernel (seed %i)', async (seed) => {
    const { outcomes } = await replay(seed, makeFamilySteps(seed, 120), 'nftf');
    // Taken, and refused for ct without conntrack in the family (EPROTO): both, or the run proves little.
    expect(outcomes.filter((o) => 'ok' in (o as object)).length).toBeGreaterThan(20);
    expect(outcomes.filter((o) => errnoOf(o) === -71).length).toBeGreaterThan(2);
  });

  it.each([1, 2, 3, 4, 5])('answers 160 random set resizes and constant sets beside rule changes like the kernel (seed %i)', async (seed) => {
    const { outcomes } = await replay(seed, makeSetSteps(seed, 160), 'nfts');
    // Taken, a full set (ENFILE) and a constant set in use (EBUSY): all three, or the run proves little.
    expect(outcomes.filter((o) => 'ok' in (o as object)).length).toBeGreaterThan(20);
    expect(outcomes.filter((o) => errnoOf(o) === -23).length).toBeGreaterThan(0);
    expect(outcomes.filter((o) => errnoOf(o) === -16).length).toBeGreaterThan(0);
  });

  it('takes or refuses a base chain of every family, type and hook as the kernel does', async () => {
    using ns = new TestNetns('nfth');
    const kernel = await Nftables.open({ netns: ns.path });
    const fake = await Nftables.open({ netlink: new FakeNftables() });
    try {
      const families = ['ip', 'ip6', 'inet', 'arp', 'bridge', 'netdev'] as const;
      const types = ['filter', 'nat', 'route'] as const;
      const hooks = ['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress'] as const;
      const answers = async (nft: Nftables) => {
        const out: string[] = [];
        for (const family of families) {
          await nft.run(nft.transaction().addTable({ family, name: 'h' }));
          for (const type of types) {
            for (const hook of hooks) {
              const chain = { family, table: 'h', name: `${type}-${hook}`, type, hook, priority: 0 };
              out.push(`${family} ${type} ${hook}: ${await outcome(nft.run(nft.transaction().addChain(chain))).then((o) => JSON.stringify(o))}`);
            }
          }
          // What is listed can be written back: each base chain again, under another name, in a table of its own.
          await nft.run(nft.transaction().addTable({ family, name: 'back' }));
          for (const c of await nft.chains({ family, name: 'h' })) {
            out.push(`${family} listed ${c.name}: ${JSON.stringify({ type: c.type, hook: c.hook, priority: c.priority, policy: c.policy })}`);
            const again = { family, table: 'back', name: c.name, type: c.type, hook: c.hook, priority: c.priority, policy: c.policy } as NftChainSpec;
            out.push(`${family} written back ${c.name}: ${JSON.stringify(await outcome(nft.run(nft.transaction().addChain(again))))}`);
          }
        }
        return out;
      };
      const want = await answers(kernel);
      expect(await answers(fake)).toEqual(want);
      // Both kinds of answer are there: the table is worth something.
      expect(want.some((a) => a.endsWith(': {}'))).toBe(true);
      expect(want.some((a) => a.includes('EOPNOTSUPP'))).toBe(true);
      // Ingress is taken where the kernel has it (inet, netdev), and every chain listed is written back.
      expect(want).toContain('inet filter ingress: {}');
      expect(want).toContain('netdev filter ingress: {}');
      expect(want.filter((a) => a.includes('written back') && !a.endsWith(': {}'))).toEqual([]);
    } finally {
      kernel.close();
      fake.close();
    }
  });
});
