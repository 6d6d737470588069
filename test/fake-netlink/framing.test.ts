// Framing and malformed input: the fake handles bad lengths the way the kernel does (checked against 6.18), and its
// attribute parser never reads past a container.
import { describe, expect, it } from 'vitest';

import { parseAttrs, splitMessages } from '../../lib/testing/netlink-kernel/codec.js';
import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { ACK, CMD, EXCL, PROTO, REQ, adt, attr, create, header, msg, nest, setname } from './helpers/requests.js';
import { allMessages, codes, messages } from './helpers/replies.js';

describe('FakeIpsetKernel framing', () => {
  it('echoes seq, puts the request pid (or portId) in replies, and answers with an ACK of 16 echoed bytes', () => {
    const request = msg(CMD.protocol, REQ | ACK, [PROTO], 77, 1234);
    const [data, ack] = new FakeIpsetKernel().exchange(request).flatMap(messages);
    expect(data).toMatchObject({ type: 0x601, flags: 0, seq: 77, pid: 1234 });
    expect(ack).toMatchObject({ type: 2, flags: 0x100, seq: 77, pid: 1234, error: 0 });
    expect(Buffer.from(ack!.bytes.subarray(20))).toEqual(Buffer.from(request.subarray(0, 16)));
    const [, acked] = new FakeIpsetKernel({ portId: 99 }).exchange(request).flatMap(messages);
    expect(acked!.pid).toBe(99);
  });

  it('stops at a message whose length runs past the buffer, after answering the ones before it', () => {
    const good = msg(CMD.protocol, REQ | ACK, [PROTO], 1);
    const bad = Buffer.concat([header(100, 0x601, REQ | ACK, 2), Buffer.from([2, 0, 0, 0]), PROTO]);
    const replies = new FakeIpsetKernel().exchange(Buffer.concat([good, bad]));
    expect(allMessages(replies).map((m) => m.seq)).toEqual([1, 1]);
  });

  it('acks a message too short for nfgenmsg without running a command', () => {
    expect(codes(new FakeIpsetKernel().exchange(header(16, 0x609, REQ | ACK, 3)))).toEqual([0]);
  });

  it('ignores a truncated top-level attribute, so a PROTOCOL hidden behind it is missing (IPSET_ERR_PROTOCOL)', () => {
    const truncated = Buffer.concat([header(28, 0x601, REQ | ACK, 4), Buffer.from([2, 0, 0, 0]), Buffer.from([12, 0, 1, 0, 7, 0, 0, 0])]);
    expect(codes(new FakeIpsetKernel().exchange(truncated))).toEqual([-4097]);
  });

  it('rejects a DATA nest whose inner attribute overruns it (IPSET_ERR_PROTOCOL)', () => {
    const fake = new FakeIpsetKernel();
    fake.exchange(create('a', 'hash:ip'));
    // DATA holds 12 bytes of payload, but its IP nest claims 16.
    const data = Buffer.from([16, 0, 7, 0x80, 16, 0, 1, 0x80, 8, 0, 1, 0x40, 1, 2, 3, 4]);
    expect(codes(fake.exchange(msg(CMD.add, REQ | ACK | EXCL, [PROTO, setname('a'), data])))).toEqual([-4097]);
    const overlong = nest(7, Buffer.from([40, 0, 1, 0x80, 8, 0, 1, 0x40, 1, 2, 3, 4]));
    expect(codes(fake.exchange(msg(CMD.add, REQ | ACK | EXCL, [PROTO, setname('a'), overlong])))).toEqual([-4097]);
    expect(fake.dump().sets[0]!.entries).toEqual([]);
  });

  it('rejects an address without NLA_F_NET_BYTEORDER and a set name without NUL', () => {
    const fake = new FakeIpsetKernel();
    fake.exchange(create('a', 'hash:ip'));
    const hostOrder = nest(7, nest(1, attr(1, Uint8Array.of(1, 2, 3, 4))));
    expect(codes(fake.exchange(msg(CMD.add, REQ | ACK | EXCL, [PROTO, setname('a'), hostOrder])))).toEqual([-4097]);
    expect(codes(fake.exchange(msg(CMD.add, REQ | ACK | EXCL, [PROTO, attr(2, Buffer.from('a')), nest(7)])))).toEqual([-22]);
  });

  it('reads a request that is a view at an odd offset of a larger buffer', () => {
    const request = msg(CMD.protocol, REQ | ACK, [PROTO], 5);
    const big = new Uint8Array(request.length + 7);
    big.set(request, 3);
    expect(codes(new FakeIpsetKernel().exchange(big.subarray(3, 3 + request.length)))).toEqual([0]);
  });

  it('does not keep views into the caller buffer', () => {
    const fake = new FakeIpsetKernel();
    fake.exchange(create('a', 'hash:ip'));
    const request = adt(CMD.add, 'a', '10.0.0.1');
    fake.exchange(request);
    request.fill(0);
    expect(fake.dump().sets[0]!.entries).toEqual([{ ip: '10.0.0.1' }]);
  });
});

describe('fake-netlink codec', () => {
  it('reports the bytes that do not form a whole attribute', () => {
    const buf = Buffer.concat([attr(1, Uint8Array.of(7)), Buffer.from([12, 0, 2, 0, 1, 2])]);
    const list = parseAttrs(buf);
    expect(list.all.map((a) => a.type)).toEqual([1]);
    expect(list.trailing).toBe(6);
  });

  it('splits a buffer into messages at 4-byte boundaries', () => {
    const a = msg(CMD.protocol, REQ, [PROTO], 1);
    const b = msg(CMD.header, REQ, [PROTO, setname('abc')], 2);
    expect(splitMessages(Buffer.concat([a, b])).map((m) => [m.seq, m.len])).toEqual([
      [1, a.length],
      [2, b.length],
    ]);
  });
});

describe('FakeIpsetKernel.dump()', () => {
  it('returns frozen plain objects that later changes do not touch', () => {
    const fake = new FakeIpsetKernel();
    fake.exchange(create('a', 'hash:net', 10, { cadtFlags: 0x18, timeout: 0 }));
    fake.exchange(adt(CMD.add, 'a', 'fd00:0:0:1::5', { cidr: 64, comment: 'pod', bytes: 1n }));
    const snap = fake.dump();
    expect(snap).toEqual({
      sets: [
        {
          name: 'a',
          index: 0,
          type: 'hash:net',
          family: 'inet6',
          revision: 7,
          references: 0,
          options: { hashsize: 1024, maxelem: 65536, bucketsize: 12, timeout: 0, counters: true, comment: true, forceadd: false, skbinfo: false },
          entries: [{ ip: 'fd00:0:0:1::', cidr: 64, timeout: 0, bytes: 1n, packets: 0n, comment: 'pod' }],
        },
      ],
    });
    expect(Object.isFrozen(snap.sets[0]!.entries[0])).toBe(true);
    expect(() => (snap.sets as unknown as unknown[]).push(1)).toThrow(TypeError);
    fake.exchange(adt(CMD.del, 'a', 'fd00:0:0:1::', { cidr: 64 }));
    expect(snap.sets[0]!.entries).toHaveLength(1);
    expect(fake.dump().sets[0]!.entries).toHaveLength(0);
  });
});
