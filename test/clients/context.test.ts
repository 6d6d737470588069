// Every client's kernel refusals are KernelErrors with one context shape, on the kernel and on the fakes: the
// operation, what it was about, the client's namespace, Node's errno and syscall; an error a client re-raises with
// the caller's context keeps the kernel's own as its cause.
import { describe, expect, it } from 'vitest';

import { KernelError, type NftTableRef, type RouteSpec } from '../../lib/index.js';
import { describePrivileged } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';
import { type World, fakeWorld, kernelWorld, worldPerTest } from './worlds.js';

const T: NftTableRef = { family: 'inet', name: 'podnet-ctx' };
const ROUTE: RouteSpec = { dst: '10.9.0.0', dstLength: 16, table: 100, type: 'blackhole' };
const IP = { ip: '10.0.0.1' };

interface Case {
  name: string;
  /** What the error carries besides errno and syscall. */
  expected: { operation: string; object: unknown; code: string; errno: number };
  /** Whether the client re-raises the kernel's error with context (and so keeps it as the cause). */
  wrapped: boolean;
  /** Makes the failure; returns the error and the client's namespace path. */
  run(world: World, opened: { close(): void }[]): Promise<{ err: unknown; netns: string | undefined }>;
}

const cases: Case[] = [
  {
    name: 'Ipset add of an entry in the set',
    expected: { operation: 'add', object: IP, code: 'IPSET_ERR_EXIST', errno: -4103 },
    wrapped: false,
    async run(w, o) {
      const ipset = await w.ipset();
      o.push(ipset);
      await ipset.create('s', { type: 'hash:ip' });
      await ipset.add('s', IP);
      return { err: await rejection(ipset.add('s', IP)), netns: ipset.netns?.path };
    },
  },
  {
    name: 'Ipset add to a set that is not there (the set lookup re-raised as the add)',
    expected: { operation: 'add', object: undefined, code: 'ENOENT', errno: -2 },
    wrapped: true,
    async run(w, o) {
      const ipset = await w.ipset();
      o.push(ipset);
      return { err: await rejection(ipset.add('missing', IP)), netns: ipset.netns?.path };
    },
  },
  {
    name: 'Rtnetlink addRoute of a route that is there',
    expected: { operation: 'addRoute', object: ROUTE, code: 'EEXIST', errno: -17 },
    wrapped: true,
    async run(w, o) {
      const rt = await w.rtnetlink();
      o.push(rt);
      await rt.addRoute(ROUTE);
      return { err: await rejection(rt.addRoute(ROUTE)), netns: rt.netns?.path };
    },
  },
  {
    name: 'Nftables addElement of an element that is there',
    expected: { operation: 'run', object: expect.objectContaining({ table: T, set: 's' }), code: 'EEXIST', errno: -17 },
    wrapped: true,
    async run(w, o) {
      const nft = await w.nftables();
      o.push(nft);
      await nft.run(nft.transaction().addTable(T).addSet({ family: 'inet', table: T.name, name: 's', type: 'ipv4_addr' }));
      await nft.addElement(T, 's', { address: '10.0.0.1' });
      return { err: await rejection(nft.addElement(T, 's', { address: '10.0.0.1' })), netns: nft.netns?.path };
    },
  },
];

function contextContract(makeWorld: () => World): void {
  const each = worldPerTest(makeWorld);

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_, c) => {
    const { err, netns } = await c.run(each.world, each.opened);
    expect(err).toBeInstanceOf(KernelError);
    expect(err).toMatchObject({ ...c.expected, syscall: 'sendmsg', netns });
    const cause = (err as Error).cause;
    if (c.wrapped) expect(cause).toBeInstanceOf(KernelError);
    else expect(cause).toBeUndefined();
  });
}

describe('kernel error context on the fakes', () => {
  contextContract(fakeWorld);
});

describePrivileged('kernel error context on the kernel', () => {
  contextContract(() => kernelWorld('ctx'));
});
