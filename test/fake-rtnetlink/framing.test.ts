// Framing: ACKs and errors as an EXT_ACK socket gets them, what is only acknowledged, unknown and unmodelled types,
// dumps cut into datagrams (and the pages the reader only gets after the rest of its sendmsg), and bad bytes that
// must never make exchange() throw.
import { describe, expect, it } from 'vitest';

import { FakeRtnetlink } from '../../lib/testing/index.js';
import { mulberry32 } from '../helpers/random.js';
import { allMessages, codes, errorInfo, firstError, messages } from './helpers/replies.js';
import { header } from '../fake-netlink/helpers/requests.js';
import { ACK, DUMP, REQ, T, dump, getLink, msg, route, rule } from './helpers/requests.js';

/** withRoutes has n blackhole routes in table 100, enough to fill several small dump pages. */
function withRoutes(n: number, options = {}): FakeRtnetlink {
  const fake = new FakeRtnetlink(options);
  for (let i = 0; i < n; i++) fake.exchange(route({ dst: `10.${i}.0.0`, dstLen: 16, type: 6, table: 100 }));
  return fake;
}

describe('FakeRtnetlink framing', () => {
  it('acknowledges success with error 0 and only the request header (NLM_F_CAPPED), echoing seq and pid', () => {
    const request = Buffer.from(msg(T.getlink, REQ | ACK, Buffer.alloc(16), 77, 1234));
    request.writeInt32LE(1, 20);
    const [link, ack] = new FakeRtnetlink().exchange(request).flatMap(messages);
    expect(link).toMatchObject({ type: 16, flags: 0, seq: 77, pid: 1234 });
    expect(ack).toMatchObject({ type: 2, flags: 0x100, seq: 77, pid: 1234, error: 0 });
    expect(ack!.bytes.length).toBe(36);
    expect(Buffer.from(ack!.bytes.subarray(20))).toEqual(Buffer.from(request.subarray(0, 16)));
    expect(new FakeRtnetlink({ portId: 99 }).exchange(request).flatMap(messages)[1]!.pid).toBe(99);
  });

  it('echoes a failed request whole, padded to 4 bytes, and sets NLM_F_ACK_TLVS only when TLVs follow', () => {
    const fake = new FakeRtnetlink();
    const short = msg(T.newrule, REQ | ACK, Uint8Array.of(2, 0, 0));
    const [m] = allMessages(fake.exchange(short));
    // 16 header + 4 error + 19 echoed, padded to 40, then "Invalid msg length\0" in a 24-byte TLV.
    expect(m!.bytes.length).toBe(64);
    expect(errorInfo(m!)).toMatchObject({ error: -22, flags: 0x200, echo: Buffer.from(short).toString('hex'), msg: 'Invalid msg length' });
    const plain = firstError(fake.exchange(getLink(99)));
    expect(plain).toMatchObject({ error: -19, flags: 0 });
    expect(plain.msg).toBeUndefined();
  });

  it.each([
    ['a message without NLM_F_REQUEST', msg(T.getroute, ACK, Uint8Array.of(2, 0, 0, 0)), [0]],
    ['the same without NLM_F_ACK', msg(T.getroute, 0, Uint8Array.of(2, 0, 0, 0)), []],
    ['NLMSG_NOOP', msg(1, REQ | ACK, new Uint8Array()), [0]],
    ['a message too short for rtgenmsg', msg(T.getroute, REQ | ACK | DUMP, new Uint8Array()), [0]],
    ['a type no handler has', msg(99, REQ | ACK, Uint8Array.of(2, 0, 0, 0)), [-95]],
    ['a type past RTM_MAX, even without a body', msg(124, REQ | ACK, new Uint8Array()), [-95]],
    ['RTM_GETRULE without NLM_F_DUMP', msg(T.getrule, REQ | ACK, Buffer.alloc(12, 0).fill(2, 0, 1)), [-95]],
    ['a route change of family 0', route({ dst: '10.0.0.0', dstLen: 8, type: 6 }).fill(0, 16, 17), [-95]],
  ])('answers %s as the kernel does', (_name, request, expected) => {
    expect(codes(new FakeRtnetlink().exchange(request))).toEqual(expected);
  });

  it.each([
    ['RTM_NEWLINK', msg(T.newlink, REQ | ACK, Buffer.alloc(16)), 'fake-rtnetlink: RTM_NEWLINK is not modelled'],
    ['RTM_NEWADDR', msg(T.newaddr, REQ | ACK, Uint8Array.of(2, 24, 0, 0, 1, 0, 0, 0)), 'fake-rtnetlink: address changes over netlink are not modelled (use addAddress)'],
    ['a route lookup', msg(T.getroute, REQ | ACK, Buffer.alloc(12, 0).fill(2, 0, 1)), 'fake-rtnetlink: route lookups (RTM_GETROUTE without NLM_F_DUMP) are not modelled'],
  ])('says that %s is not modelled (EOPNOTSUPP)', (_name, request, text) => {
    expect(firstError(new FakeRtnetlink().exchange(request))).toMatchObject({ error: -95, msg: text });
  });

  it('stops at a message whose length runs past the buffer, after answering the ones before it', () => {
    const good = msg(1, REQ | ACK, new Uint8Array(), 1);
    const bad = Buffer.concat([header(100, 1, REQ | ACK, 2)]);
    expect(new FakeRtnetlink().exchange(Buffer.concat([good, bad])).flatMap(messages).map((m) => m.seq)).toEqual([1]);
  });

  it('cuts a route dump into datagrams of at most dumpPageSize bytes, with NLMSG_DONE on its own', () => {
    const fake = withRoutes(20, { dumpPageSize: 256 });
    const pages = fake.exchange(dump(T.getroute, 2));
    expect(pages.length).toBeGreaterThan(3);
    for (const p of pages) expect(p.length).toBeLessThanOrEqual(256);
    expect(messages(pages[pages.length - 1]!).map((m) => m.type)).toEqual([3]);
    expect(allMessages(pages).filter((m) => m.type === 24).length).toBe(23);
    expect(allMessages(pages).every((m) => m.flags === 2)).toBe(true);
  });

  it('lets NLMSG_DONE share the last datagram of a rule dump', () => {
    const pages = new FakeRtnetlink().exchange(dump(T.getrule));
    expect(pages.map((p) => messages(p).map((m) => m.type))).toEqual([[32, 32, 32, 32, 32, 3]]);
  });

  it('answers the rest of a sendmsg before the second page of a dump in it, and a second dump meanwhile EBUSY', () => {
    const fake = withRoutes(20, { dumpPageSize: 256 });
    const replies = fake.exchange(Buffer.concat([dump(T.getroute, 2, 10), getLink(1, REQ | ACK, 11), dump(T.getrule, 0, 12)]));
    const seqs = replies.map((d) => messages(d)[0]!.seq);
    expect(seqs.slice(0, 4)).toEqual([10, 11, 11, 12]);
    expect(seqs.slice(4).every((s) => s === 10)).toBe(true);
    expect(errorInfo(messages(replies[3]!)[0]!).error).toBe(-16);
    // A dump that fits its first datagram is over: the next one in the same sendmsg runs.
    const both = new FakeRtnetlink().exchange(Buffer.concat([dump(T.getrule, 0, 20), dump(T.getrule, 2, 21)]));
    expect(codes(both)).toEqual([]);
    expect(both.length).toBe(2);
  });

  it('fails a rule dump of an unknown family with a lone NLMSG_DONE carrying EAFNOSUPPORT', () => {
    const [done] = new FakeRtnetlink().exchange(dump(T.getrule, 7)).flatMap(messages);
    expect(done).toMatchObject({ type: 3, flags: 2, error: -97 });
  });

  it('never throws on random or mangled bytes, and answers only with well-formed datagrams', () => {
    const r = mulberry32(7);
    const seeds = [dump(T.getroute), getLink('lo'), route({ dst: '10.0.0.0', dstLen: 8, type: 6 }), rule({ priority: 5, table: 100 }), route({ family: 6, dst: 'fd00::', dstLen: 8, oif: 1 })];
    const fake = new FakeRtnetlink();
    for (let i = 0; i < 3000; i++) {
      let bytes: Buffer;
      if (i % 3 === 0) {
        bytes = Buffer.alloc(Math.floor(r() * 80));
        for (let k = 0; k < bytes.length; k++) bytes[k] = Math.floor(r() * 256);
      } else {
        bytes = Buffer.from(seeds[i % seeds.length]!);
        for (let k = 0; k < 1 + Math.floor(r() * 4); k++) bytes[16 + Math.floor(r() * (bytes.length - 16))] = Math.floor(r() * 256);
        if (r() < 0.3) bytes = bytes.subarray(0, 16 + Math.floor(r() * (bytes.length - 16)));
        bytes.writeUInt32LE(bytes.length, 0);
      }
      const replies = fake.exchange(bytes);
      for (const d of replies) expect(() => messages(d)).not.toThrow();
    }
    expect(fake.dump().links.map((l) => l.name)).toEqual(['lo']);
  });
});
