// Worlds a NodeNetwork can run in for tests: all fakes (no root), or real
// namespaces with the real kernel. Both expose the same handles for checks.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Ipset, Iptables, Netns, NodeNetwork, Rtnetlink, ZtunnelServer, type NodeNetworkOptions } from '../../lib/index.js';
import { FakeNode, FakeZtunnel } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';

export interface PodRef {
  uid: string;
  ip: string;
  netns: string;
}

export interface World {
  /** Options wiring a NodeNetwork to this world. */
  options(): Promise<NodeNetworkOptions>;
  /** A pod with a namespace of its own and a unique IP (unless one is given). */
  pod(ip?: string): PodRef;
  /** Makes a pod's namespace disappear. */
  dropNetns(pod: PodRef): void;
  /** Clients to look at the world with. */
  hostIptables(family?: 4 | 6): Promise<Iptables>;
  podIptables(pod: PodRef, family?: 4 | 6): Promise<Iptables>;
  hostIpset(): Promise<Ipset>;
  /** An rtnetlink client inside the pod's namespace (closed by cleanup). */
  podRtnetlink(pod: PodRef): Promise<Rtnetlink>;
  /** What `ip -n <pod> args` prints (kernel world only: undefined on fakes). */
  podIp(pod: PodRef, ...args: string[]): string | undefined;
  /** A ZtunnelServer on a socket in a temp folder with a FakeZtunnel connected (its first snapshot taken). */
  proxy(): Promise<{ server: ZtunnelServer; ztunnel: FakeZtunnel }>;
  /** The Netns.id of the fd the node proxy gets for pod (on fakes: this process's namespace, see FakeNetnsOpener). */
  netnsId(pod: PodRef): string;
  cleanup(): Promise<void>;
}

/** proxyFolder makes a temp folder for ZDS socket files; the returned remover deletes it. */
function proxyFolder(): { path: (name: string) => string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'podnet-world-'));
  return { path: (name) => join(dir, name), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

function currentNetnsId(): string {
  const ns = Netns.current();
  try {
    return ns.id;
  } finally {
    ns.close();
  }
}

let podCounter = 0;

export function fakeWorld(): World {
  const node = new FakeNode();
  let hostIpset: Ipset | undefined;
  const clients: { close(): void }[] = [];
  return {
    async options() {
      return node.options();
    },
    pod(ip) {
      const n = ++podCounter;
      const netns = `/run/netns/fake-pod-${n}`;
      node.netns.add(netns);
      return { uid: `uid-${n}`, ip: ip ?? `10.244.${(n >> 8) & 255}.${n & 255}`, netns };
    },
    dropNetns(pod) {
      node.netns.remove(pod.netns);
    },
    hostIptables: (family = 4) => Iptables.open({ runner: node.iptablesOf(undefined), family, backend: 'nft' }),
    podIptables: (pod, family = 4) => Iptables.open({ runner: node.iptablesOf(pod.netns), family, backend: 'nft' }),
    async hostIpset() {
      hostIpset ??= await Ipset.open({ netlink: node.netlink });
      return hostIpset;
    },
    async podRtnetlink(pod) {
      const rt = await Rtnetlink.open({ netlink: node.rtnetlinkOf(pod.netns) });
      clients.push(rt);
      return rt;
    },
    podIp: () => undefined,
    proxy: () => node.proxy(),
    netnsId: () => currentNetnsId(),
    async cleanup() {
      hostIpset?.close();
      for (const c of clients) c.close();
      await node.close();
    },
  };
}

export function kernelWorld(): World {
  const host = new TestNetns('host');
  const pods: TestNetns[] = [];
  const clients: { close(): void }[] = [];
  let proxy: Promise<{ server: ZtunnelServer; ztunnel: FakeZtunnel }> | undefined;
  const folder = proxyFolder();
  return {
    async options() {
      return { hostNetns: host.path };
    },
    pod(ip) {
      const ns = new TestNetns('pod');
      pods.push(ns);
      const n = ++podCounter;
      return { uid: `uid-${n}`, ip: ip ?? `10.244.${(n >> 8) & 255}.${n & 255}`, netns: ns.path };
    },
    dropNetns(pod) {
      pods.find((p) => p.path === pod.netns)?.delete();
    },
    hostIptables: (family = 4) => Iptables.open({ netns: host.path, family }),
    podIptables: (pod, family = 4) => Iptables.open({ netns: pod.netns, family }),
    async hostIpset() {
      const ipset = await Ipset.open({ netns: host.path });
      clients.push(ipset);
      return ipset;
    },
    async podRtnetlink(pod) {
      const rt = await Rtnetlink.open({ netns: pod.netns });
      clients.push(rt);
      return rt;
    },
    podIp(pod, ...args) {
      return pods.find((p) => p.path === pod.netns)?.ip(...args);
    },
    proxy() {
      proxy ??= (async () => {
        const server = await ZtunnelServer.listen({ path: folder.path('ztunnel.sock') });
        const ztunnel = await FakeZtunnel.connect(server.path);
        await ztunnel.waitForSnapshot({ after: 0 });
        return { server, ztunnel };
      })();
      return proxy;
    },
    netnsId(pod) {
      const ns = Netns.open(pod.netns);
      try {
        return ns.id;
      } finally {
        ns.close();
      }
    },
    async cleanup() {
      const p = await proxy?.catch(() => undefined);
      p?.ztunnel.close();
      await p?.server.close();
      folder.remove();
      for (const c of clients) c.close();
      for (const p of pods) p.delete();
      host.delete();
    },
  };
}

export async function started(world: Pick<World, 'options'>, extra: Partial<NodeNetworkOptions> = {}): Promise<NodeNetwork> {
  const node = new NodeNetwork({ ...(await world.options()), ...extra });
  await node.start();
  return node;
}
