import { expect, it } from 'vitest';

import { Iptables, Ipset, NodeNetwork, type IptablesRunner } from '../../lib/index.js';
import type { IptablesFactory, RtnetlinkFactory } from '../../lib/agent/backends.js';
import { FakeNode } from '../../lib/testing/index.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { nodeNetworkContract } from './node-network-contract.js';
import { fakeWorld, kernelWorld } from './world.js';

nodeNetworkContract('fakes', fakeWorld);

describePrivileged(
  'NodeNetwork against the kernel',
  () => {
    nodeNetworkContract('kernel', kernelWorld);
  },
  missingBinary('ipset', 'iptables-nft-restore'),
);

// A lost ACK needs a fault injected into the host's kernel: fakes only. The kernel suites above prove the same
// state (an entry the agent never learned of) pruned on the kernel.
it('prunes the entry of an add whose ACK was lost, so the next pod on that IP is not refused (FakeIpsetKernel)', async () => {
  const node = new FakeNode();
  const { ipset: defaultIpset, ...options } = await node.options();
  defaultIpset?.close();
  const ipset = await Ipset.open({ netlink: node.netlink, timeoutMs: 1000 });
  const net = new NodeNetwork({ ...options, ipset, onConflict: 'error' });
  try {
    await net.start();
    const ip = '10.247.0.1';
    const [a, b] = [{ uid: 'uid-lost', ips: [ip], netns: '/run/netns/lost-a' }, { uid: 'uid-next', ips: [ip], netns: '/run/netns/lost-b' }];
    node.netns.add(a.netns).add(b.netns);
    node.netlink.dropNextReply({ command: 'add', set: 'istio-inpod-probes-v4' });
    await expect(net.addPod(a)).rejects.toMatchObject({ step: 'probe-set', retryable: true, cause: { code: 'ETIMEDOUT' } });
    const held = () => node.netlink.dump().sets.find((s) => s.name === 'istio-inpod-probes-v4')!.entries.map((e) => [e.ip, e.comment]);
    expect(held()).toEqual([[ip, a.uid]]);
    expect(await net.removePod(a, { deleted: true })).toBeUndefined();
    expect(held()).toEqual([[ip, a.uid]]);
    expect(await net.syncSnapshot([])).toMatchObject({ pruned: [{ ip, owner: a.uid }], failed: [] });
    await net.addPod(b);
    expect(held()).toEqual([[ip, b.uid]]);
  } finally {
    await net.stop();
    ipset.close();
    await node.close();
  }
});

// With the iptables backend a pod's rules are a restore process of several milliseconds, the routing and the proxy
// handoff a fraction of one: addPod starts the process before it starts the other two, so their synchronous starts
// do not hold it back. A failing restore is still settled and reported after the others, as the first failed step.
it('starts a pod restore before its routing with the iptables backend, and reports its refusal after both', async () => {
  const node = new FakeNode();
  const { ipset, ...options } = await node.options();
  const events: string[] = [];
  let refuse = false;
  const iptables: IptablesFactory = (request) => {
    const fake = node.iptablesOf(request.netns?.path);
    const runner: IptablesRunner = {
      run(argv, stdin) {
        // A run with input is a restore (Iptables.open's version probe has none).
        if (request.netns !== undefined && stdin !== undefined) {
          events.push(`restore ${request.family}`);
          if (refuse) return Promise.resolve({ exitCode: 2, stdout: '', stderr: 'iptables-restore: line 4 failed\n' });
        }
        return fake.run(argv, stdin);
      },
    };
    return Iptables.open({ runner, family: request.family, backend: request.backend ?? 'nft' });
  };
  const rtnetlink: RtnetlinkFactory = (request) => (events.push('routing'), node.rtnetlink(request));
  const net = new NodeNetwork({ ...options, ipset, iptables, rtnetlink, backend: 'iptables' });
  try {
    await net.start();
    const pods = [0, 1].map((i) => ({ uid: `lead-uid-${i}`, ips: [`10.246.0.${i + 1}`], netns: `/run/netns/lead-${i}` }));
    for (const pod of pods) node.netns.add(pod.netns);
    await net.addPod(pods[0]!);
    // The IPv6 rules follow the IPv4 ones (the fake answers at once, so they may also come before the routing).
    expect(events[0]).toBe('restore 4');
    expect(events.filter((e) => e === 'routing')).toHaveLength(1);
    events.length = 0;
    refuse = true;
    await expect(net.addPod(pods[1]!)).rejects.toMatchObject({ step: 'inpod-rules', cause: { code: 'ERR_IPTABLES_RESTORE', line: 4 } });
    // The refused IPv4 restore ends the rules (no IPv6 run); the second routing opens it to take it out again.
    expect(events).toEqual(['restore 4', 'routing', 'routing']);
    const routing = node.rtnetlinkOf(pods[1]!.netns).dump();
    expect([routing.rules.filter((r) => r.priority === 32764), routing.routes.filter((r) => r.table === 100)]).toEqual([[], []]);
  } finally {
    await net.stop();
    ipset?.close();
    await node.close();
  }
});
