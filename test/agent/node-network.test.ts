import { expect, it } from 'vitest';

import { Ipset, NodeNetwork } from '../../lib/index.js';
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
