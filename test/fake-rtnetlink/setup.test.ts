// The fake namespace's options and setup API: lo up or down, IPv6 on or off, added links and addresses with the
// routes the kernel makes for them, argument checks, and the read-only snapshot.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../lib/errors.js';
import { FakeRtnetlink, type FakeRtnetlinkOptions } from '../../lib/testing/index.js';
import { allMessages, attrs, codes, firstError } from './helpers/replies.js';
import { T, dump, getLink, route } from './helpers/requests.js';

const routeList = (fake: FakeRtnetlink) => fake.dump().routes.map((r) => `${r.family} ${r.table} ${r.type} ${r.dst}/${r.dstLength} ${r.oif ?? '-'}`);

describe('FakeRtnetlink setup', () => {
  it('starts like a fresh namespace after `ip link set lo up`', () => {
    const fake = new FakeRtnetlink();
    expect(fake.dump().links).toEqual([{ index: 1, name: 'lo', loopback: true, up: true, flags: 0x10049, mtu: 65536, txqlen: 1000, address: '00:00:00:00:00:00' }]);
    expect(fake.dump().addresses.map((a) => `${a.address}/${a.prefixLength} ${a.scope}`)).toEqual(['127.0.0.1/8 254', '::1/128 254']);
    expect(routeList(fake)).toEqual(['4 255 2 127.0.0.0/8 1', '4 255 2 127.0.0.1/32 1', '4 255 3 127.255.255.255/32 1', '6 255 2 ::1/128 1']);
  });

  it('with lo down has no addresses, no IPv4 tables and no routes', () => {
    const fake = new FakeRtnetlink({ loopbackUp: false });
    expect(fake.dump().links[0]).toMatchObject({ up: false, flags: 0x8 });
    expect(fake.dump().addresses).toEqual([]);
    expect(fake.dump().routes).toEqual([]);
    expect(firstError(fake.exchange(route({ dst: '10.0.0.0', dstLen: 8 }, T.delroute)))).toMatchObject({ error: -3, msg: 'FIB table does not exist' });
  });

  it('with IPv6 off gives lo only its IPv4 address, and links no link-local address', () => {
    const fake = new FakeRtnetlink({ ipv6: false });
    fake.addLink({ name: 'eth0' });
    expect(fake.dump().addresses.map((a) => a.address)).toEqual(['127.0.0.1']);
    expect(fake.dump().routes.every((r) => r.family === 4)).toBe(true);
    expect(() => fake.addAddress('eth0', 'fd00::1/64')).toThrow(InvalidArgumentError);
  });

  it('gives an up link what addrconf gives it: an EUI-64 link-local address, fe80::/64 and ff00::/8', () => {
    const fake = new FakeRtnetlink();
    expect(fake.addLink({ name: 'eth0', address: '02:00:00:00:00:05' })).toBe(2);
    expect(fake.dump().addresses.filter((a) => a.link === 2)).toEqual([{ family: 6, link: 2, address: 'fe80::ff:fe00:5', prefixLength: 64, scope: 253, secondary: false }]);
    expect(routeList(fake).filter((r) => r.endsWith(' 2'))).toEqual(['6 254 1 fe80::/64 2', '6 255 2 fe80::ff:fe00:5/128 2', '6 255 5 ff00::/8 2']);
    expect(fake.addLink({ name: 'eth1', up: false })).toBe(3);
    expect(routeList(fake).filter((r) => r.endsWith(' 3'))).toEqual([]);
  });

  it('adds IPv4 addresses with their local, prefix and broadcast routes; a down link gets the local route only', () => {
    const fake = new FakeRtnetlink();
    fake.addLink({ name: 'eth0' });
    fake.addLink({ name: 'eth1', up: false });
    fake.addAddress('eth0', '10.0.0.1/24');
    fake.addAddress('eth0', '10.0.0.2/24');
    fake.addAddress(3, '10.1.0.1/24');
    expect(routeList(fake).filter((r) => r.startsWith('4 ') && !r.includes('127.'))).toEqual([
      '4 254 1 10.0.0.0/24 2',
      '4 255 2 10.0.0.1/32 2',
      '4 255 2 10.0.0.2/32 2',
      '4 255 3 10.0.0.255/32 2',
      '4 255 2 10.1.0.1/32 3',
    ]);
    expect(fake.dump().addresses.filter((a) => a.family === 4 && a.link === 2).map((a) => a.secondary)).toEqual([false, true]);
    expect(fake.dump().routes.find((r) => r.dst === '10.0.0.2')).toMatchObject({ prefsrc: '10.0.0.1', protocol: 2, scope: 254 });
  });

  it('adds IPv6 addresses before the link-local one, with their prefix and local routes', () => {
    const fake = new FakeRtnetlink();
    fake.addLink({ name: 'eth0', address: '02:00:00:00:00:05' });
    fake.addAddress('eth0', 'fd00::1/64');
    expect(fake.dump().addresses.filter((a) => a.link === 2).map((a) => a.address)).toEqual(['fd00::1', 'fe80::ff:fe00:5']);
    expect(fake.dump().routes.filter((r) => r.dst.startsWith('fd00'))).toEqual([
      { family: 6, table: 254, dst: 'fd00::', dstLength: 64, type: 1, scope: 0, protocol: 2, priority: 256, tos: 0, oif: 2 },
      { family: 6, table: 255, dst: 'fd00::1', dstLength: 128, type: 2, scope: 0, protocol: 2, priority: 0, tos: 0, oif: 2 },
    ]);
  });

  it('reports links by RTM_GETLINK with the flags, MTU, address and operstate given', () => {
    const fake = new FakeRtnetlink();
    fake.addLink({ name: 'eth0', index: 7, mtu: 9000, address: '02:aa:bb:cc:dd:ee', up: false });
    const [m] = allMessages(fake.exchange(getLink('eth0')));
    const b = Buffer.from(m!.bytes);
    expect([b.readUInt16LE(18), b.readInt32LE(20), b.readUInt32LE(24)]).toEqual([1, 7, 0x82]);
    const a = new Map(attrs(m!.bytes, 32).map((x) => [x.type, Buffer.from(x.value).toString('hex')]));
    expect([a.get(3), a.get(4), a.get(16), a.get(1), a.get(2)]).toEqual(['6574683000', '28230000', '02', '02aabbccddee', 'ffffffffffff']);
    expect(allMessages(fake.exchange(dump(T.getlink))).filter((x) => x.type === 16).length).toBe(2);
    expect(fake.addLink({ name: 'eth1' })).toBe(2);
  });

  it('hands out a frozen snapshot that later changes do not touch', () => {
    const fake = new FakeRtnetlink();
    const before = fake.dump();
    expect(Object.isFrozen(before) && Object.isFrozen(before.routes) && Object.isFrozen(before.routes[0])).toBe(true);
    expect(codes(fake.exchange(route({ dst: '10.0.0.0', dstLen: 8, type: 6, table: 100 })))).toEqual([0]);
    expect(before.routes.length).toBe(4);
    expect(fake.dump().routes.length).toBe(5);
  });

  it.each<[string, FakeRtnetlinkOptions, string]>([
    ['a page size that is too small', { dumpPageSize: 10 }, 'ERR_INVALID_ARG_VALUE'],
    ['a clock that is not a function', { now: 5 as unknown as () => number }, 'ERR_INVALID_ARG_TYPE'],
    ['a negative port id', { portId: -1 }, 'ERR_INVALID_ARG_VALUE'],
    ['loopbackUp that is not a boolean', { loopbackUp: 1 as unknown as boolean }, 'ERR_INVALID_ARG_TYPE'],
    ['ipv6 that is not a boolean', { ipv6: 'no' as unknown as boolean }, 'ERR_INVALID_ARG_TYPE'],
  ])('constructor rejects %s', (_name, options, code) => {
    expect(() => new FakeRtnetlink(options)).toThrow(expect.objectContaining({ code }));
  });

  it.each<[string, (f: FakeRtnetlink) => unknown, string]>([
    ['a link without a name', (f) => f.addLink({} as { name: string }), 'ERR_INVALID_ARG_TYPE'],
    ['a name of 16 bytes', (f) => f.addLink({ name: 'x'.repeat(16) }), 'ERR_INVALID_ARG_VALUE'],
    ['a name with a slash', (f) => f.addLink({ name: 'a/b' }), 'ERR_INVALID_ARG_VALUE'],
    ['a name that is taken', (f) => f.addLink({ name: 'lo' }), 'ERR_INVALID_ARG_VALUE'],
    ['an index that is taken', (f) => f.addLink({ name: 'x', index: 1 }), 'ERR_INVALID_ARG_VALUE'],
    ['an MTU of 10', (f) => f.addLink({ name: 'x', mtu: 10 }), 'ERR_INVALID_ARG_VALUE'],
    ['a malformed MAC', (f) => f.addLink({ name: 'x', address: '02:00:00:00:00' }), 'ERR_INVALID_ARG_VALUE'],
    ['an address on an unknown link', (f) => f.addAddress('nope', '10.0.0.1/24'), 'ERR_INVALID_ARG_VALUE'],
    ['an address without a length', (f) => f.addAddress('lo', '10.0.0.1'), 'ERR_INVALID_ARG_VALUE'],
    ['a length of 33', (f) => f.addAddress('lo', '10.0.0.1/33'), 'ERR_INVALID_ARG_VALUE'],
    ['an address lo already has', (f) => f.addAddress('lo', '127.0.0.1/8'), 'ERR_INVALID_ARG_VALUE'],
    ['an IPv6 address on lo', (f) => f.addAddress(1, 'fd00::1/64'), 'ERR_INVALID_ARG_VALUE'],
  ])('setup rejects %s', (_name, call, code) => {
    const fake = new FakeRtnetlink();
    expect(() => call(fake)).toThrow(InvalidArgumentError);
    expect(() => call(fake)).toThrow(expect.objectContaining({ code }));
    expect(fake.dump().links.length).toBe(1);
  });
});
