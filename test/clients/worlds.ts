// The worlds the client contracts run in: the fakes (no root), or the kernel in a fresh namespace that cleanup()
// deletes. A world can open several clients of a kind on the same state (one to act, one to check afterwards).
import { Ipset, Nftables, Rtnetlink } from '../../lib/index.js';
import { FakeIpsetKernel, FakeNftables, FakeRtnetlink } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';

/** World is one place (fakes, or a namespace) and the clients opened on it. */
export interface World {
  ipset(): Promise<Ipset>;
  rtnetlink(): Promise<Rtnetlink>;
  nftables(): Promise<Nftables>;
  /** Releases what the world made (the namespace). */
  cleanup(): void;
}

/** fakeWorld is one FakeIpsetKernel, FakeRtnetlink and FakeNftables. */
export function fakeWorld(): World {
  const ipset = new FakeIpsetKernel();
  const rtnetlink = new FakeRtnetlink();
  const nftables = new FakeNftables();
  return {
    ipset: () => Ipset.open({ netlink: ipset }),
    rtnetlink: () => Rtnetlink.open({ netlink: rtnetlink }),
    nftables: () => Nftables.open({ netlink: nftables }),
    cleanup: () => undefined,
  };
}

/** kernelWorld is a fresh namespace with lo up. */
export function kernelWorld(tag: string): World {
  const ns = new TestNetns(tag);
  return {
    ipset: () => Ipset.open({ netns: ns.path }),
    rtnetlink: () => Rtnetlink.open({ netns: ns.path }),
    nftables: () => Nftables.open({ netns: ns.path }),
    cleanup: () => ns.delete(),
  };
}
