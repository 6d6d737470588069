// What the tests of netlink clients in another namespace check of a pair of them (an Rtnetlink and an Nftables client
// opened in ns): that each speaks for that namespace, not the test's own.
import { expect } from 'vitest';

import type { Nftables, Rtnetlink } from '../../lib/index.js';
import { closesDone, isCloexec, socketFds } from './fds.js';
import { type TestNetns, threadNamespaces } from './netns.js';

/**
 * expectSpeakFor makes a veth pair `podnet-<tag>0`/`podnet-<tag>1` in ns, then checks that rt lists it (home has no
 * such link) and that a table nft writes shows in `nft list tables` run in ns.
 */
export async function expectSpeakFor(ns: TestNetns, rt: Rtnetlink, nft: Nftables, tag: string): Promise<void> {
  ns.ip('link', 'add', `podnet-${tag}0`, 'type', 'veth', 'peer', 'name', `podnet-${tag}1`);
  expect((await rt.links()).map((l) => l.name).sort()).toEqual(['lo', `podnet-${tag}0`, `podnet-${tag}1`]);
  await nft.apply({ tables: [{ family: 'inet', name: `podnet-${tag}`, sets: [], chains: [], rules: [] }] });
  expect(ns.exec(['nft', 'list', 'tables'])).toContain(`table inet podnet-${tag}`);
}

/**
 * withClientPair opens a pair of clients, runs fn with them and the socket fds open before, closes both (also when fn
 * fails), and checks that every socket they held is closed again once their release (after each client's queue
 * settles) ran and the closer thread closed the netfilter socket.
 */
export async function withClientPair(
  open: () => Promise<[Rtnetlink, Nftables]>,
  fn: (rt: Rtnetlink, nft: Nftables, before: number[]) => Promise<void>,
): Promise<void> {
  const before = socketFds();
  const [rt, nft] = await open();
  try {
    await fn(rt, nft, before);
  } finally {
    rt.close();
    nft.close();
  }
  await new Promise((resolve) => setImmediate(resolve));
  await closesDone();
  expect(socketFds().sort()).toEqual(before.sort());
}

/** expectOpenedSockets checks that count sockets were opened since before, each close-on-exec, and returns them. */
export function expectOpenedSockets(before: readonly number[], count: number): number[] {
  const opened = socketFds().filter((fd) => !before.includes(fd));
  expect(opened).toHaveLength(count);
  for (const fd of opened) expect(isCloexec(fd)).toBe(true);
  return opened;
}

/** expectEveryThreadIn checks that every thread of this process is in the namespace home (`net:[inode]`). */
export function expectEveryThreadIn(home: string): void {
  for (const [tid, netns] of threadNamespaces()) expect(`${tid} ${netns}`).toBe(`${tid} ${home}`);
}
