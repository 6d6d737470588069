// Seeded mutation of the arguments users hand podnet: valid inputs of each part (a real nftables ruleset, ipset
// entries with comments, an agent's pod, ZDS workloads, iptables rule arguments, argv) get one mutation each: a hole
// punched in one of their arrays, or a lone surrogate put into one of their strings (every string of these inputs
// reaches the kernel or a peer as UTF-8, where a lone surrogate becomes U+FFFD). Each mutated call must throw or
// reject with InvalidArgumentError naming the argument (a hole by its index) and change nothing in the fakes; a call
// that succeeds, or fails any other way, is a finding. Each case names its seed so it can be replayed.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Ipset, Nftables, NodeNetwork, RuleSet, inpodRules, nftInpodRules, runInNetns } from '../../lib/index.js';
import { FakeIpsetKernel, FakeNftables, FakeNode } from '../../lib/testing/index.js';
import { mulberry32 } from '../helpers/random.js';

const ROUNDS = 150;
const W = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };

type Path = (string | number)[];
type Site = { kind: 'array'; path: Path; length: number } | { kind: 'string'; path: Path; length: number };

/** sites lists every non-empty array and string inside value, by path (typed arrays are bytes, not user arrays). */
function sites(value: unknown, path: Path = [], out: Site[] = []): Site[] {
  if (typeof value === 'string') {
    if (value.length > 0) out.push({ kind: 'string', path, length: value.length });
  } else if (Array.isArray(value)) {
    if (value.length > 0) out.push({ kind: 'array', path, length: value.length });
    value.forEach((v, i) => sites(v, [...path, i], out));
  } else if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value)) {
    for (const [k, v] of Object.entries(value)) sites(v, [...path, k], out);
  }
  return out;
}

/** clone copies plain objects and arrays (keeping typed arrays as they are). */
function clone<T>(value: T): T {
  if (Array.isArray(value)) return value.map(clone) as T;
  if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clone(v)])) as T;
  }
  return value;
}

/** mutate returns a copy of value with one site mutated, and a description of what was done. */
function mutate<T>(value: T, rand: () => number): { mutated: T; what: string } {
  const all = sites(value);
  const site = all[Math.floor(rand() * all.length)]!;
  const mutated = clone(value);
  const parent = site.path.slice(0, -1).reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], mutated) as Record<string | number, unknown>;
  const key = site.path.at(-1);
  const target = (key === undefined ? mutated : parent[key]) as unknown;
  const at = Math.floor(rand() * site.length);
  if (site.kind === 'array') {
    delete (target as unknown[])[at];
    return { mutated, what: `hole at ${[...site.path, at].join('.')}` };
  }
  const surrogate = String.fromCharCode(rand() < 0.5 ? 0xd800 + Math.floor(rand() * 0x400) : 0xdc00 + Math.floor(rand() * 0x400));
  const s = target as string;
  const text = s.slice(0, at) + surrogate + s.slice(at);
  if (key === undefined) return { mutated: text as T, what: `lone surrogate in the argument` };
  parent[key] = text;
  return { mutated, what: `lone surrogate in ${site.path.join('.')}` };
}

async function refusal(call: () => unknown): Promise<unknown> {
  try {
    await call();
  } catch (err) {
    return err;
  }
  return undefined;
}

/** runs ROUNDS mutations of valid through apply; state() must read the same after each refusal. */
async function fuzz<T>(name: string, seed: number, valid: T, apply: (input: T) => unknown, state: () => unknown): Promise<void> {
  const rand = mulberry32(seed);
  const before = JSON.stringify(state());
  for (let round = 0; round < ROUNDS; round++) {
    const { mutated, what } = mutate(valid, rand);
    const err = await refusal(() => apply(mutated));
    const label = `${name}, seed ${seed}, round ${round}: ${what}`;
    expect(err, label).toBeInstanceOf(InvalidArgumentError);
    // A hole read as `undefined` by a part that checks each entry's type is ERR_INVALID_ARG_TYPE; both name it.
    expect(['ERR_INVALID_ARG_VALUE', 'ERR_INVALID_ARG_TYPE'], label).toContain((err as InvalidArgumentError).code);
    if (what.startsWith('hole')) expect((err as InvalidArgumentError).argument, label).toMatch(/\[\d+\]$/);
    expect(JSON.stringify(state()), label).toBe(before);
  }
}

describe('argument fuzzing: holes and lone surrogates are refused by name and change nothing', () => {
  it('nftables: the in-pod ruleset', async () => {
    const fake = new FakeNftables();
    const nft = await Nftables.open({ netlink: fake });
    try {
      const ruleset = nftInpodRules({ ipv6: true, virtualInterfaces: ['eth1', 'veth-x'] });
      await fuzz('nftables apply', 0x5eed1, ruleset, (r) => nft.apply(r), () => fake.dump());
    } finally {
      nft.close();
    }
  });

  it('ipset: entries with comments', async () => {
    const netlink = new FakeIpsetKernel();
    const ipset = await Ipset.open({ netlink });
    try {
      await ipset.create('probes', { type: 'hash:ip', family: 'inet', comment: true });
      const entries = Array.from({ length: 6 }, (_, i) => ({ ip: `10.0.0.${i + 1}`, comment: `pod-uid-${i}` }));
      await fuzz('ipset addMany', 0x5eed2, entries, (e) => ipset.addMany('probes', e), () => netlink.dump());
    } finally {
      ipset.close();
    }
  });

  it('agent: a pod, on both backends', async () => {
    for (const backend of ['iptables', 'nftables'] as const) {
      const fakes = new FakeNode();
      try {
        const { server } = await fakes.proxy();
        const node = new NodeNetwork({ ...(await fakes.options()), proxy: server, backend, kubeletUid: 0, ipv6: true });
        await node.start();
        fakes.netns.add('/run/netns/pod-a');
        const pod = { uid: 'uid-a', ips: ['10.244.0.5', 'fd00::5'], netns: '/run/netns/pod-a', virtualInterfaces: ['eth1'], workload: W };
        const state = () => [fakes.netlink.dump(), fakes.nftablesOf().dump(), fakes.nftablesOf('/run/netns/pod-a').dump(), fakes.iptablesOf('/run/netns/pod-a').dump(), server.workloads];
        await fuzz(`agent addPod (${backend})`, 0x5eed3, pod, (p) => node.addPod(p), state);
        await node.stop();
      } finally {
        await fakes.close();
      }
    }
  });

  it('proxy, iptables and spawn arguments', async () => {
    const fakes = new FakeNode();
    try {
      const { server } = await fakes.proxy();
      const workloads = [{ uid: 'a', workload: W }, { uid: 'b', workload: { ...W, name: 'web-1' } }];
      await fuzz('ZDS replaceWorkloads', 0x5eed4, workloads, (w) => server.replaceWorkloads(w), () => server.workloads);
    } finally {
      await fakes.close();
    }
    const args = inpodRules().rules()[0]!.args as string[];
    await fuzz('iptables rule args', 0x5eed5, [...args], (a) => new RuleSet().chain('nat', 'X').append('nat', 'X', a).check(), () => 0);
    await fuzz('runInNetns argv', 0x5eed6, ['/bin/true', '--a', 'b'], (argv) => runInNetns('/proc/self/ns/net', argv), () => 0);
  });
});
