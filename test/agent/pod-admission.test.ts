import * as diagnostics from 'node:diagnostics_channel';

import { describe, expect, it } from 'vitest';

import { NodeNetwork } from '../../lib/index.js';
import { PodAdmission } from '../../lib/agent/pod-admission.js';
import { FakeNode } from '../../lib/testing/index.js';
import type { IptablesFactory, NftablesFactory } from '../../lib/agent/backends.js';
import type { AgentStepMessage } from '../../lib/diagnostics.js';

/** A task whose settling the test controls, recording when it started. */
function gate(started: number[], id: number) {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const done = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { task: () => (started.push(id), done), open, fail };
}

/** Lets every queued promise reaction run. */
const drain = () => new Promise((resolve) => setImmediate(resolve));

describe('PodAdmission', () => {
  it('runs at most limit tasks, the others in the order they came, a failed task freeing its slot', async () => {
    const admission = new PodAdmission(2);
    const started: number[] = [];
    const gates = [0, 1, 2, 3, 4].map((id) => gate(started, id));
    const runs = gates.map((g) => admission.run(g.task));
    await drain();
    expect(started).toEqual([0, 1]);
    expect([admission.running, admission.waiting]).toEqual([2, 3]);
    gates[1]!.open();
    await drain();
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.fail(new Error('step failed'));
    await expect(runs[0]).rejects.toThrow('step failed');
    await drain();
    expect(started).toEqual([0, 1, 2, 3]);
    // A task that comes while others wait queues behind them, even when a slot is free at that moment.
    gates[2]!.open();
    const late = gate(started, 5);
    const lateRun = admission.run(late.task);
    await drain();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    for (const g of [gates[3]!, gates[4]!]) g.open();
    await drain();
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    late.open();
    await Promise.all([lateRun, ...runs.slice(1)]);
    expect([admission.running, admission.waiting]).toEqual([0, 0]);
  });
});

// The order of events in a burst of pods on FakeNode: when each pod's in-pod rules began (its backend opened in the
// pod's namespace) and when its last step ended (published on podnet:agent:step before its call lets go of its
// slot; the call itself resolves a few reactions later). No clock: the order alone says whether pods finish in the
// order they came or all with the last.
const backends = [
  { name: 'nftables', backend: 'nftables' as const },
  { name: 'iptables', backend: 'iptables' as const },
];
const PODS = 24;
const LIMIT = 3;

describe.each(backends)('NodeNetwork with a burst of pods ($name backend)', ({ backend }) => {
  async function burst(op: 'add' | 'remove') {
    const node = new FakeNode();
    const events: string[] = [];
    const { ipset, ...options } = await node.options();
    const iptables: IptablesFactory = (request) => {
      if (request.netns !== undefined && request.family === 4) events.push(`start ${request.netns.path}`);
      return node.iptables(request);
    };
    const nftables: NftablesFactory = (request) => {
      if (request.netns !== undefined) events.push(`start ${request.netns.path}`);
      return node.nftables(request);
    };
    const net = new NodeNetwork({ ...options, ipset, iptables, nftables, backend, kubeletUid: 1000, maxPodsInFlight: LIMIT });
    const pods = Array.from({ length: PODS }, (_, i) => ({ uid: `burst-uid-${i}`, ips: [`10.248.0.${i + 1}`], netns: `/run/netns/burst-${i}` }));
    for (const pod of pods) node.netns.add(pod.netns);
    const last = op === 'add' ? 'probe-set' : 'routes';
    const onStep = (m: unknown) => {
      const step = m as AgentStepMessage;
      if (step.step === last && step.pod?.startsWith('burst-uid-')) events.push(`end /run/netns/burst-${step.pod.slice('burst-uid-'.length)}`);
    };
    diagnostics.subscribe('podnet:agent:step', onStep);
    const resolved: string[] = [];
    try {
      await net.start();
      if (op === 'remove') for (const pod of pods) await net.addPod(pod);
      events.length = 0;
      const call = (pod: (typeof pods)[number]) => (op === 'add' ? net.addPod(pod) : net.removePod(pod));
      await Promise.all(pods.map((pod) => call(pod).then(() => resolved.push(pod.uid))));
      expect(resolved.sort()).toEqual(pods.map((p) => p.uid).sort());
    } finally {
      diagnostics.unsubscribe('podnet:agent:step', onStep);
      await net.stop();
      ipset?.close();
      await node.close();
    }
    return { events, pods };
  }

  for (const op of ['add', 'remove'] as const) {
    it(`${op}: every pod done, begun in call order, at most ${LIMIT} at a time, the first done before the last begins`, async () => {
      const { events, pods } = await burst(op);
      const starts = events.filter((e) => e.startsWith('start '));
      expect(starts).toEqual(pods.map((p) => `start ${p.netns}`));
      expect(events.filter((e) => e.startsWith('end ')).sort()).toEqual(pods.map((p) => `end ${p.netns}`).sort());
      let inFlight = 0;
      let most = 0;
      for (const e of events) {
        inFlight += e.startsWith('start ') ? 1 : -1;
        most = Math.max(most, inFlight);
      }
      expect(most).toBe(LIMIT);
      expect(events.indexOf(`end ${pods[0]!.netns}`)).toBeLessThan(events.indexOf(`start ${pods.at(-1)!.netns}`));
    });
  }
});

describe('NodeNetwork maxPodsInFlight', () => {
  it.each([
    ['zero', 0],
    ['a fraction', 1.5],
    ['past 1024', 1025],
    ['a string', '4'],
  ])('refuses %s with a typed error naming the option', (_name, value) => {
    expect(() => new NodeNetwork({ maxPodsInFlight: value as number, preflight: false })).toThrow(
      expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('options.maxPodsInFlight') }),
    );
  });
});

// A removed pod's nf_tables socket is let go by the kernel an RCU grace period after the deletion (its `released()`);
// removePod waits for that in the pod's own turn, not in one of the slots of the pods in flight.
describe('NodeNetwork.removePod and the release of the pod socket (nftables backend)', () => {
  it('frees its slot before the release, resolves after it, and holds the pod next call until then', async () => {
    const node = new FakeNode();
    const { ipset, ...options } = await node.options();
    const holds = new Map<string, () => void>();
    let opened: string[] = [];
    const nftables: NftablesFactory = async (request) => {
      const nft = await node.nftables(request);
      const path = request.netns?.path;
      if (path === undefined) return nft;
      opened.push(path);
      const release = nft.released.bind(nft);
      // The test lets each pod's release end; the client's own wait runs after, so the socket is closed as ever.
      Object.assign(nft, { released: () => new Promise<void>((resolve) => holds.set(path, resolve)).then(release) });
      return nft;
    };
    const net = new NodeNetwork({ ...options, ipset, nftables, backend: 'nftables', kubeletUid: 1000, maxPodsInFlight: LIMIT });
    const pods = Array.from({ length: 3 * LIMIT }, (_, i) => ({ uid: `rel-uid-${i}`, ips: [`10.249.0.${i + 1}`], netns: `/run/netns/rel-${i}` }));
    for (const pod of pods) node.netns.add(pod.netns);
    try {
      await net.start();
      for (const pod of pods) await net.addPod(pod);
      opened = [];
      const done: string[] = [];
      const removals = pods.map((pod) => net.removePod(pod).then(() => done.push(pod.uid)));
      for (let turn = 0; turn < 1000 && holds.size < pods.length; turn++) await drain();
      // Every pod's tables are gone while no release has ended: more pods than the slots waited at once.
      expect([...holds.keys()].sort()).toEqual(pods.map((p) => p.netns).sort());
      expect(done).toEqual([]);
      const again = net.addPod(pods[0]!).then(() => done.push('again'));
      for (let turn = 0; turn < 20; turn++) await drain();
      expect(opened).toEqual(pods.map((p) => p.netns));
      expect(done).toEqual([]);
      holds.get(pods[0]!.netns)!();
      await removals[0];
      await again;
      expect(done).toEqual([pods[0]!.uid, 'again']);
      expect(opened.at(-1)).toBe(pods[0]!.netns);
      for (const pod of pods.slice(1)) holds.get(pod.netns)!();
      await Promise.all(removals);
      expect(done.sort()).toEqual([...pods.map((p) => p.uid), 'again'].sort());
    } finally {
      await net.stop();
      ipset?.close();
      await node.close();
    }
  });
});
