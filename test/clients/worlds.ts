// The worlds the client contracts run in: the fakes (no root), or the kernel in a fresh namespace that cleanup()
// deletes. A world can open several clients of a kind on the same state (one to act, one to check afterwards).
import { afterEach, beforeEach } from 'vitest';

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

/** EachTest is the world of the running test and the clients it opened there (closed after it). */
export interface EachTest {
  readonly world: World;
  readonly opened: { close(): void }[];
}

/** worldPerTest makes a fresh world before each test of the suite it is called in, and after it closes what the test opened and cleans the world up. */
export function worldPerTest(makeWorld: () => World): EachTest {
  const state: { world: World | undefined; opened: { close(): void }[] } = { world: undefined, opened: [] };
  beforeEach(() => {
    state.world = makeWorld();
    state.opened = [];
  });
  afterEach(() => {
    for (const client of state.opened) client.close();
    state.world?.cleanup();
  });
  return {
    get world(): World {
      if (!state.world) throw new Error('no world outside a test');
      return state.world;
    },
    get opened() {
      return state.opened;
    },
  };
}
