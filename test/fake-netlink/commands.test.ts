// Table-driven checks of every command and error code the fake models, each case on a fresh fake with a few sets.
import { describe, expect, it } from 'vitest';

import { FakeIpsetKernel } from '../../lib/testing/index.js';
import {
  ACK,
  CMD,
  CREATE,
  DUMP,
  EXCL,
  PROTO,
  REQ,
  adt,
  batch,
  be16,
  be32,
  create,
  entry,
  list,
  msg,
  nest,
  setname,
  simple,
  str,
  u8,
} from './helpers/requests.js';
import { allMessages, attrs, codes, topAttrs } from './helpers/replies.js';

function seeded(): FakeIpsetKernel {
  const fake = new FakeIpsetKernel({ now: () => 0 });
  const setup = [
    create('ip4', 'hash:ip', 2, { cadtFlags: 0x10 }),
    create('ip6', 'hash:ip', 10),
    create('net4', 'hash:net', 2),
    create('port4', 'hash:ip,port', 2),
    create('small', 'hash:ip', 2, { maxelem: 2 }),
    adt(CMD.add, 'ip4', '10.0.0.1', { comment: 'a' }),
    adt(CMD.add, 'net4', '10.0.0.0', { cidr: 8 }),
    adt(CMD.add, 'net4', '10.1.0.0', { cidr: 16, nomatch: true }),
    adt(CMD.add, 'port4', '10.0.0.1', { port: 80, proto: 6 }),
    adt(CMD.add, 'small', '1.1.1.1'),
    adt(CMD.add, 'small', '1.1.1.2'),
  ];
  for (const r of setup) expect(codes(fake.exchange(r))).toEqual([0]);
  return fake;
}

const ENOENT = -2;
const EEXIST = -17;
const EINVAL = -22;
const EOPNOTSUPP = -95;

const cases: [string, Uint8Array, number[]][] = [
  ['protocol answers and acks', simple(CMD.protocol, []), [0]],
  ['protocol without the attribute', msg(CMD.protocol, REQ | ACK, []), [-4097]],
  ['create with EXCL of an existing set', create('ip4', 'hash:ip', 2, { cadtFlags: 0x10 }), [EEXIST]],
  ['create without EXCL of an identical set', create('ip4', 'hash:ip', 2, { cadtFlags: 0x10 }, REQ | ACK | CREATE), [0]],
  ['create without EXCL of a different set', create('ip4', 'hash:ip', 2, {}, REQ | ACK | CREATE), [EEXIST]],
  ['create of an unknown type', create('x', 'hash:mac', 2), [-4098]],
  ['create of a too new revision', create('x', 'hash:ip', 2, { revision: 7 }), [-4098]],
  ['create of a bad family', create('x', 'hash:ip', 7), [-4106]],
  ['create with a 32-byte name', create('n'.repeat(32), 'hash:ip', 2), [EINVAL]],
  ['add present with EXCL', adt(CMD.add, 'ip4', '10.0.0.1'), [-4103]],
  ['add present without EXCL', adt(CMD.add, 'ip4', '10.0.0.1', {}, REQ | ACK), [0]],
  ['add to a missing set', adt(CMD.add, 'nope', '10.0.0.1'), [ENOENT]],
  ['add a port to hash:ip', adt(CMD.add, 'ip4', '10.0.0.2', { port: 1 }), [-4097]],
  ['add an IPv4 address to an inet6 set', adt(CMD.add, 'ip6', '10.0.0.2'), [-4097]],
  ['add a timeout to a set without timeouts', adt(CMD.add, 'ip4', '10.0.0.2', { timeout: 1 }), [-4107]],
  ['add counters to a set without counters', adt(CMD.add, 'ip4', '10.0.0.2', { bytes: 1n }), [-4111]],
  ['add a comment to a set without comments', adt(CMD.add, 'ip6', 'fd00::1', { comment: 'x' }), [-4112]],
  ['add 0.0.0.0 to hash:ip', adt(CMD.add, 'ip4', '0.0.0.0'), [-4353]],
  ['add an inet6 range to hash:ip', adt(CMD.add, 'ip6', 'fd00::1', { ipTo: 'fd00::2' }), [-4356]],
  ['add a /64 to an inet6 hash:ip', adt(CMD.add, 'ip6', 'fd00::1', { cidr: 64 }), [-4104]],
  ['add /0 to hash:net', adt(CMD.add, 'net4', '10.0.0.0', { cidr: 0 }), [-4104]],
  ['add /33 to hash:net', adt(CMD.add, 'net4', '10.0.0.0', { cidr: 33 }), [-4104]],
  ['add to hash:ip,port without proto', adt(CMD.add, 'port4', '10.0.0.2', { port: 1 }), [-4355]],
  ['add to hash:ip,port with proto 0', adt(CMD.add, 'port4', '10.0.0.2', { port: 1, proto: 0 }), [-4354]],
  ['add to hash:ip,port without port', adt(CMD.add, 'port4', '10.0.0.2', { proto: 6 }), [-4097]],
  ['add beyond maxelem', adt(CMD.add, 'small', '1.1.1.3'), [-4352]],
  ['add present to a full set without EXCL', adt(CMD.add, 'small', '1.1.1.1', {}, REQ | ACK), [0]],
  ['del missing with EXCL', adt(CMD.del, 'ip4', '10.9.9.9'), [-4103]],
  ['del missing without EXCL', adt(CMD.del, 'ip4', '10.9.9.9', {}, REQ | ACK), [0]],
  ['del present', adt(CMD.del, 'ip4', '10.0.0.1'), [0]],
  ['test member', adt(CMD.test, 'ip4', '10.0.0.1', {}, REQ | ACK), [0]],
  ['test non-member (no ACK asked, the error still comes)', adt(CMD.test, 'ip4', '10.0.0.2', {}, REQ), [-4103]],
  ['test folds type errors into "not a member"', adt(CMD.test, 'ip4', '10.0.0.1', { timeout: 1 }, REQ | ACK), [-4103]],
  ['test of an address inside a hash:net prefix', adt(CMD.test, 'net4', '10.200.1.1', {}, REQ | ACK), [0]],
  ['test of an address inside a nomatch prefix', adt(CMD.test, 'net4', '10.1.2.3', {}, REQ | ACK), [-4103]],
  ['test with the nomatch flag of an address in a match prefix', adt(CMD.test, 'net4', '10.200.1.1', { nomatch: true }, REQ | ACK), [-4103]],
  ['test with the nomatch flag of an address in a nomatch prefix', adt(CMD.test, 'net4', '10.1.2.3', { nomatch: true }, REQ | ACK), [0]],
  ['test of a prefix that is not stored', adt(CMD.test, 'net4', '10.0.0.0', { cidr: 9 }, REQ | ACK), [-4103]],
  ['test of hash:ip,port with another proto', adt(CMD.test, 'port4', '10.0.0.1', { port: 80, proto: 17 }, REQ | ACK), [-4103]],
  ['destroy a missing set with EXCL', simple(CMD.destroy, [setname('nope')], REQ | ACK | EXCL), [ENOENT]],
  ['destroy a missing set without EXCL', simple(CMD.destroy, [setname('nope')]), [0]],
  ['destroy all sets', simple(CMD.destroy, []), [0]],
  ['flush a missing set', simple(CMD.flush, [setname('nope')]), [ENOENT]],
  ['flush all sets', simple(CMD.flush, []), [0]],
  ['rename onto an existing name', simple(CMD.rename, [setname('ip4'), str(3, 'ip6')]), [-4101]],
  ['rename a missing set', simple(CMD.rename, [setname('nope'), str(3, 'x')]), [ENOENT]],
  ['swap sets of different types', simple(CMD.swap, [setname('ip4'), str(3, 'net4')]), [-4102]],
  ['swap sets of different families', simple(CMD.swap, [setname('ip4'), str(3, 'ip6')]), [-4102]],
  ['swap with a missing second set', simple(CMD.swap, [setname('ip4'), str(3, 'nope')]), [-4101]],
  ['swap two hash:ip inet sets', simple(CMD.swap, [setname('ip4'), str(3, 'small')]), [0]],
  ['header of a missing set', simple(CMD.header, [setname('nope')]), [ENOENT]],
  ['type of an unknown type', simple(CMD.type, [str(3, 'list:set'), u8(5, 2)]), [-4098]],
  ['get by name needs protocol 7', msg(CMD.getByName, REQ | ACK, [u8(1, 6), setname('ip4')]), [-4097]],
  ['get by index of an empty slot', simple(CMD.getByIndex, [be16(11, 300)]), [ENOENT]],
  ['list of a missing set, with ACK: two errors', msg(CMD.list, REQ | ACK | DUMP, [PROTO, setname('nope')]), [ENOENT, ENOENT]],
  ['list of a missing set, without ACK: one error', msg(CMD.list, REQ | DUMP, [PROTO, setname('nope')]), [ENOENT]],
  ['command 0', simple(0, []), [EOPNOTSUPP]],
  ['command past IPSET_MSG_MAX', simple(16, []), [EINVAL]],
  ['protocol 5 is too old', msg(CMD.add, REQ | ACK | EXCL, [u8(1, 5), setname('ip4'), entry('10.0.0.3')]), [-4097]],
  ['ADT without top-level LINENO', msg(CMD.add, REQ | ACK | EXCL, [PROTO, setname('ip4'), nest(8, entry('10.0.0.3'))]), [-4097]],
  ['ADT and DATA together', msg(CMD.add, REQ | ACK | EXCL, [PROTO, setname('ip4'), be32(9, 0), entry('10.0.0.3'), nest(8, entry('10.0.0.4'))]), [-4097]],
  ['TEST with ADT', msg(CMD.test, REQ | ACK, [PROTO, setname('ip4'), be32(9, 0), nest(8, entry('10.0.0.1'))]), [-4097]],
  ['a message without NLM_F_REQUEST is only acked', msg(CMD.add, ACK, [PROTO, setname('nope'), entry('1.1.1.1')]), [0]],
];

describe('FakeIpsetKernel commands', () => {
  it.each(cases)('%s', (_name, request, expected) => {
    expect(codes(seeded().exchange(request))).toEqual(expected);
  });

  it('answers every message of one sendmsg in order', () => {
    const fake = seeded();
    const buf = Buffer.concat([adt(CMD.add, 'ip4', '10.0.0.5'), adt(CMD.add, 'ip4', '10.0.0.5'), adt(CMD.del, 'ip4', '10.0.0.5')]);
    expect(codes(fake.exchange(buf))).toEqual([0, -4103, 0]);
  });

  it('stops a batch at the first failing entry and keeps the earlier ones', () => {
    const fake = seeded();
    const r = fake.exchange(batch(CMD.add, 'ip4', [entry('10.0.0.7', { lineno: 1 }), entry('10.0.0.1', { lineno: 2 }), entry('10.0.0.8', { lineno: 3 })]));
    expect(codes(r)).toEqual([-4103]);
    const ips = fake.dump().sets.find((s) => s.name === 'ip4')!.entries.map((e) => e.ip);
    expect(ips).toEqual(['10.0.0.1', '10.0.0.7']);
  });

  it('keeps references with the name across a swap and refuses destroy and rename of a referenced set', () => {
    const fake = seeded();
    fake.setReferenced('ip4');
    expect(codes(fake.exchange(simple(CMD.destroy, [setname('ip4')], REQ | ACK | EXCL)))).toEqual([-4100]);
    expect(codes(fake.exchange(simple(CMD.destroy, [])))).toEqual([-4100]);
    expect(codes(fake.exchange(simple(CMD.rename, [setname('ip4'), str(3, 'x')])))).toEqual([-4108]);
    expect(codes(fake.exchange(simple(CMD.swap, [setname('ip4'), str(3, 'small')])))).toEqual([0]);
    const sets = fake.dump().sets;
    expect(sets.find((s) => s.name === 'ip4')).toMatchObject({ references: 1, options: { maxelem: 2 } });
    expect(sets.find((s) => s.name === 'small')).toMatchObject({ references: 0, options: { comment: true } });
    fake.setReferenced('ip4', 2);
    // REFERENCES in the header counts the users, as the kernel reports two `iptables -m set` rules as 2.
    const header = topAttrs(allMessages(fake.exchange(list('ip4')))[0]!).find((a) => a.type === 7)!;
    const refs = attrs(header.value).find((a) => a.type === 25)!;
    expect(Buffer.from(refs.value).readUInt32BE()).toBe(2);
    expect(codes(fake.exchange(simple(CMD.destroy, [setname('ip4')])))).toEqual([-4100]);
    fake.setReferenced('ip4', 0);
    expect(codes(fake.exchange(simple(CMD.destroy, [setname('ip4')], REQ | ACK | EXCL)))).toEqual([0]);
  });

  it('reuses the lowest free index, as the kernel does', () => {
    const fake = seeded();
    expect(codes(fake.exchange(simple(CMD.destroy, [setname('ip6')])))).toEqual([0]);
    expect(codes(fake.exchange(create('again', 'hash:net', 10)))).toEqual([0]);
    expect(fake.dump().sets.map((s) => [s.name, s.index])).toEqual([
      ['ip4', 0],
      ['again', 1],
      ['net4', 2],
      ['port4', 3],
      ['small', 4],
    ]);
  });

  it('expands ranges and prefixes the way the kernel does', () => {
    const fake = seeded();
    expect(codes(fake.exchange(adt(CMD.add, 'ip4', '10.0.1.1', { cidr: 30 })))).toEqual([0]);
    expect(codes(fake.exchange(adt(CMD.add, 'net4', '192.168.0.1', { ipTo: '192.168.0.6' })))).toEqual([0]);
    expect(codes(fake.exchange(adt(CMD.add, 'port4', '10.0.0.2', { ipTo: '10.0.0.3', port: 5, proto: 6 })))).toEqual([0]);
    const byName = new Map(fake.dump().sets.map((s) => [s.name, s.entries]));
    expect(byName.get('ip4')!.map((e) => e.ip)).toEqual(['10.0.0.1', '10.0.1.0', '10.0.1.1', '10.0.1.2', '10.0.1.3']);
    expect(byName.get('net4')!.slice(2).map((e) => `${e.ip}/${e.cidr}`)).toEqual(['192.168.0.1/32', '192.168.0.2/31', '192.168.0.4/31', '192.168.0.6/32']);
    expect(byName.get('port4')!.map((e) => `${e.ip}:${e.proto}:${e.port}`)).toEqual(['10.0.0.1:6:80', '10.0.0.2:6:5', '10.0.0.3:6:5']);
  });

  it('stores port 0 for protocols without ports and keeps ICMP type/code', () => {
    const fake = seeded();
    expect(codes(fake.exchange(adt(CMD.add, 'port4', '10.0.0.9', { port: 5, proto: 47 })))).toEqual([0]);
    expect(codes(fake.exchange(adt(CMD.add, 'port4', '10.0.0.9', { port: 0x0800, proto: 1 })))).toEqual([0]);
    expect(codes(fake.exchange(adt(CMD.add, 'port4', '10.0.0.9', { port: 0, proto: 47 })))).toEqual([-4103]);
    const entries = fake.dump().sets.find((s) => s.name === 'port4')!.entries.slice(1);
    expect(entries).toEqual([
      { ip: '10.0.0.9', port: 0, proto: 47 },
      { ip: '10.0.0.9', port: 0x0800, proto: 1 },
    ]);
  });
});
