// Objects podnet does not make, listed truthfully: interval sets as the ranges `nft list` prints (their end
// elements never members), maps marked as maps with their element data, attributes and messages podnet does not
// decode kept raw, IPv6 keys as inet_ntop writes them. On the kernel (written by `nft -f` in a fresh namespace,
// compared with `nft -j`), on dumps of the same bytes without root, and on FakeNftables where it models them.
import { describe, expect, it } from 'vitest';

import { Nftables, nftExpr as x, type NetlinkPeer, type NftElement, type NftTableRef } from '../../lib/index.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { replyMessage as message, splitMessages } from './helpers/mnl-debug.js';
import { ACK, CREATE, INET, M, REQ, attr, batch, be32, be64, nest, nft as nftMsg, str } from './helpers/nft-bytes.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

const T: NftTableRef = { family: 'inet', name: 't' };
const byAddress = (xs: NftElement[]): NftElement[] => [...xs].sort((a, b) => a.address.localeCompare(b.address));
const hex = (s: string): Buffer => Buffer.from(s, 'hex');

// ---- A peer that answers dumps with payloads as the 6.18 kernel sent them (copied from its answers) ----

const NLM_F_MULTI = 2;
const NLMSG_DONE = 3;
const NLMSG_ERROR = 2;
const NFT = (m: number): number => (10 << 8) | m;

/** payload is nfgenmsg (inet, generation 1) and the attributes. */
const payload = (...attrs: Buffer[]): Buffer => Buffer.concat([Buffer.from([INET, 0, 0, 1]), ...attrs]);

/**
 * DumpPeer answers GETTABLE / GETSET / GETSETELEM dumps with the messages set for them, a GET of one set with the
 * set of that name (ENOENT without one), and a GET of one element with ENOENT.
 */
class DumpPeer implements NetlinkPeer {
  readonly dumps = new Map<number, { type: number; payload: Buffer }[]>();

  exchange(request: Uint8Array): Uint8Array[] {
    const m = splitMessages(request)[0]!;
    const seq = m.readUInt32LE(8);
    const type = m.readUInt16LE(4);
    const answer = this.dumps.get(type);
    const ack = (errno: number): Buffer => {
      const err = Buffer.alloc(36);
      err.writeUInt32LE(36, 0);
      err.writeUInt16LE(NLMSG_ERROR, 4);
      err.writeUInt16LE(0x100, 6);
      err.writeUInt32LE(seq, 8);
      err.writeInt32LE(errno, 16);
      m.copy(err, 20, 0, 16);
      return err;
    };
    // An element dump or a GET of one set answers with the messages of the set it names (its 2nd attribute).
    const named = type === NFT(M.GETSETELEM) || type === NFT(M.GETSET) ? m.subarray(20, m.readUInt32LE(0)) : undefined;
    const set = named && named.length > 0 ? named.subarray((named.readUInt16LE(0) + 3) & ~3) : undefined;
    const nameAttr = set && set.length >= 4 ? set.subarray(0, set.readUInt16LE(0)) : undefined;
    const picked = nameAttr ? (answer ?? []).filter((a) => a.payload.includes(nameAttr)) : (answer ?? []);
    const dump = (m.readUInt16LE(6) & 0x300) !== 0;
    if (!dump && type === NFT(M.GETSET)) {
      // One set: its message, then the ack NLM_F_ACK asked for; ENOENT when none has the name.
      return picked.length === 1 ? [message(picked[0]!.type, 0, seq, picked[0]!.payload), ack(0)] : [ack(-2)];
    }
    if (answer === undefined || !dump) return [ack(-2)];
    const done = message(NLMSG_DONE, NLM_F_MULTI, seq, Buffer.alloc(4));
    return [Buffer.concat([...picked.map((a) => message(a.type, NLM_F_MULTI, seq, a.payload)), done])];
  }
}

// NFTA_SET_TYPE and NFTA_SET_COUNT as 6.18 dumps them, and the user data nft writes (key byte order only).
const setType = str(19, '0xffffffff82508a20');
const count = (n: number): Buffer => be32(20, n);
const keyOrder = attr(13, hex('000402000000'));

function setPayload(name: string, flags: number, ...extra: Buffer[]): Buffer {
  return payload(str(1, 't'), str(2, name), be64(16, 2), be32(3, flags), be32(4, 7), be32(5, 4), ...extra, keyOrder, nest(9), setType, count(1));
}

/** An element: key, flags when given, other attributes. */
function elem(key: string, flags = 0, ...extra: Buffer[]): Buffer {
  return nest(1, ...(key ? [nest(1, attr(1, hex(key)))] : []), ...(flags ? [be32(3, flags)] : []), ...extra);
}

function elements(set: string, ...items: Buffer[]): { type: number; payload: Buffer } {
  return { type: NFT(M.NEWSETELEM), payload: payload(str(1, 't'), str(2, set), nest(3, ...items)) };
}

async function onDump(sets: Buffer[], elems: { type: number; payload: Buffer }[]): Promise<Nftables> {
  const peer = new DumpPeer();
  peer.dumps.set(NFT(M.GETSET), sets.map((p) => ({ type: NFT(M.NEWSET), payload: p })));
  peer.dumps.set(NFT(M.GETSETELEM), elems);
  return Nftables.open({ netlink: peer });
}

describe('listing foreign objects from the kernel\'s bytes (no root)', () => {
  it('merges an interval set\'s start and end elements into the ranges nft prints, never an end as a member', async () => {
    // `add element inet t iv { 10.0.0.0/24, 10.9.9.9, 10.1.0.1-10.1.0.5 comment "r" }`, in the kernel's (rbtree) order.
    const nft = await onDump(
      [setPayload('iv', 0x4)],
      [
        elements(
          'iv',
          elem('0a09090a', 1),
          elem('0a090909'),
          elem('0a010006', 1),
          elem('0a010001', 0, attr(6, hex('00027200'))),
          elem('0a000100', 1),
          elem('0a000000'),
          elem('00000000', 1),
        ),
      ],
    );
    expect(await nft.elements(T, 'iv')).toEqual([
      { address: '10.0.0.0/24', comment: undefined, range: { first: '10.0.0.0', last: '10.0.0.255' } },
      { address: '10.1.0.1-10.1.0.5', comment: 'r', range: { first: '10.1.0.1', last: '10.1.0.5' } },
      { address: '10.9.9.9', comment: undefined },
    ]);
    nft.close();
  });

  it('lists a range open to the top (no end element) and adjacent ranges (an end and a start at one key)', async () => {
    // { 0.0.0.0/0 comment "all" }: one start, nft's INTERVAL_OPEN mark in its user data. { 10.0.0.0/24, 10.0.1.0/24,
    // 128.0.0.0/1 }: 10.0.1.0 is the first range's end and the second's start.
    const nft = await onDump(
      [setPayload('op', 0x4), setPayload('adj', 0x4)],
      [
        elements('op', elem('00000000', 0, attr(6, hex('0004616c6c00010401000000')))),
        elements('adj', elem('80000000', 0, attr(6, hex('010401000000'))), elem('0a000200', 1), elem('0a000100'), elem('0a000100', 1), elem('0a000000'), elem('00000000', 1)),
      ],
    );
    expect(await nft.elements(T, 'op')).toEqual([{ address: '0.0.0.0/0', comment: 'all', range: { first: '0.0.0.0', last: '255.255.255.255' } }]);
    expect((await nft.elements(T, 'adj')).map((e) => e.address)).toEqual(['10.0.0.0/24', '10.0.1.0/24', '128.0.0.0/1']);
    nft.close();
  });

  it('marks a map as a map and lists its elements\' data: verdicts, a chain, values, a catch-all', async () => {
    const verdictMap = setPayload('vm', 0x8, be32(6, 0xffffff00), be32(7, 16));
    const dataMap = setPayload('dm', 0x8, be32(6, 7), be32(7, 4));
    const verdict = (code: number, chain?: string): Buffer => nest(2, nest(2, be32(1, code), ...(chain ? [str(2, chain)] : [])));
    const nft = await onDump(
      [verdictMap, dataMap],
      [
        elements('vm', elem('0a000001', 0, verdict(1)), elem('0a000002', 0, verdict(-3, 'c2')), elem('0a000003', 0, verdict(-4, 'c2')), elem('', 2, verdict(0))),
        elements('dm', elem('0a000001', 0, nest(2, attr(1, hex('c0a80001'))))),
      ],
    );
    const sets = await nft.sets(T);
    expect(sets.map((s) => [s.name, s.map, s.raw])).toEqual([
      ['vm', { type: 'verdict', length: 16 }, undefined],
      ['dm', { type: 'ipv4_addr', length: 4 }, undefined],
    ]);
    expect(await nft.elements(T, 'vm')).toEqual([
      { address: '10.0.0.1', comment: undefined, data: { verdict: 'accept' } },
      { address: '10.0.0.2', comment: undefined, data: { verdict: 'jump', chain: 'c2' } },
      { address: '10.0.0.3', comment: undefined, data: { verdict: 'goto', chain: 'c2' } },
      { address: '*', comment: undefined, data: { verdict: 'drop' }, flags: 2 },
    ]);
    expect(await nft.elements(T, 'dm')).toEqual([{ address: '10.0.0.1', comment: undefined, data: { value: '192.168.0.1' } }]);
    nft.close();
  });

  it('keeps data it cannot decode raw (a verdict by chain id), never dropped', async () => {
    const data = nest(2, nest(2, be32(1, -3), be32(3, 7)));
    const nft = await onDump([setPayload('vm', 0x8, be32(6, 0xffffff00), be32(7, 16))], [elements('vm', elem('0a000001', 0, data))]);
    const [e] = await nft.elements(T, 'vm');
    expect(e).toEqual({ address: '10.0.0.1', comment: undefined, raw: [{ type: 2, data: data.subarray(4) }] });
    nft.close();
  });

  it('keeps attributes podnet does not decode raw: a set timeout, typeof user data, an element\'s expiry', async () => {
    const timeout = be64(11, 3_600_000);
    const typeofUdata = attr(13, hex('000402000000030800040d0000000100'));
    const sets = [
      payload(str(1, 't'), str(2, 'to'), be64(16, 2), be32(3, 0x10), be32(4, 7), be32(5, 4), timeout, keyOrder, nest(9), setType, count(1)),
      payload(str(1, 't'), str(2, 'ty'), be64(16, 3), be32(3, 0), be32(4, 7), be32(5, 4), typeofUdata, nest(9), setType, count(0)),
    ];
    const expiry = [be64(4, 7_200_000), be64(5, 7_199_990)];
    const nft = await onDump(sets, [elements('to', elem('0a000007', 0, ...expiry, attr(6, hex('00026300'))))]);
    const listed = await nft.sets(T);
    expect(listed.map((s) => [s.name, s.raw])).toEqual([
      ['to', [{ type: 11, data: timeout.subarray(4) }]],
      ['ty', [{ type: 13, data: typeofUdata.subarray(4) }]],
    ]);
    expect(await nft.elements(T, 'to')).toEqual([
      { address: '10.0.0.7', comment: 'c', raw: expiry.map((a) => ({ type: a.readUInt16LE(2), data: a.subarray(4) })) },
    ]);
    nft.close();
  });

  it('keeps a dump\'s messages of another type in rawMessages, not enumerable, beside the objects', async () => {
    const peer = new DumpPeer();
    const other = payload(str(1, 'newer'));
    peer.dumps.set(NFT(M.GETTABLE), [
      { type: NFT(M.NEWTABLE), payload: payload(str(1, 't'), be32(3, 0), be64(4, 1), be32(2, 0)) },
      { type: NFT(0x30), payload: other },
    ]);
    const nft = await Nftables.open({ netlink: peer });
    const tables = await nft.tables();
    expect(tables).toEqual([{ family: 'inet', name: 't', handle: 1, flags: 0, use: 0, comment: undefined }]);
    expect(tables.rawMessages).toEqual([{ type: NFT(0x30), payload: other }]);
    expect(Object.keys(tables)).toEqual(['0']);
    nft.close();
  });
});

// ---- IPv6 keys as inet_ntop writes them (glibc, which nft uses) ----

/** Keys in podnet's spelling, and as inet_ntop (and nft) write them back. */
const IPV6_CASES: [string, string][] = [
  ['::ffff:10.1.2.3', '::ffff:10.1.2.3'], // IPv4-mapped: dotted
  ['::FFFF:a01:204', '::ffff:10.1.2.4'],
  ['::ffff:0.0.0.0', '::ffff:0.0.0.0'],
  ['::ffff:0:1', '::ffff:0.0.0.1'],
  ['::10.1.2.3', '::10.1.2.3'], // IPv4-compatible: a zero run of six groups at the start
  ['::0.1.0.0', '::0.1.0.0'],
  ['::2', '::2'], // glibc's test for a run of seven can never hold
  ['::1', '::1'],
  ['::', '::'],
  ['::ffff:0:a01:203', '::ffff:0:a01:203'], // SIIT: hex
  ['64:ff9b::a01:203', '64:ff9b::a01:203'], // NAT64: hex
  ['::1:0:0:0:1', '::1:0:0:0:1'],
  ['fd00:0:0:1::', 'fd00:0:0:1::'],
  ['fd00:0:1:0:1:0:1:0', 'fd00:0:1:0:1:0:1:0'], // single zero groups stay
  ['1:0:0:1:0:0:0:1', '1:0:0:1::1'], // the longest run, not the first
  ['1:0:0:1:1:0:0:1', '1::1:1:0:0:1'], // of equal runs, the first
];

async function addIpv6(nft: Nftables): Promise<void> {
  await nft.run(nft.transaction().addTable(T).addSet({ family: 'inet', table: 't', name: 's6', type: 'ipv6_addr' }));
  await nft.addElement(T, 's6', IPV6_CASES.map(([address]) => ({ address })));
}

describe('IPv6 keys on FakeNftables', () => {
  it('lists IPv6 keys as inet_ntop writes them', async () => {
    const nft = await Nftables.open({ netlink: new FakeNftables() });
    await addIpv6(nft);
    const listed = (await nft.elements(T, 's6')).map((e) => e.address).sort();
    expect(listed).toEqual(IPV6_CASES.map(([, text]) => text).sort());
    nft.close();
  });
});

describe('FakeNftables: maps and what podnet makes', () => {
  it('lists a map made by bytes as a map; podnet\'s own objects carry nothing raw and an empty rawMessages', async () => {
    const fake = new FakeNftables();
    fake.exchange(batch(nftMsg(M.NEWTABLE, REQ | ACK | CREATE, INET, str(1, 't'), be32(2, 0)), nftMsg(M.NEWSET, REQ | ACK | CREATE, INET, str(1, 't'), str(2, 'vm'), be32(3, 0x8), be32(4, 7), be32(5, 4), be32(6, 0xffffff00), be32(7, 16), be32(10, 1))));
    const nft = await Nftables.open({ netlink: fake });
    await nft.run(nft.transaction().addSet({ family: 'inet', table: 't', name: 's', type: 'ipv4_addr', comment: 'x' }).addChain({ family: 'inet', table: 't', name: 'c', comment: 'y' }));
    await nft.addElement(T, 's', { address: '10.0.0.1', comment: 'o' });
    const sets = await nft.sets(T);
    expect(sets.map((s) => [s.name, s.map, s.raw])).toEqual([
      ['vm', { type: 'verdict', length: 16 }, undefined],
      ['s', undefined, undefined],
    ]);
    expect(sets.rawMessages).toEqual([]);
    expect((await nft.tables()).map((t) => t.raw)).toEqual([undefined]);
    expect((await nft.chains(T)).map((c) => [c.raw, c.flags])).toEqual([[undefined, undefined]]);
    expect(await nft.elements(T, 's')).toEqual([{ address: '10.0.0.1', comment: 'o' }]);
    nft.close();
  });
});

describe('FakeNftables: map elements keep their data', () => {
  const mapElement = (key: number[], data: Buffer): Buffer => nest(1, nest(1, attr(1, Uint8Array.from(key))), data);
  const addTo = (set: string, ...items: Buffer[]): Buffer => batch(nftMsg(M.NEWSETELEM, REQ | ACK | CREATE, INET, str(1, 't'), str(2, set), nest(3, ...items)));
  const value = (bytes: number[]): Buffer => nest(2, attr(1, Uint8Array.from(bytes)));
  const verdict = (code: number, chain?: string): Buffer => nest(2, nest(2, be32(1, code), ...(chain ? [str(2, chain)] : [])));
  const errnoOf = (replies: Uint8Array[]): number[] => replies.map((r) => Buffer.from(r)).filter((b) => b.readUInt16LE(4) === NLMSG_ERROR).map((b) => b.readInt32LE(16));

  it('lists a value map\'s and a verdict map\'s elements with their data, and refuses a clash and a jump it does not model', async () => {
    const fake = new FakeNftables();
    const made = fake.exchange(
      batch(
        nftMsg(M.NEWTABLE, REQ | ACK | CREATE, INET, str(1, 't'), be32(2, 0)),
        nftMsg(M.NEWSET, REQ | ACK | CREATE, INET, str(1, 't'), str(2, 'm'), be32(3, 0x8), be32(4, 7), be32(5, 4), be32(6, 7), be32(7, 4), be32(10, 1)),
        nftMsg(M.NEWSET, REQ | ACK | CREATE, INET, str(1, 't'), str(2, 'vm'), be32(3, 0x8), be32(4, 7), be32(5, 4), be32(6, 0xffffff00), be32(7, 16), be32(10, 2)),
        nftMsg(M.NEWCHAIN, REQ | ACK | CREATE, INET, str(1, 't'), str(3, 'c')),
      ),
    );
    expect(errnoOf(made).every((e) => e === 0)).toBe(true);
    expect(errnoOf(fake.exchange(addTo('m', mapElement([10, 0, 0, 1], value([192, 168, 0, 1])), mapElement([10, 0, 0, 2], value([192, 168, 0, 2])))))).not.toContain(-22);
    expect(errnoOf(fake.exchange(addTo('vm', mapElement([10, 0, 0, 1], verdict(0)), mapElement([10, 0, 0, 2], verdict(1)))))).not.toContain(-22);
    // The same key with other data is a clash (EEXIST) even without NLM_F_EXCL, as on the kernel.
    expect(errnoOf(fake.exchange(addTo('m', mapElement([10, 0, 0, 1], value([192, 168, 0, 9])))))).toContain(-17);
    // A jump in a verdict map would be a use of the chain and a path of the table's validation: not modelled.
    expect(errnoOf(fake.exchange(addTo('vm', mapElement([10, 0, 0, 3], verdict(-3, 'c')))))).toContain(-95);

    const nft = await Nftables.open({ netlink: fake });
    expect(byAddress(await nft.elements(T, 'm'))).toEqual([
      { address: '10.0.0.1', comment: undefined, data: { value: '192.168.0.1' } },
      { address: '10.0.0.2', comment: undefined, data: { value: '192.168.0.2' } },
    ]);
    expect(byAddress(await nft.elements(T, 'vm'))).toEqual([
      { address: '10.0.0.1', comment: undefined, data: { verdict: 'drop' } },
      { address: '10.0.0.2', comment: undefined, data: { verdict: 'accept' } },
    ]);
    expect(await nft.testElement(T, 'm', '10.0.0.2')).toEqual({ address: '10.0.0.2', comment: undefined, data: { value: '192.168.0.2' } });
    expect(fake.dump().tables[0]!.sets.find((x) => x.name === 'm')!.elements.map((e) => e.data)).toEqual(['08000100c0a80001', '08000100c0a80002']);
    nft.close();
  });
});

// ---- On the kernel: written by nft -f, listed by podnet, compared with nft -j ----

type JsonElem = string | { prefix: { addr: string; len: number } } | { range: [string, string] } | { elem: { val: JsonElem; comment?: string } };

function jsonText(e: JsonElem): string {
  if (typeof e === 'string') return e;
  if ('prefix' in e) return `${e.prefix.addr}/${e.prefix.len}`;
  if ('range' in e) return `${e.range[0]}-${e.range[1]}`;
  return jsonText(e.elem.val);
}

/** nftElements is the set's elements as `nft -j list set` prints them. */
function nftElements(ns: TestNetns, set: string): string[] {
  const out = JSON.parse(ns.exec(['nft', '-j', 'list', 'set', 'inet', 't', set])) as { nftables: { set?: { elem?: JsonElem[] } }[] };
  const s = out.nftables.find((x) => x.set)!.set!;
  return (s.elem ?? []).map(jsonText).sort();
}

async function withForeign<R>(script: string, fn: (nft: Nftables, ns: TestNetns) => Promise<R>): Promise<R> {
  using ns = new TestNetns('foreign');
  ns.exec(['nft', '-f', '-'], script);
  const nft = await Nftables.open({ netns: ns.path });
  try {
    return await fn(nft, ns);
  } finally {
    nft.close();
  }
}

describePrivileged(
  'foreign nftables objects on the kernel',
  () => {
    it('lists interval sets as nft does (IPv4 and IPv6, open and adjacent ranges) and never an end element', async () => {
      await withForeign(
        [
          'add table inet t',
          'add set inet t iv { type ipv4_addr ; flags interval ; }',
          'add element inet t iv { 10.0.0.0/24, 10.9.9.9, 10.1.0.1-10.1.0.5 comment "r" }',
          'add set inet t iv6 { type ipv6_addr ; flags interval ; }',
          'add element inet t iv6 { fd00::/64, ::ffff:10.1.2.3, fd01::1-fd01::3 }',
          'add set inet t op { type ipv4_addr ; flags interval ; }',
          'add element inet t op { 0.0.0.0/0 comment "all" }',
          'add set inet t adj { type ipv4_addr ; flags interval ; }',
          'add element inet t adj { 10.0.0.0/24, 10.0.1.0/24, 128.0.0.0/1 }',
          'add set inet t am { type ipv4_addr ; flags interval ; auto-merge ; }',
          'add element inet t am { 10.0.0.1, 10.0.0.2 }',
          '',
        ].join('\n'),
        async (nft, ns) => {
          for (const set of ['iv', 'iv6', 'op', 'adj', 'am']) {
            expect({ set, listed: (await nft.elements(T, set)).map((e) => e.address).sort() }).toEqual({ set, listed: nftElements(ns, set) });
          }
          expect(await nft.elements(T, 'iv')).toEqual([
            { address: '10.0.0.0/24', comment: undefined, range: { first: '10.0.0.0', last: '10.0.0.255' } },
            { address: '10.1.0.1-10.1.0.5', comment: 'r', range: { first: '10.1.0.1', last: '10.1.0.5' } },
            { address: '10.9.9.9', comment: undefined },
          ]);
          expect(await nft.elements(T, 'op')).toEqual([{ address: '0.0.0.0/0', comment: 'all', range: { first: '0.0.0.0', last: '255.255.255.255' } }]);
          // The set auto-merge made is one range, its user data (the merge flag) listed raw.
          const am = (await nft.sets(T)).find((s) => s.name === 'am')!;
          expect(am.raw?.map((a) => a.type)).toEqual([13]);
          // testElement answers with the range that holds the address; the end markers are no members.
          expect((await nft.testElement(T, 'iv', '10.0.0.7'))?.address).toBe('10.0.0.0/24');
          expect((await nft.testElement(T, 'iv', '10.1.0.5'))?.address).toBe('10.1.0.1-10.1.0.5');
          expect((await nft.testElement(T, 'iv', '10.9.9.9'))?.address).toBe('10.9.9.9');
          for (const end of ['10.0.1.0', '10.9.9.10', '10.1.0.6', '0.0.0.0']) expect(await nft.testElement(T, 'iv', end)).toBeUndefined();
          expect((await nft.testElement(T, 'iv6', '::ffff:10.1.2.3'))?.address).toBe('::ffff:10.1.2.3');
        },
      );
    });

    it('lists verdict and data maps as maps with their data, a catch-all as *', async () => {
      await withForeign(
        [
          'add table inet t',
          'add chain inet t c2',
          'add map inet t vm { type ipv4_addr : verdict ; }',
          'add element inet t vm { 10.0.0.1 : accept, 10.0.0.2 : jump c2, 10.0.0.3 : goto c2, * : drop }',
          'add map inet t dm { type ipv4_addr : ipv4_addr ; }',
          'add element inet t dm { 10.0.0.1 : 192.168.0.1 }',
          'add map inet t dm6 { type ipv4_addr : ipv6_addr ; }',
          'add element inet t dm6 { 10.0.0.1 : ::ffff:10.1.2.3 }',
          '',
        ].join('\n'),
        async (nft) => {
          const sets = await nft.sets(T);
          expect(sets.map((s) => ({ name: s.name, map: s.map, flags: s.flags & 0x8, raw: s.raw }))).toEqual([
            { name: 'vm', map: { type: 'verdict', length: 16 }, flags: 8, raw: [{ type: 13, data: expect.any(Buffer) }] },
            { name: 'dm', map: { type: 'ipv4_addr', length: 4 }, flags: 8, raw: [{ type: 13, data: expect.any(Buffer) }] },
            { name: 'dm6', map: { type: 'ipv6_addr', length: 16 }, flags: 8, raw: [{ type: 13, data: expect.any(Buffer) }] },
          ]);
          expect(byAddress(await nft.elements(T, 'vm'))).toEqual([
            { address: '*', comment: undefined, data: { verdict: 'drop' }, flags: 2 },
            { address: '10.0.0.1', comment: undefined, data: { verdict: 'accept' } },
            { address: '10.0.0.2', comment: undefined, data: { verdict: 'jump', chain: 'c2' } },
            { address: '10.0.0.3', comment: undefined, data: { verdict: 'goto', chain: 'c2' } },
          ]);
          expect(await nft.elements(T, 'dm')).toEqual([{ address: '10.0.0.1', comment: undefined, data: { value: '192.168.0.1' } }]);
          expect(await nft.elements(T, 'dm6')).toEqual([{ address: '10.0.0.1', comment: undefined, data: { value: '::ffff:10.1.2.3' } }]);
          expect(await nft.testElement(T, 'vm', '10.0.0.2')).toEqual({ address: '10.0.0.2', comment: undefined, data: { verdict: 'jump', chain: 'c2' } });
        },
      );
    });

    it('keeps what it does not decode raw: set and element timeouts, a netdev chain\'s devices, typeof user data', async () => {
      await withForeign(
        [
          'add table inet t',
          'add set inet t to { type ipv4_addr ; flags timeout ; timeout 1h ; }',
          'add element inet t to { 10.0.0.7 timeout 2h comment "c" }',
          'add set inet t ty { typeof ip saddr ; }',
          'add table netdev nd',
          'add chain netdev nd ing { type filter hook ingress device lo priority 0 ; }',
          '',
        ].join('\n'),
        async (nft) => {
          const sets = await nft.sets(T);
          const to = sets.find((s) => s.name === 'to')!;
          expect(to.raw).toEqual([{ type: 11, data: expect.any(Buffer) }]);
          expect(to.raw![0]!.data.readBigUInt64BE(0)).toBe(3_600_000n);
          expect(sets.find((s) => s.name === 'ty')!.raw).toEqual([{ type: 13, data: expect.any(Buffer) }]);
          const [e] = await nft.elements(T, 'to');
          expect(e).toMatchObject({ address: '10.0.0.7', comment: 'c' });
          // NFTA_SET_ELEM_TIMEOUT (4) of 2h and the EXPIRATION (5) counting down from it.
          expect(e!.raw!.map((a) => a.type)).toEqual([4, 5]);
          expect(e!.raw![0]!.data.readBigUInt64BE(0)).toBe(7_200_000n);
          const [ing] = await nft.chains({ family: 'netdev', name: 'nd' });
          expect(ing).toMatchObject({ name: 'ing', type: 'filter', hook: 'ingress' });
          // The hook with its device is kept whole as NFTA_CHAIN_HOOK (4).
          expect(ing!.raw?.map((a) => a.type)).toEqual([4]);
          expect(ing!.raw![0]!.data.includes(Buffer.from('lo\0'))).toBe(true);
        },
      );
    });

    it('lists IPv6 keys as nft prints them (inet_ntop), and what podnet makes carries nothing raw', async () => {
      using ns = new TestNetns('foreign');
      const nft = await Nftables.open({ netns: ns.path });
      try {
        await addIpv6(nft);
        await nft.run(
          nft
            .transaction()
            .addSet({ family: 'inet', table: 't', name: 'v6t', type: 'ipv6_addr', flags: ['timeout'], comment: 'x' })
            .addChain({ family: 'inet', table: 't', name: 'post', type: 'nat', hook: 'postrouting', priority: 100, comment: 'y' })
            .addRule({ family: 'inet', table: 't', chain: 'post', exprs: [x.counter(), x.accept()], comment: 'z' }),
        );
        await nft.addElement(T, 'v6t', { address: 'fd00::1', comment: 'pod' });
        const listed = (await nft.elements(T, 's6')).map((e) => e.address).sort();
        expect(listed).toEqual(nftElements(ns, 's6'));
        expect(listed).toEqual(IPV6_CASES.map(([, text]) => text).sort());
        // Made by podnet: every attribute decoded, so nothing raw; a timeout set's elements have no expiry.
        const tables = await nft.tables();
        expect(tables.rawMessages).toEqual([]);
        expect(tables.map((t) => t.raw)).toEqual([undefined]);
        expect((await nft.sets(T)).map((s) => s.raw)).toEqual([undefined, undefined]);
        expect((await nft.chains(T)).map((c) => [c.raw, c.flags])).toEqual([[undefined, undefined]]);
        expect((await nft.rules(T)).map((r) => r.raw)).toEqual([undefined]);
        expect(await nft.elements(T, 'v6t')).toEqual([{ address: 'fd00::1', comment: 'pod' }]);
        expect(ns.exec(['nft', 'list', 'set', 'inet', 't', 'v6t'])).not.toMatch(/timeout [0-9]|expires/);
      } finally {
        nft.close();
      }
    });
  },
  missingBinary('nft'),
);
