/**
 * FakeNode: everything NodeNetwork needs, faked, for agent unit tests without
 * root: FakeIpsetKernel for the host's ipset, one FakeIptables, one FakeNftables
 * (for the nftables backend) and one FakeRtnetlink per namespace, and a
 * namespace opener over a set of pretend namespace paths.
 */
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { AgentNetns, IptablesFactory, NetnsOpener, NftablesFactory, RtnetlinkFactory } from '../agent/backends.js';
import type { NodeNetworkOptions } from '../preflight/node-network.js';
import { PodnetSystemError } from '../errors.js';
import { Ipset } from '../ipset/client.js';
import { Iptables } from '../iptables/iptables.js';
import { Netns, type NetnsLike } from '../netns.js';
import { Nftables } from '../nftables/client.js';
import { ZtunnelServer } from '../proxy/ztunnel-server.js';
import { Rtnetlink } from '../rtnetlink/client.js';
import { FakeIptables } from './fake-iptables.js';
import { FakeIpsetKernel } from './fake-ipset/fake-ipset-kernel.js';
import { FakeNftables } from './fake-nftables/fake-nftables.js';
import { FakeRtnetlink } from './fake-rtnetlink/fake-rtnetlink.js';
import { FakeZtunnel } from './fake-ztunnel.js';

/** FakeNodeProxy is a node's proxy handoff: the agent's ZtunnelServer and the FakeZtunnel connected to it. */
export interface FakeNodeProxy {
  /** The agent's end: pass it to NodeNetwork as its proxy. */
  readonly server: ZtunnelServer;
  /** The node proxy's end, to check what the agent handed over. */
  readonly ztunnel: FakeZtunnel;
}

/**
 * FakeNetnsOpener opens pretend namespaces: paths added with add(), gone after remove() (ENOENT, as for real). Each
 * opened one carries an fd of this process's own network namespace, so a node proxy (FakeZtunnel) gets a real netns
 * fd; every pretend namespace shares that one.
 */
export class FakeNetnsOpener implements NetnsOpener {
  readonly #present = new Set<string>();
  #open = 0;

  /** add makes a namespace exist at path. */
  add(path: string): this {
    this.#present.add(path);
    return this;
  }

  /** remove makes the namespace at path disappear. */
  remove(path: string): void {
    this.#present.delete(path);
  }

  /** openHandles counts handles opened and not closed yet (a leak check for tests). */
  get openHandles(): number {
    return this.#open;
  }

  /** open opens a pretend namespace; throws PodnetSystemError `ENOENT` unless add() made it exist. */
  open(netns: NetnsLike): AgentNetns {
    const path = netns instanceof Netns ? netns.path : netns;
    if (!this.#present.has(path)) {
      throw new PodnetSystemError(`ENOENT: no such file or directory, open '${path}'`, 'ENOENT', -2, { syscall: 'open', path });
    }
    // The node proxy needs a real netns fd to check and hold; without root the only one at hand is this process's.
    const fd = openSync('/proc/self/ns/net', 'r');
    this.#open++;
    let closed = false;
    return {
      path,
      id: `fake:${path}`,
      fd,
      close: () => {
        if (closed) return;
        closed = true;
        this.#open--;
        closeSync(fd);
      },
    };
  }
}

/** FakeNode bundles the fakes of one simulated node. */
export class FakeNode {
  /** The fake ipset kernel of the host (the probe sets). */
  readonly netlink: FakeIpsetKernel;
  /** The pretend namespaces: add() a pod's path before addPod. */
  readonly netns = new FakeNetnsOpener();
  readonly #iptables = new Map<string, FakeIptables>();
  readonly #rtnetlink = new Map<string, FakeRtnetlink>();
  readonly #nftables = new Map<string, FakeNftables>();
  #proxy: Promise<FakeNodeProxy> | undefined;
  #proxyDir: string | undefined;

  constructor(options: { netlink?: FakeIpsetKernel } = {}) {
    this.netlink = options.netlink ?? new FakeIpsetKernel();
  }

  /** iptablesOf returns the FakeIptables of a namespace path (undefined: the host). */
  iptablesOf(path?: string): FakeIptables {
    return ofNamespace(this.#iptables, path ?? 'host', () => new FakeIptables());
  }

  /** iptables is the IptablesFactory to inject: one FakeIptables per namespace. */
  readonly iptables: IptablesFactory = (request) =>
    Iptables.open({ runner: this.iptablesOf(request.netns?.path), family: request.family, backend: request.backend ?? 'nft' });

  /** nftablesOf returns the FakeNftables of a namespace path (undefined: the host), empty as a fresh netns. */
  nftablesOf(path?: string): FakeNftables {
    return ofNamespace(this.#nftables, path ?? 'host', () => new FakeNftables());
  }

  /** nftables is the NftablesFactory to inject (NodeNetwork's nftables backend): one FakeNftables per namespace. */
  readonly nftables: NftablesFactory = (request) => Nftables.open({ netlink: this.nftablesOf(request.netns?.path) });

  /** rtnetlinkOf returns the FakeRtnetlink of a pod namespace path: lo up with its addresses, as a fresh netns. */
  rtnetlinkOf(path: string): FakeRtnetlink {
    return ofNamespace(this.#rtnetlink, path, () => new FakeRtnetlink());
  }

  /** rtnetlink is the RtnetlinkFactory to inject: one FakeRtnetlink per namespace. */
  readonly rtnetlink: RtnetlinkFactory = (request) => Rtnetlink.open({ netlink: this.rtnetlinkOf(request.netns.path) });

  /**
   * proxy starts (once) a ZtunnelServer on a socket file in a fresh temp folder and a FakeZtunnel connected to it,
   * resolving once the fake has its first snapshot; pass `server` as NodeNetwork's `proxy`. close() ends both.
   * Unix sockets need no root, and the fds handed over are of this process's namespace (see FakeNetnsOpener).
   * Rejects as ZtunnelServer.listen and FakeZtunnel.connect do (the server is closed again then).
   */
  proxy(): Promise<FakeNodeProxy> {
    this.#proxy ??= (async () => {
      this.#proxyDir = mkdtempSync(join(tmpdir(), 'podnet-fake-node-'));
      const server = await ZtunnelServer.listen({ path: join(this.#proxyDir, 'ztunnel.sock') });
      try {
        const ztunnel = await FakeZtunnel.connect(server.path);
        await ztunnel.waitForSnapshot({ after: 0 });
        return { server, ztunnel };
      } catch (err) {
        await server.close();
        throw err;
      }
    })();
    return this.#proxy;
  }

  /** close ends the proxy handoff started by proxy(), if any, and removes its socket folder. */
  async close(): Promise<void> {
    const started = this.#proxy;
    this.#proxy = undefined;
    if (started) {
      const proxy = await started.catch(() => undefined);
      proxy?.ztunnel.close();
      await proxy?.server.close();
    }
    if (this.#proxyDir) rmSync(this.#proxyDir, { recursive: true, force: true });
    this.#proxyDir = undefined;
  }

  /**
   * options returns NodeNetwork options wired to these fakes (an Ipset client on the fake netlink, and the nftables
   * factory for `backend: 'nftables'`, which also needs a `kubeletUid`: a fake node has no kubelet process).
   */
  async options(): Promise<Pick<NodeNetworkOptions, 'ipset' | 'iptables' | 'netns' | 'rtnetlink' | 'nftables'>> {
    return { ipset: await Ipset.open({ netlink: this.netlink }), iptables: this.iptables, netns: this.netns, rtnetlink: this.rtnetlink, nftables: this.nftables };
  }
}

/** ofNamespace returns the fake of one namespace from fakes, making it on first use. */
function ofNamespace<T>(fakes: Map<string, T>, key: string, make: () => T): T {
  let fake = fakes.get(key);
  if (fake === undefined) {
    fake = make();
    fakes.set(key, fake);
  }
  return fake;
}
