// Worlds a NodeNetwork with the nftables backend runs in for tests: all fakes (FakeNode: a FakeNftables per
// namespace, no root), or real namespaces with the real kernel. Both expose the same handles for checks.
import { Nftables, Rtnetlink, type NodeNetworkOptions } from '../../lib/index.js';
import { FakeNode, type FakeNftables } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';

export interface NftPodRef {
  uid: string;
  ip: string;
  netns: string;
}

export interface NftWorld {
  /** Options wiring a NodeNetwork (backend 'nftables', kubelet uid 1000) to this world. */
  options(): Promise<NodeNetworkOptions>;
  pod(ip?: string): NftPodRef;
  dropNetns(pod: NftPodRef): void;
  /** nf_tables clients to look at the world with (closed by cleanup). */
  hostNftables(): Promise<Nftables>;
  podNftables(pod: NftPodRef): Promise<Nftables>;
  podRtnetlink(pod: NftPodRef): Promise<Rtnetlink>;
  /** The fake kernel of a pod (fake world only: undefined on the kernel). */
  podFake(pod: NftPodRef): FakeNftables | undefined;
  cleanup(): Promise<void>;
}

let podCounter = 0;
const KUBELET_UID = 1000;

export function fakeNftWorld(): NftWorld {
  const node = new FakeNode();
  const clients: { close(): void }[] = [];
  const keep = <T extends { close(): void }>(c: T): T => {
    clients.push(c);
    return c;
  };
  return {
    async options() {
      const o = await node.options();
      o.ipset?.close();
      return { netns: o.netns, rtnetlink: o.rtnetlink, nftables: o.nftables, backend: 'nftables', kubeletUid: KUBELET_UID };
    },
    pod(ip) {
      const n = ++podCounter;
      const netns = `/run/netns/fake-nft-pod-${n}`;
      node.netns.add(netns);
      return { uid: `uid-${n}`, ip: ip ?? `10.245.${(n >> 8) & 255}.${n & 255}`, netns };
    },
    dropNetns: (pod) => node.netns.remove(pod.netns),
    hostNftables: async () => keep(await Nftables.open({ netlink: node.nftablesOf(undefined) })),
    podNftables: async (pod) => keep(await Nftables.open({ netlink: node.nftablesOf(pod.netns) })),
    podRtnetlink: async (pod) => keep(await Rtnetlink.open({ netlink: node.rtnetlinkOf(pod.netns) })),
    podFake: (pod) => node.nftablesOf(pod.netns),
    async cleanup() {
      for (const c of clients) c.close();
      await node.close();
    },
  };
}

export function kernelNftWorld(): NftWorld {
  const host = new TestNetns('nfthost');
  const pods: TestNetns[] = [];
  const clients: { close(): void }[] = [];
  const keep = <T extends { close(): void }>(c: T): T => {
    clients.push(c);
    return c;
  };
  return {
    async options() {
      return { hostNetns: host.path, backend: 'nftables', kubeletUid: KUBELET_UID };
    },
    pod(ip) {
      const ns = new TestNetns('nftpod');
      pods.push(ns);
      const n = ++podCounter;
      return { uid: `uid-${n}`, ip: ip ?? `10.245.${(n >> 8) & 255}.${n & 255}`, netns: ns.path };
    },
    dropNetns: (pod) => pods.find((p) => p.path === pod.netns)?.delete(),
    hostNftables: async () => keep(await Nftables.open({ netns: host.path })),
    podNftables: async (pod) => keep(await Nftables.open({ netns: pod.netns })),
    podRtnetlink: async (pod) => keep(await Rtnetlink.open({ netns: pod.netns })),
    podFake: () => undefined,
    async cleanup() {
      for (const c of clients) c.close();
      for (const p of pods) p.delete();
      host.delete();
    },
  };
}
