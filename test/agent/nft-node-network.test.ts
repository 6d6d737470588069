// NodeNetwork's nftables backend on fakes (no root) and on the kernel; and on fakes only, what needs a refusal
// injected into a pod's kernel.
import { expect, it } from 'vitest';

import { Nftables, NodeNetwork, type AgentError } from '../../lib/index.js';
import { FakeNode } from '../../lib/testing/index.js';
import { NFT_TABLES } from '../../lib/agent/nft-rules.js';
import { describePrivileged } from '../helpers/privileged.js';
import { nftNodeNetworkContract } from './nft-node-network-contract.js';

const HOST = { family: 'inet', name: NFT_TABLES.nat } as const;
import { fakeNftWorld, kernelNftWorld } from './nft-world.js';

nftNodeNetworkContract('fakes', fakeNftWorld);

describePrivileged('NodeNetwork (nftables backend) against the kernel', () => {
  nftNodeNetworkContract('kernel', kernelNftWorld);
});

it('fails at the inpod-rules step, changing nothing in the pod and adding no probe entry, when its kernel refuses the batch', async () => {
  const node = new FakeNode();
  const { ipset, ...options } = await node.options();
  ipset?.close();
  const net = new NodeNetwork({ ...options, backend: 'nftables', kubeletUid: 1000 });
  await net.start();
  const path = '/run/netns/refusing-pod';
  node.netns.add(path);
  const pod = node.nftablesOf(path);
  pod.failNext(1, { message: 'newrule', table: NFT_TABLES.raw });
  const err = await net.addPod({ uid: 'uid-r', ips: ['10.246.0.1'], netns: path }).catch((e: unknown) => e);
  expect(err).toMatchObject({ step: 'inpod-rules', code: 'ERR_AGENT_INPOD_RULES', pod: 'uid-r', retryable: false });
  expect((err as AgentError).cause).toMatchObject({ name: 'NftablesError', code: 'EPERM' });
  expect(pod.dump().tables).toEqual([]);
  expect(node.nftablesOf(undefined).dump().tables[0]!.sets.map((s) => s.elements)).toEqual([[]]);
  expect(node.rtnetlinkOf(path).dump().rules.filter((r) => r.priority === 32764)).toEqual([]);
  await net.stop();
  await node.close();
});

it('keeps the policy routing an earlier addPod made when a second addPod of the pod has its rules refused', async () => {
  const node = new FakeNode();
  const { ipset, ...options } = await node.options();
  ipset?.close();
  const net = new NodeNetwork({ ...options, backend: 'nftables', kubeletUid: 1000 });
  await net.start();
  const path = '/run/netns/twice-pod';
  node.netns.add(path);
  await net.addPod({ uid: 'uid-t', ips: ['10.246.0.2'], netns: path });
  const fwmark = () => node.rtnetlinkOf(path).dump().rules.filter((r) => r.priority === 32764);
  const local = () => node.rtnetlinkOf(path).dump().routes.filter((r) => r.table === 100);
  expect(fwmark()).toHaveLength(1);
  expect(local()).toHaveLength(1);
  node.nftablesOf(path).failNext(1, { message: 'newrule', table: NFT_TABLES.raw });
  const err = await net.addPod({ uid: 'uid-t', ips: ['10.246.0.2'], netns: path }).catch((e: unknown) => e);
  expect(err).toMatchObject({ step: 'inpod-rules', code: 'ERR_AGENT_INPOD_RULES' });
  // Only what the refused call itself put in is taken out: the rule and route were there before it.
  expect(fwmark()).toHaveLength(1);
  expect(local()).toHaveLength(1);
  await net.stop();
  await node.close();
});

it('takes a new pod back from the proxy when its rules are refused, and leaves an enrolled one with it', async () => {
  const node = new FakeNode();
  const { ipset, ...options } = await node.options();
  ipset?.close();
  const { server, ztunnel } = await node.proxy();
  const net = new NodeNetwork({ ...options, backend: 'nftables', kubeletUid: 1000, proxy: server });
  await net.start();
  const workload = { name: 'p', namespace: 'default', serviceAccount: 'sa' };
  const fresh = '/run/netns/refused-new';
  const enrolled = '/run/netns/refused-again';
  node.netns.add(fresh);
  node.netns.add(enrolled);
  await net.addPod({ uid: 'uid-e', ips: ['10.246.0.4'], netns: enrolled, workload });
  for (const [uid, ip, path] of [['uid-n', '10.246.0.3', fresh], ['uid-e', '10.246.0.4', enrolled]] as const) {
    node.nftablesOf(path).failNext(1, { message: 'newrule', table: NFT_TABLES.raw });
    const err = await net.addPod({ uid, ips: [ip], netns: path, workload }).catch((e: unknown) => e);
    expect(err).toMatchObject({ step: 'inpod-rules', code: 'ERR_AGENT_INPOD_RULES', pod: uid });
  }
  // The new pod was handed over beside its rules and taken back once they were refused; the enrolled one stays.
  expect(ztunnel.received.filter((m) => m.kind !== 'snapshotSent')).toEqual([
    expect.objectContaining({ kind: 'add', uid: 'uid-e' }),
    expect.objectContaining({ kind: 'add', uid: 'uid-n' }),
    { kind: 'del', uid: 'uid-n' },
    expect.objectContaining({ kind: 'add', uid: 'uid-e' }),
  ]);
  expect([...ztunnel.workloads.keys()]).toEqual(['uid-e']);
  await net.stop();
  await node.close();
});

it('prunes the element of an add whose answer was lost, so the next pod on that IP is not refused (FakeNftables)', async () => {
  const node = new FakeNode();
  const { ipset, ...options } = await node.options();
  ipset?.close();
  // Clients with a short deadline, so the lost answer times out quickly.
  const nftables = (request: { netns?: { path: string } }) => Nftables.open({ netlink: node.nftablesOf(request.netns?.path), timeoutMs: 1000 });
  const net = new NodeNetwork({ ...options, nftables, backend: 'nftables', kubeletUid: 1000, onConflict: 'error' });
  const host = await Nftables.open({ netlink: node.nftablesOf(undefined) });
  try {
    await net.start();
    const ip = '10.247.1.1';
    const [a, b] = [{ uid: 'uid-lost', ips: [ip], netns: '/run/netns/nft-lost-a' }, { uid: 'uid-next', ips: [ip], netns: '/run/netns/nft-lost-b' }];
    node.netns.add(a.netns).add(b.netns);
    node.nftablesOf(undefined).dropNextReply({ message: 'newsetelem' });
    await expect(net.addPod(a)).rejects.toMatchObject({ step: 'probe-set', retryable: true, cause: { code: 'ETIMEDOUT' } });
    const held = async () => (await host.elements(HOST, 'istio-inpod-probes-v4')).map((e) => [e.address, e.comment]);
    expect(await held()).toEqual([[ip, a.uid]]);
    await net.removePod(a, { deleted: true });
    expect(await held()).toEqual([[ip, a.uid]]);
    expect(await net.syncSnapshot([])).toMatchObject({ pruned: [{ ip, owner: a.uid }], failed: [] });
    await net.addPod(b);
    expect(await held()).toEqual([[ip, b.uid]]);
  } finally {
    await net.stop();
    host.close();
    await node.close();
  }
});
