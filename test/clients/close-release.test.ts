// Closing a netfilter client (Nftables, Ipset) hands its socket to the addon's closer thread and returns. The kernel
// releases a NETLINK_NETFILTER socket only after nf_tables' deferred destroy work has run, which waits for an RCU grace
// period whenever any namespace on the machine deleted nf_tables objects since it last ran (10-20 ms on this project's
// VMs): done on the JS thread, that wait stalled the event loop once per client closed, so a node agent removing pods
// stalled for each. The sockets are closed all the same, a little later, and the wait below bounds lateness only.
import { expect, it } from 'vitest';

import { Ipset, Nftables } from '../../lib/index.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { native } from '../../lib/native.js';
import { closesDone, socketFds } from '../helpers/fds.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

const T = { family: 'inet', name: 'podnet-close' } as const;

/** loopTurn is how long the JS thread takes from now through fn and the next turn of the event loop, in ms. */
async function loopTurn(fn: () => void): Promise<number> {
  const t0 = performance.now();
  fn();
  await new Promise((resolve) => setImmediate(resolve));
  return performance.now() - t0;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

describePrivileged('closing netfilter clients right after nf_tables deletions', () => {
  it('does not hold the event loop while the kernel releases the socket, and every socket is closed after', async () => {
    await withNetns(async (ns, other) => {
      const before = socketFds();
      const nftTurns: number[] = [];
      const ipsetTurns: number[] = [];
      for (let i = 0; i < 9; i++) {
        const nft = await Nftables.open({ netns: ns.path });
        const ipset = await Ipset.open({ netns: other.path });
        await ipset.listNames(); // its socket has spoken: the kernel notifies its release
        await nft.run(nft.transaction().addTable(T).addChain({ ...T, table: T.name, name: 'out', type: 'filter', hook: 'output', priority: 0 }));
        // Deleting a table with a base chain leaves nf_tables destroy work to do after a grace period.
        await nft.run(nft.transaction().deleteTable(T));
        nftTurns.push(await loopTurn(() => nft.close()));
        const again = await Nftables.open({ netns: ns.path });
        await again.run(again.transaction().addTable(T));
        await again.run(again.transaction().deleteTable(T));
        // An ipset socket is a netfilter socket too, in another namespace: its release waits for the same work.
        ipsetTurns.push(await loopTurn(() => ipset.close()));
        again.close();
      }
      // A turn of the loop around close() is well under a millisecond; the kernel's wait is a grace period. The bound
      // is wide: a loaded machine may preempt this thread in some turns, hence the median of nine.
      expect(median(nftTurns), `Nftables close turns: ${nftTurns.map((t) => t.toFixed(2)).join(', ')} ms`).toBeLessThan(5);
      expect(median(ipsetTurns), `Ipset close turns: ${ipsetTurns.map((t) => t.toFixed(2)).join(', ')} ms`).toBeLessThan(5);
      await closesDone();
      expect(native.pendingCloses()).toBe(0);
      expect(socketFds().sort()).toEqual(before.sort());
    }, 2);
  });

  it('released() waits, off the JS thread, until the socket is closed, and refuses before close()', async () => {
    await withNetns(async (ns) => {
      const before = socketFds();
      const nft = await Nftables.open({ netns: ns.path });
      const early = await nft.released().catch((err: unknown) => err);
      expect(early).toMatchObject({ code: 'ERR_INVALID_STATE' });
      await nft.run(nft.transaction().addTable(T).addChain({ ...T, table: T.name, name: 'out', type: 'filter', hook: 'output', priority: 0 }));
      await nft.run(nft.transaction().deleteTable(T));
      nft.close();
      await nft.released();
      expect(socketFds().sort()).toEqual(before.sort());
      await nft.released(); // again: already released
    });
  });
});

it('released() of a client on a fake kernel resolves once it is closed', async () => {
  const nft = await Nftables.open({ netlink: new FakeNftables() });
  await nft.run(nft.transaction().addTable(T));
  nft.close();
  await expect(nft.released()).resolves.toBeUndefined();
});
