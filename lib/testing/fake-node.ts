/**
 * FakeNode: everything NodeNetwork needs, faked, for agent unit tests without
 * root: FakeNetlink for the host's ipset, one FakeIptables and one
 * FakeRtnetlink per namespace, and a namespace opener over a set of pretend
 * namespace paths.
 */
import type { AgentNetns, IptablesFactory, NetnsOpener, RtnetlinkFactory } from '../agent/backends.js';
import type { NodeNetworkOptions } from '../agent/node-network.js';
import { PodnetSystemError } from '../errors.js';
import { Ipset } from '../ipset/client.js';
import { Iptables } from '../iptables/iptables.js';
import { Netns, type NetnsLike } from '../netns.js';
import { Rtnetlink } from '../rtnetlink/client.js';
import { FakeIptables } from './fake-iptables.js';
import { FakeNetlink } from './fake-netlink/fake-netlink.js';
import { FakeRtnetlink } from './fake-rtnetlink/fake-rtnetlink.js';

/** FakeNetnsOpener opens pretend namespaces: paths added with add(), gone after remove() (ENOENT, as for real). */
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

  open(netns: NetnsLike): AgentNetns {
    const path = netns instanceof Netns ? netns.path : netns;
    if (!this.#present.has(path)) {
      throw new PodnetSystemError(`ENOENT: no such file or directory, open '${path}'`, 'ENOENT', -2, { syscall: 'open', path });
    }
    this.#open++;
    let closed = false;
    return {
      path,
      id: `fake:${path}`,
      close: () => {
        if (!closed) this.#open--;
        closed = true;
      },
    };
  }
}

/** FakeNode bundles the fakes of one simulated node. */
export class FakeNode {
  readonly netlink: FakeNetlink;
  readonly netns = new FakeNetnsOpener();
  readonly #iptables = new Map<string, FakeIptables>();
  readonly #rtnetlink = new Map<string, FakeRtnetlink>();

  constructor(options: { netlink?: FakeNetlink } = {}) {
    this.netlink = options.netlink ?? new FakeNetlink();
  }

  /** iptablesOf returns the FakeIptables of a namespace path (undefined: the host). */
  iptablesOf(path?: string): FakeIptables {
    const key = path ?? 'host';
    let fake = this.#iptables.get(key);
    if (!fake) {
      fake = new FakeIptables();
      this.#iptables.set(key, fake);
    }
    return fake;
  }

  /** iptables is the IptablesFactory to inject: one FakeIptables per namespace. */
  readonly iptables: IptablesFactory = (request) =>
    Iptables.open({ runner: this.iptablesOf(request.netns?.path), family: request.family, backend: request.backend ?? 'nft' });

  /** rtnetlinkOf returns the FakeRtnetlink of a pod namespace path: lo up with its addresses, as a fresh netns. */
  rtnetlinkOf(path: string): FakeRtnetlink {
    let fake = this.#rtnetlink.get(path);
    if (!fake) {
      fake = new FakeRtnetlink();
      this.#rtnetlink.set(path, fake);
    }
    return fake;
  }

  /** rtnetlink is the RtnetlinkFactory to inject: one FakeRtnetlink per namespace. */
  readonly rtnetlink: RtnetlinkFactory = (request) => Rtnetlink.open({ netlink: this.rtnetlinkOf(request.netns.path) });

  /** options returns NodeNetwork options wired to these fakes (an Ipset client on the fake netlink). */
  async options(): Promise<Pick<NodeNetworkOptions, 'ipset' | 'iptables' | 'netns' | 'rtnetlink'>> {
    return { ipset: await Ipset.open({ netlink: this.netlink }), iptables: this.iptables, netns: this.netns, rtnetlink: this.rtnetlink };
  }
}
