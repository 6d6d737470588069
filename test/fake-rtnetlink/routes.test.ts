// Route semantics without root: what makes two routes duplicates, what replace and delete match, and the errno and
// extended ACK message of each check (each case was first answered by the kernel, see kernel.test.ts).
import { describe, expect, it } from 'vitest';

import { FakeRtnetlink } from '../../lib/testing/index.js';
import { codes, firstError, routesOf } from './helpers/replies.js';
import { ACK, APPEND, CREATE, REPLACE, REQ, T, attr, dump, route, type RouteOptions } from './helpers/requests.js';

/** withLinks is a namespace with d0 (up, 10.0.0.1/24, fd00::1/64) and d1 (down). */
function withLinks(): FakeRtnetlink {
  const fake = new FakeRtnetlink();
  fake.addLink({ name: 'd0', address: '02:00:00:00:00:05' });
  fake.addLink({ name: 'd1', address: '02:00:00:00:00:06', up: false });
  fake.addAddress('d0', '10.0.0.1/24');
  fake.addAddress('d0', 'fd00::1/64');
  return fake;
}

const add = (fake: FakeRtnetlink, o: RouteOptions) => codes(fake.exchange(route(o)))[0];
const del = (fake: FakeRtnetlink, o: RouteOptions) => codes(fake.exchange(route(o, T.delroute)))[0];
const table = (fake: FakeRtnetlink, id: number, family: 4 | 6 = 4) =>
  fake.dump().routes.filter((r) => r.table === id && r.family === family);

const NET = { dst: '10.9.0.0', dstLen: 24 } as const;
const NET6 = { family: 6, dst: 'fd09::', dstLen: 64 } as const;

describe('FakeRtnetlink IPv4 routes', () => {
  it('refuses a duplicate with NLM_F_EXCL (EEXIST), and an identical route even without it', () => {
    const fake = withLinks();
    expect(add(fake, { ...NET, oif: 2, scope: 253 })).toBe(0);
    expect(add(fake, { ...NET, oif: 2, scope: 253 })).toBe(-17);
    expect(add(fake, { ...NET, oif: 2, scope: 253, flags: REQ | ACK | CREATE })).toBe(-17);
  });

  it('keys a route by table, prefix, tos and priority; without EXCL another type or nexthop is a second route', () => {
    const fake = withLinks();
    expect(add(fake, { ...NET, oif: 2, scope: 253 })).toBe(0);
    expect(add(fake, { ...NET, oif: 2, scope: 253, priority: 5 })).toBe(0);
    expect(add(fake, { ...NET, oif: 2, scope: 253, tos: 4 })).toBe(0);
    expect(add(fake, { ...NET, oif: 2, scope: 253, table: 100 })).toBe(0);
    expect(add(fake, { ...NET, type: 6, flags: REQ | ACK | CREATE })).toBe(0);
    // tos descending, then the newest of a (tos, priority) group first, then priority ascending.
    expect(table(fake, 254).filter((r) => r.dst === '10.9.0.0').map((r) => [r.tos, r.type, r.priority])).toEqual([
      [4, 1, 0],
      [0, 6, 0],
      [0, 1, 0],
      [0, 1, 5],
    ]);
  });

  it('replaces the first route of the group; NLM_F_APPEND adds at its end', () => {
    const fake = withLinks();
    add(fake, { ...NET, oif: 2, scope: 253 });
    add(fake, { ...NET, type: 6, flags: REQ | ACK | CREATE });
    expect(add(fake, { ...NET, oif: 2, scope: 253, protocol: 4, flags: REQ | ACK | CREATE | REPLACE })).toBe(0);
    expect(add(fake, { ...NET, oif: 2, scope: 253, protocol: 5, flags: REQ | ACK | CREATE | APPEND })).toBe(0);
    expect(table(fake, 254).filter((r) => r.dst === '10.9.0.0').map((r) => r.protocol)).toEqual([4, 3, 5]);
    // Replacing with a route identical to one that is not first is EEXIST; identical to the first is a no-op.
    expect(add(fake, { ...NET, oif: 2, scope: 253, flags: REQ | ACK | CREATE | REPLACE })).toBe(-17);
    expect(add(fake, { ...NET, oif: 2, scope: 253, protocol: 4, flags: REQ | ACK | CREATE | REPLACE })).toBe(0);
    expect(add(fake, { dst: '10.8.0.0', dstLen: 24, oif: 2, scope: 253, flags: REQ | ACK | REPLACE })).toBe(-2);
  });

  it('puts a table above 255 in RTA_TABLE with rtm_table RT_TABLE_COMPAT, and dumps tables by hash bucket', () => {
    const fake = withLinks();
    add(fake, { ...NET, oif: 2, scope: 253, table: 44 });
    add(fake, { ...NET, oif: 2, scope: 253, table: 300 });
    add(fake, { ...NET, oif: 2, scope: 253, table: 100 });
    const dumped = routesOf(fake.exchange(dump(T.getroute, 2))).map((r) => r.table);
    expect(dumped.slice(0, 3)).toEqual([300, 44, 100]);
    const raw = fake.exchange(dump(T.getroute, 2))[0]!;
    expect(raw[16 + 4]).toBe(252);
  });

  it.each([
    ['an unknown oif', { ...NET, oif: 99, scope: 253 }, -19, undefined],
    ['no oif and no gateway', { ...NET, scope: 253 }, -19, undefined],
    ['an oif that is down', { ...NET, oif: 3, scope: 253 }, -100, 'Device for nexthop is not up'],
    ['a gateway not on any link', { ...NET, gateway: '10.7.0.1' }, -101, 'Nexthop has invalid gateway'],
    ['a gateway that is a broadcast address', { ...NET, gateway: '10.0.0.255' }, -22, 'Nexthop has invalid gateway'],
    ['a gateway with host scope', { ...NET, gateway: '10.0.0.7', oif: 2, scope: 254 }, -22, 'Route with host scope can not have a gateway'],
    ['prefix length 33', { dst: '10.9.0.0', dstLen: 33, oif: 2 }, -22, 'Invalid prefix length'],
    ['host bits in the destination', { dst: '10.9.0.1', dstLen: 24, oif: 2 }, -22, 'Invalid prefix for given prefix length'],
    ['a blackhole with an oif', { ...NET, type: 6, oif: 2 }, -22, 'Gateway, device and multipath can not be specified for this route type'],
    ['a local route with universe scope', { ...NET, type: 2, oif: 1 }, -22, 'Invalid scope'],
    ['route type 12', { ...NET, type: 12, oif: 2 }, -22, 'Invalid route type'],
    ['ECN bits in tos', { ...NET, tos: 1, oif: 2 }, -22, 'Invalid dsfield (tos): ECN bits must be 0'],
    ['a prefsrc that is not local', { ...NET, oif: 2, scope: 253, prefsrc: '10.0.0.9' }, -22, 'Invalid prefsrc address'],
    ['a 2-byte RTA_DST', { dstLen: 24, oif: 2, extra: [attr(1, Uint8Array.of(10, 9))] }, -34, 'Attribute failed policy validation'],
  ])('refuses %s', (_name, o, errno, msg) => {
    const fake = withLinks();
    const e = firstError(fake.exchange(route(o as RouteOptions)));
    expect(e.error).toBe(errno);
    expect(e.msg).toBe(msg);
    expect(table(fake, 254).map((r) => r.dst)).toEqual(['10.0.0.0']);
  });

  it('accepts a gateway on a connected network and reports the device it resolved', () => {
    const fake = withLinks();
    expect(add(fake, { ...NET, gateway: '10.0.0.7' })).toBe(0);
    expect(table(fake, 254).find((r) => r.dst === '10.9.0.0')).toMatchObject({ gateway: '10.0.0.7', oif: 2 });
  });

  it('deletes the first route a delete matches: unset fields match anything, set ones must be equal', () => {
    const fake = withLinks();
    add(fake, { ...NET, oif: 2, scope: 253 });
    add(fake, { ...NET, oif: 2, scope: 253, priority: 7 });
    expect(del(fake, { ...NET, scope: 0 })).toBe(-3);
    expect(del(fake, { ...NET, protocol: 2 })).toBe(-3);
    expect(del(fake, { ...NET, priority: 7 })).toBe(0);
    expect(del(fake, { ...NET, priority: 7 })).toBe(-3);
    expect(del(fake, NET)).toBe(0);
    expect(del(fake, NET)).toBe(-3);
    expect(firstError(fake.exchange(route({ ...NET, table: 77 }, T.delroute)))).toMatchObject({ error: -3, msg: 'FIB table does not exist' });
  });

  it("keeps podnet's local default route in table 100 once however often it is replaced", () => {
    const fake = withLinks();
    const local: RouteOptions = { dst: '0.0.0.0', dstLen: 0, type: 2, scope: 254, oif: 1, table: 100, flags: REQ | ACK | CREATE | REPLACE };
    expect(codes(fake.exchange(Buffer.concat([route(local), route(local)])))).toEqual([0, 0]);
    expect(table(fake, 100)).toEqual([{ family: 4, table: 100, dst: '0.0.0.0', dstLength: 0, type: 2, scope: 254, protocol: 3, priority: 0, tos: 0, oif: 1 }]);
    expect(del(fake, { dst: '0.0.0.0', dstLen: 0, table: 100 })).toBe(0);
    expect(table(fake, 100)).toEqual([]);
  });
});

describe('FakeRtnetlink IPv6 routes', () => {
  it('calls any route of the same prefix and metric a duplicate under EXCL, and the same nexthop without it', () => {
    const fake = withLinks();
    expect(add(fake, { ...NET6, oif: 2 })).toBe(0);
    expect(add(fake, { ...NET6, type: 6 })).toBe(-17);
    expect(add(fake, { ...NET6, oif: 2, protocol: 4, flags: REQ | ACK | CREATE })).toBe(-17);
    expect(add(fake, { ...NET6, oif: 1, flags: REQ | ACK | CREATE })).toBe(0);
    expect(add(fake, { ...NET6, type: 6, flags: REQ | ACK | CREATE })).toBe(-17);
    expect(add(fake, { ...NET6, oif: 2, priority: 5 })).toBe(0);
    expect(table(fake, 254, 6).filter((r) => r.dst === 'fd09::').map((r) => [r.priority, r.oif])).toEqual([
      [5, 2],
      [1024, 2],
      [1024, 1],
    ]);
  });

  it('masks host bits, defaults the metric to 1024 and the protocol to boot, and puts reject routes on lo', () => {
    const fake = withLinks();
    expect(add(fake, { family: 6, dst: 'fd09::1', dstLen: 64, oif: 2, protocol: 0 })).toBe(0);
    expect(add(fake, { family: 6, dst: 'fd0a::', dstLen: 64, type: 6, oif: 2 })).toBe(0);
    expect(table(fake, 254, 6).filter((r) => r.dst === 'fd09::' || r.dst === 'fd0a::')).toEqual([
      expect.objectContaining({ dst: 'fd09::', priority: 1024, protocol: 3, oif: 2 }),
      expect.objectContaining({ dst: 'fd0a::', type: 6, oif: 1 }),
    ]);
  });

  it.each([
    ['an unknown oif', { ...NET6, oif: 99 }, -19, undefined],
    ['an oif that is down', { ...NET6, oif: 3 }, -100, 'Nexthop device is not up'],
    ['a gateway not on any link', { ...NET6, gateway: 'fd07::1' }, -113, undefined],
    ['a local gateway', { ...NET6, gateway: 'fd00::1' }, -22, 'Gateway can not be a local address'],
    ['a link-local gateway without oif', { ...NET6, gateway: 'fe80::9' }, -22, 'Egress device not specified'],
    ['a multicast gateway', { ...NET6, oif: 2, gateway: 'ff02::1' }, -22, 'Invalid gateway address'],
    ['gateway ::1', { ...NET6, gateway: '::1' }, -22, 'Egress device can not be loopback device for this route'],
    ['a tos', { ...NET6, oif: 2, tos: 4 }, -22, 'Invalid dsfield (tos): option not available for IPv6'],
    ['a replace of a prefix that has no node', { ...NET6, oif: 2, flags: REQ | ACK | REPLACE }, -2, 'Can not replace route - no match found'],
    ['a prefsrc that is not local', { ...NET6, oif: 2, prefsrc: 'fd00::9' }, -22, 'Invalid source address'],
  ])('refuses %s', (_name, o, errno, msg) => {
    const fake = withLinks();
    const e = firstError(fake.exchange(route(o as RouteOptions)));
    expect(e).toMatchObject({ error: errno });
    expect(e.msg).toBe(msg);
  });

  it('dumps prefixes in the radix tree order: a prefix after the ones inside it, the default route last', () => {
    const fake = withLinks();
    for (const [dst, dstLen] of [['::', 0], ['fd00::', 16], ['fd00::', 32], ['fd00:1::', 32], ['8000::', 1], ['::', 1]] as const) {
      expect(add(fake, { family: 6, dst, dstLen, oif: 2, table: 100 })).toBe(0);
    }
    expect(routesOf(fake.exchange(dump(T.getroute, 10))).filter((r) => r.table === 100).map((r) => r.dst)).toEqual([
      '::/1',
      'fd00::/32',
      'fd00:1::/32',
      'fd00::/16',
      '8000::/1',
      '::/0',
    ]);
  });

  it('deletes ESRCH for a missing route, but ENOENT for ::/0 without a default route (the root null entry)', () => {
    const fake = withLinks();
    expect(del(fake, { ...NET6 })).toBe(-3);
    expect(del(fake, { family: 6, dst: '::', dstLen: 0 })).toBe(-2);
    expect(del(fake, { family: 6, dst: '::', dstLen: 0, oif: 2 })).toBe(-3);
    expect(add(fake, { ...NET6, oif: 2 })).toBe(0);
    expect(del(fake, { family: 6, dst: 'fd09::1', dstLen: 64, scope: 253, type: 6 })).toBe(0);
  });

  it('refuses IPv6 routes through a device when IPv6 is off, but takes reject routes', () => {
    const fake = new FakeRtnetlink({ ipv6: false });
    const e = firstError(fake.exchange(route({ family: 6, dst: '::', dstLen: 0, type: 2, oif: 1, table: 100 })));
    expect(e).toMatchObject({ error: -13, msg: 'IPv6 is disabled on nexthop device' });
    expect(add(fake, { ...NET6, type: 6 })).toBe(0);
  });
});
