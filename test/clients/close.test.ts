// One meaning of close() for every client, on the kernel and on the fakes: it refuses new calls at once (each client
// with its own ERR_<CLIENT>_CLOSED, *Sync calls throwing it) and lets every call made before it finish as it would
// have; the sockets are released after those calls settle.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { NftTableRef } from '../../lib/index.js';
import { describePrivileged } from '../helpers/privileged.js';
import { rejection, thrown } from '../helpers/rejection.js';
import { type World, fakeWorld, kernelWorld } from './worlds.js';

const T: NftTableRef = { family: 'inet', name: 'podnet-close' };
const N = 20;
const v4 = (i: number) => `10.0.${i >> 8}.${i & 255}`;

/** The calls one client makes before close(), what a call after it is, and what the state holds afterwards. */
interface Started {
  before: Promise<unknown>[];
  close(): void;
  closed(): boolean;
  /** A call made after close(). */
  late(): Promise<unknown>;
  /** A *Sync call made after close(), where the client has them. */
  lateSync?: () => unknown;
  /** What a second client on the same state reads afterwards: the count of things the calls before close() made. */
  held(world: World): Promise<number>;
}

interface Case {
  name: string;
  code: string;
  start(world: World): Promise<Started>;
}

const cases: Case[] = [
  {
    name: 'Ipset',
    code: 'ERR_IPSET_CLOSED',
    async start(world) {
      const ipset = await world.ipset();
      await ipset.create('s', { type: 'hash:ip' });
      const before: Promise<unknown>[] = [];
      for (let i = 0; i < N; i++) before.push(ipset.add('s', { ip: v4(i) }));
      before.push(ipset.addMany('s', [{ ip: v4(N) }, { ip: v4(N + 1) }]).then((r) => expect(r.failed).toEqual([])));
      before.push(ipset.del('s', { ip: v4(0) }));
      before.push(ipset.header('s'));
      return {
        before,
        close: () => ipset.close(),
        closed: () => ipset.closed,
        late: () => ipset.add('s', { ip: v4(N + 2) }),
        lateSync: () => ipset.addSync('s', { ip: v4(N + 3) }),
        held: async (w) => {
          using check = await w.ipset();
          return (await check.list('s')).entries.length;
        },
      };
    },
  },
  {
    name: 'Rtnetlink',
    code: 'ERR_RTNETLINK_CLOSED',
    async start(world) {
      const rt = await world.rtnetlink();
      const before: Promise<unknown>[] = [];
      for (let i = 0; i < N + 2; i++) before.push(rt.addRoute({ dst: `10.${i}.0.0`, dstLength: 16, table: 100, type: 'blackhole' }));
      before.push(rt.delRoute({ dst: '10.0.0.0', dstLength: 16, table: 100, type: 'blackhole' }));
      before.push(rt.routes({ table: 100 }));
      return {
        before,
        close: () => rt.close(),
        closed: () => rt.closed,
        late: () => rt.links(),
        held: async (w) => {
          using check = await w.rtnetlink();
          return (await check.routes({ table: 100 })).length;
        },
      };
    },
  },
  {
    name: 'Nftables',
    code: 'ERR_NFTABLES_CLOSED',
    async start(world) {
      const nft = await world.nftables();
      await nft.run(nft.transaction().addTable(T).addSet({ family: 'inet', table: T.name, name: 's', type: 'ipv4_addr' }));
      const before: Promise<unknown>[] = [];
      for (let i = 0; i < N + 2; i++) before.push(nft.addElement(T, 's', { address: v4(i) }));
      before.push(nft.deleteElement(T, 's', { address: v4(0) }));
      before.push(nft.tables());
      return {
        before,
        close: () => nft.close(),
        closed: () => nft.closed,
        late: () => nft.tables(),
        held: async (w) => {
          using check = await w.nftables();
          return (await check.elements(T, 's')).length;
        },
      };
    },
  },
];

function closeContract(makeWorld: () => World): void {
  let world: World;
  beforeEach(() => {
    world = makeWorld();
  });
  afterEach(() => world.cleanup());

  it.each(cases.map((c) => [c.name, c] as const))('%s: calls made before close() finish, later ones are refused', async (_, c) => {
    const started = await c.start(world);
    started.close();
    expect(started.closed()).toBe(true);
    const late = rejection(started.late());
    if (started.lateSync) expect(thrown(started.lateSync)).toMatchObject({ code: c.code });
    const settled = await Promise.allSettled(started.before);
    expect(settled.filter((s) => s.status === 'rejected')).toEqual([]);
    expect(await late).toMatchObject({ code: c.code });
    // N + 2 added, one deleted: all of it happened.
    expect(await started.held(world)).toBe(N + 1);
    // A second close() is a no-op.
    started.close();
    expect(await rejection(started.late())).toMatchObject({ code: c.code });
  });
}

describe('close() on the fakes', () => {
  closeContract(fakeWorld);
});

describePrivileged('close() on the kernel', () => {
  closeContract(() => kernelWorld('close'));
});
