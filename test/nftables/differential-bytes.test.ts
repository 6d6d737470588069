// Named request sequences in raw nf_tables bytes, sent to the kernel (in a fresh namespace per case, through a small
// python bridge on a NETLINK_NETFILTER socket with extended ACKs, as podnet's) and to FakeNftables: the replies must
// be the same datagram for datagram, message for message (type, flags, seq, nfgenmsg, attributes; for errors the
// errno, the echoed message and the offset the extended ACK points at). What the Nftables client cannot send yet is
// covered here: rules with positions, replace and delete by handle, set and chain references, unknown expressions,
// malformed ones, batch framing, GETs, the generation, and the rules the kernel refuses only when their table is
// validated (NAT statements by the chains that reach them, jumps by their depth).
import { expect, it } from 'vitest';

import { FakeNftables } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import {
  ACK, ADDR, APPEND, ARP, BRIDGE, CREATE, DNAT, EXCL, HOOK, INET, IP, IP6, M, NONREC, PORT, REPLACE, REQ, SNAT,
  accept, attr, batch, be32, be64, begin, bitwise, chain, cmp, counter, ctLoad, ctSet, dumpOf, elements, end, expr, goto, immediate, jump, lookup,
  masq, metaLoad, metaSet, msg, nat, nest, nft, normalize, onKernel, payload, redir, resetSeq, rule, saddr, set, str, table, verdict,
} from './helpers/nft-bytes.js';

/** mapSet is NEWSET of an ipv4_addr map in table t with NFT_SET_MAP and the given data attributes. */
const mapSet = (name: string, id: number, ...data: Buffer[]): Buffer =>
  nft(M.NEWSET, REQ | ACK | CREATE, INET, str(1, 't'), str(2, name), ...(data.some((d) => d.readUInt16LE(2) === 3) ? [] : [be32(3, 8)]), be32(4, 7), be32(5, 4), ...data, be32(10, id));
const value = (bytes: number[]): Buffer => nest(2, attr(1, Uint8Array.from(bytes)));
const verdictData = (code: number): Buffer => nest(2, nest(2, be32(1, code)));
/** mapElements is NEWSETELEM into t's map with [key, NFTA_SET_ELEM_DATA or nothing] pairs (a flags number last). */
function mapElements(s: string, ...items: ([number[], Buffer?] | number)[]): Buffer {
  const flags = typeof items.at(-1) === 'number' ? (items.pop() as number) : REQ | ACK | CREATE;
  const list = (items as [number[], Buffer?][]).map(([k, d]) => nest(1, nest(1, attr(1, Uint8Array.from(k))), ...(d ? [d] : [])));
  return nft(M.NEWSETELEM, flags, INET, str(1, 't'), str(2, s), nest(3, ...list));
}

interface Case {
  name: string;
  requests: () => Buffer[];
}

const CASES: Case[] = [
  {
    name: 'batch markers: res_id of another subsystem, out of range, in host order; a stale generation; no END',
    requests: () => [
      Buffer.concat([begin(6), table('a'), end()]),
      Buffer.concat([begin(99), table('a'), end()]),
      Buffer.concat([msg(16, REQ | ACK, 0, [], 0x0a00), table('a'), end()]),
      Buffer.concat([begin(10, be32(1, 12345)), table('b'), end()]),
      Buffer.concat([begin(10, be32(1, 2)), table('b'), end()]),
      Buffer.concat([begin(), table('c')]),
      dumpOf(M.GETTABLE, 0),
    ],
  },
  {
    name: 'inside a batch: a message without NLM_F_REQUEST, a GET, a second BEGIN; after END nothing is read',
    requests: () => [
      batch(table('a'), nft(M.NEWTABLE, ACK | CREATE, INET, str(1, 'x'))),
      batch(table('a'), nft(M.GETTABLE, REQ | ACK, INET, str(1, 'a'))),
      Buffer.concat([begin(), table('a'), begin(), end()]),
      Buffer.concat([begin(), table('a'), end(), table('after')]),
      dumpOf(M.GETTABLE, 0),
    ],
  },
  {
    name: 'outside a batch: changes are EINVAL, messages without NLM_F_REQUEST are acked, GETs answer',
    requests: () => [
      table('a'),
      nft(M.NEWTABLE, ACK, INET, str(1, 'a')),
      nft(M.GETTABLE, REQ | ACK, INET, str(1, 'a')),
      nft(M.GETTABLE, REQ | ACK, INET),
      batch(table('a'), table('b', IP)),
      nft(M.GETTABLE, REQ | ACK, INET, str(1, 'a')),
      nft(M.GETTABLE, REQ, IP, str(1, 'b')),
    ],
  },
  {
    name: 'a failing batch: acks for the good messages, every error reported, later messages still checked, nothing kept',
    requests: () => [
      batch(table('a'), chain('a', 'c')),
      batch(chain('a', 'd'), chain('missing', 'x'), nft(M.DELCHAIN, REQ | ACK, INET, str(1, 'a'), str(3, 'd')), chain('a', 'c', undefined, REQ | ACK | CREATE | EXCL), table('z', INET, REQ | CREATE)),
      dumpOf(M.GETCHAIN, INET),
      dumpOf(M.GETTABLE, 0),
    ],
  },
  {
    name: 'the generation: GETGEN, no move on a batch that changes nothing or is aborted, one per commit',
    requests: () => [
      nft(M.GETGEN, REQ | ACK, 0),
      batch(table('a')),
      nft(M.GETGEN, REQ, 0),
      batch(table('a')),
      nft(M.GETGEN, REQ, 0),
      batch(table('b'), chain('missing', 'c')),
      nft(M.GETGEN, REQ, 0),
      batch(chain('a', 'c')),
      batch(chain('a', 'c')),
      nft(M.GETGEN, REQ, 0),
      batch(),
      nft(M.GETGEN, REQ, 0),
    ],
  },
  {
    name: 'rules: append, insert first, before and after a position, replace and delete by handle, dumps with positions',
    requests: () => [
      batch(table('t'), chain('t', 'c'), rule('t', 'c', [accept()]), rule('t', 'c', [saddr(), accept()])),
      batch(rule('t', 'c', [accept()], REQ | ACK | CREATE)),
      batch(rule('t', 'c', [saddr(), accept()], REQ | ACK | CREATE | APPEND, [be64(6, 4)])),
      batch(rule('t', 'c', [accept()], REQ | ACK | CREATE, [be64(6, 4)])),
      dumpOf(M.GETRULE, INET, str(1, 't')),
      batch(rule('t', 'c', [saddr(), accept()], REQ | ACK | REPLACE, [be64(3, 3)])),
      batch(nft(M.DELRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c'), be64(3, 5))),
      batch(nft(M.DELRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c'), be64(3, 5))),
      batch(rule('t', 'c', [accept()], REQ | ACK | CREATE, [be64(6, 99)])),
      batch(rule('t', 'c', [accept()], REQ | ACK | EXCL, [be64(3, 4)])),
      dumpOf(M.GETRULE, INET, str(1, 't'), str(2, 'c')),
      nft(M.GETRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c'), be64(3, 4)),
      nft(M.GETRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c'), be64(3, 77)),
      dumpOf(M.GETRULE, INET, str(1, 'missing')),
      dumpOf(M.GETCHAIN, INET),
    ],
  },
  {
    name: 'rules: an unknown expression is ENOENT, a lookup of a missing set too; sets and chains in use are EBUSY',
    requests: () => [
      batch(table('t'), chain('t', 'base', [1, 0, 'filter']), chain('t', 'r'), chain('t', 'target'), set('t', 's', 1)),
      batch(rule('t', 'r', [expr('nosuchexpr', be32(1, 0))])),
      batch(rule('t', 'r', [saddr(), lookup('nosuchset')])),
      batch(rule('t', 'r', [jump('base')])),
      batch(rule('t', 'r', [jump('nosuchchain')])),
      batch(rule('t', 'r', [saddr(), lookup('s'), accept()]), rule('t', 'base', [jump('target')])),
      dumpOf(M.GETCHAIN, INET),
      batch(nft(M.DELSET, REQ | ACK, INET, str(1, 't'), str(2, 's'))),
      batch(nft(M.DELCHAIN, REQ | ACK, INET, str(1, 't'), str(3, 'target'))),
      batch(nft(M.DELCHAIN, REQ | ACK | NONREC, INET, str(1, 't'), str(3, 'r'))),
      batch(nft(M.DELTABLE, REQ | ACK | NONREC, INET, str(1, 't'))),
      batch(nft(M.DELCHAIN, REQ | ACK, INET, str(1, 't'), str(3, 'r')), nft(M.DELSET, REQ | ACK, INET, str(1, 't'), str(2, 's'))),
      batch(nft(M.DELRULE, REQ | ACK, INET, str(1, 't')), nft(M.DELCHAIN, REQ | ACK, INET, str(1, 't'), str(3, 'target'))),
      dumpOf(M.GETCHAIN, INET),
      dumpOf(M.GETSET, INET, str(1, 't')),
    ],
  },
  {
    name: 'maps: their data types and lengths, element data kept and listed, added again with the same or other data, wrong data, a lookup into a register',
    requests: () => [
      batch(table('t')),
      // A value map (ipv4_addr -> ipv4_addr); one without DATA_LEN, of length 0 and 65, a reserved data type, a data
      // type on a set; a verdict map whose DATA_LEN is ignored (the kernel stores 16).
      batch(mapSet('m', 1, be32(6, 7), be32(7, 4))),
      batch(mapSet('x1', 2, be32(6, 7))),
      batch(mapSet('x2', 3, be32(6, 7), be32(7, 0))),
      batch(mapSet('x3', 4, be32(6, 7), be32(7, 65))),
      batch(mapSet('x4', 5, be32(6, 0xffffff01), be32(7, 4))),
      batch(nft(M.NEWSET, REQ | ACK | CREATE, INET, str(1, 't'), str(2, 'x5'), be32(3, 0), be32(4, 7), be32(5, 4), be32(6, 7), be32(7, 4), be32(10, 6))),
      batch(mapSet('x6', 7, be32(3, 8))),
      batch(mapSet('vm', 8, be32(6, 0xffffff00), be32(7, 4))),
      dumpOf(M.GETSET, INET, str(1, 't')),
      batch(mapElements('m', [[10, 0, 0, 1], value([192, 168, 0, 1])], [[10, 0, 0, 2], value([192, 168, 0, 2])])),
      // Again with the same data (taken), with other data (EEXIST without NLM_F_EXCL), with NLM_F_EXCL.
      batch(mapElements('m', [[10, 0, 0, 1], value([192, 168, 0, 1])])),
      batch(mapElements('m', [[10, 0, 0, 1], value([192, 168, 0, 9])])),
      batch(mapElements('m', [[10, 0, 0, 2], value([192, 168, 0, 2])], REQ | ACK | CREATE | EXCL)),
      // No data, data of another length, too long, empty, a verdict in a value map, a bad key before bad data.
      batch(mapElements('m', [[10, 0, 0, 3]])),
      batch(mapElements('m', [[10, 0, 0, 3], value([1, 2])])),
      batch(mapElements('m', [[10, 0, 0, 3], value(new Array(65).fill(1))])),
      batch(mapElements('m', [[10, 0, 0, 3], value([])])),
      batch(mapElements('m', [[10, 0, 0, 3], verdictData(1)])),
      batch(mapElements('m', [[10, 0, 0], value([1])])),
      // A verdict map: plain verdicts kept; an unknown code, a value in it.
      batch(mapElements('vm', [[10, 0, 0, 1], verdictData(1)], [[10, 0, 0, 2], verdictData(0)], [[10, 0, 0, 3], verdictData(-5)], [[10, 0, 0, 4], verdictData(-1)])),
      batch(mapElements('vm', [[10, 0, 0, 5], verdictData(7)])),
      batch(mapElements('vm', [[10, 0, 0, 5], verdictData(3)], [[10, 0, 0, 6], verdictData(-2)])),
      batch(mapElements('vm', [[10, 0, 0, 7], verdictData(0x10003)])),
      batch(mapElements('vm', [[10, 0, 0, 7], verdictData(0x10000)])),
      batch(mapElements('vm', [[10, 0, 0, 5], value([1, 2, 3, 4])])),
      batch(mapElements('vm', [[10, 0, 0, 1], verdictData(0)])),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 'm')),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 'vm')),
      elements(M.GETSETELEM, REQ | ACK, 't', 'm', [[10, 0, 0, 2]]),
      elements(M.GETSETELEM, REQ | ACK, 't', 'vm', [[10, 0, 0, 3]]),
      // A lookup into a register: a map's data (4 bytes) compared; into a register of a set; inverted on a map.
      batch(chain('t', 'c')),
      batch(rule('t', 'c', [saddr(), expr('lookup', str(1, 'm'), be32(2, 1), be32(3, 2), be32(5, 0)), cmp(2, [192, 168, 0, 1])])),
      batch(rule('t', 'c', [saddr(), expr('lookup', str(1, 'm'), be32(2, 1), be32(3, 2), be32(5, 0)), cmp(2, [192, 168, 0, 1, 0, 0, 0, 0])])),
      batch(rule('t', 'c', [saddr(), expr('lookup', str(1, 'm'), be32(2, 1), be32(5, 1))])),
      batch(set('t', 's', 9), rule('t', 'c', [saddr(), expr('lookup', str(1, 's'), be32(2, 1), be32(3, 2), be32(5, 0))])),
      // The same verdicts in a rule's immediate: known codes taken, an unknown one and a queue number refused.
      batch(rule('t', 'c', [verdict(3)]), rule('t', 'c', [verdict(-2)]), rule('t', 'c', [verdict(-5)]), rule('t', 'c', [verdict(0)])),
      batch(rule('t', 'c', [verdict(7)])),
      batch(rule('t', 'c', [verdict(0x10003)])),
      batch(rule('t', 'c', [verdict(-6)])),
      // An anonymous map is its rule's own: looked up for its data, never for its keys only.
      batch(mapSet('__map0', 10, be32(3, 0xb), be32(6, 7), be32(7, 4)), rule('t', 'c', [saddr(), expr('lookup', str(1, '__map0'), be32(2, 1), be32(5, 0))])),
      batch(mapSet('__map0', 11, be32(3, 0xb), be32(6, 7), be32(7, 4)), rule('t', 'c', [saddr(), expr('lookup', str(1, '__map0'), be32(2, 1), be32(3, 2), be32(5, 0)), cmp(2, [1, 2, 3, 4])])),
      dumpOf(M.GETSET, INET, str(1, 't')),
      batch(mapElements('m', [[10, 0, 0, 7], value([1, 1, 1, 1])], [[10, 0, 0, 1], value([2, 2, 2, 2])])),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 'm')),
      batch(nft(M.DELSETELEM, REQ | ACK, INET, str(1, 't'), str(2, 'm'), nest(3, nest(1, nest(1, attr(1, Uint8Array.from([10, 0, 0, 1]))))))),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 'm')),
    ],
  },
  {
    name: 'sets and elements: single GETs, a get of several keys with one missing, flush of a set, wrong key sizes',
    requests: () => [
      batch(table('t'), set('t', 's', 1), elements(M.NEWSETELEM, REQ | ACK | CREATE | EXCL, 't', 's', [[10, 0, 0, 1], [10, 0, 0, 2]], 'owner')),
      nft(M.GETSET, REQ | ACK, INET, str(1, 't'), str(2, 's')),
      nft(M.GETSET, REQ | ACK, INET, str(1, 't'), str(2, 'missing')),
      nft(M.GETSET, REQ | ACK, 0, str(1, 't'), str(2, 's')),
      nft(M.GETCHAIN, REQ | ACK, INET, str(1, 't'), str(3, 'missing')),
      elements(M.GETSETELEM, REQ | ACK, 't', 's', [[10, 0, 0, 1], [10, 0, 0, 9], [10, 0, 0, 2]]),
      elements(M.GETSETELEM, REQ | ACK, 't', 's', [[10, 0, 0, 1, 0]]),
      batch(elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 's', [[10, 0, 0, 1]], 'other'), elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 's', [[10, 0, 0]])),
      batch(elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 's', [[10, 0, 0, 1]], 'other')),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 's')),
      batch(nft(M.DELSETELEM, REQ | ACK, INET, str(1, 't'), str(2, 's'))),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 's')),
      dumpOf(M.GETSET, INET, str(1, 'missing')),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 'missing')),
    ],
  },
  {
    name: 'dumps of many objects: chains and rules over several datagrams',
    requests: () => [
      batch(table('t'), ...Array.from({ length: 300 }, (_, i) => chain('t', `chain-${i}-${'x'.repeat(60)}`))),
      batch(...Array.from({ length: 200 }, () => rule('t', 'chain-0-' + 'x'.repeat(60), [saddr(), accept()]))),
      dumpOf(M.GETCHAIN, INET),
      dumpOf(M.GETRULE, INET),
    ],
  },
];

// Rules the kernel takes or refuses by what they say: NAT statements by the chains that reach them, jumps by how
// deep they go, registers by what wrote them, meta and ct keys by the kernel's lists.
const filterAt = (hook: number): [number, number, string] => [hook, 0, 'filter'];
const natAt = (hook: number): [number, number, string] => [hook, hook === HOOK.prerouting || hook === HOOK.output ? -100 : 100, 'nat'];
/** A table with a filter and a nat base chain at the hooks NAT cares about, and regular chains r and r2. */
const natTable = (...more: Buffer[]) =>
  batch(
    table('t'),
    chain('t', 'fpre', filterAt(HOOK.prerouting)),
    chain('t', 'fpost', filterAt(HOOK.postrouting)),
    chain('t', 'npre', natAt(HOOK.prerouting)),
    chain('t', 'npost', natAt(HOOK.postrouting)),
    chain('t', 'nout', natAt(HOOK.output)),
    chain('t', 'nin', natAt(HOOK.input)),
    chain('t', 'r'),
    chain('t', 'r2'),
    ...more,
  );
const toPort = () => [immediate(1, PORT), redir()];
const snatTo = (family = IP) => [immediate(1, family === IP ? ADDR : Array(16).fill(1)), nat(SNAT, family)];
const dnatTo = () => [immediate(1, ADDR), nat(DNAT, IP)];
const markSet = (key: number) => [immediate(1, [1]), metaSet(key, 1)];
const W4 = [1, 2, 3, 4], W8 = Array(8).fill(1), W16 = Array(16).fill(1), W17 = Array(17).fill(1);
const dir = (d: number) => attr(3, Uint8Array.from([d]));
const keys = Array.from({ length: 40 }, (_, k) => k);
const inR = (...exprs: Buffer[][]) => batch(...exprs.map((e) => rule('t', 'r', e)));

const RULE_CASES: Case[] = [
  {
    name: 'NAT statements: redirect and dnat before routing or on output, snat after or on input, masquerade after, in nat chains only',
    requests: () => [
      natTable(),
      ...(
        [
          ['npre', toPort()], ['nout', toPort()], ['npost', toPort()], ['nin', toPort()], ['fpre', toPort()],
          ['npost', snatTo()], ['nin', snatTo()], ['npre', snatTo()], ['nout', snatTo()], ['fpost', snatTo()], ['npost', snatTo(IP6)],
          ['npre', dnatTo()], ['nout', dnatTo()], ['npost', dnatTo()], ['nin', dnatTo()], ['fpre', dnatTo()],
          ['npost', [masq()]], ['nin', [masq()]], ['nout', [masq()]], ['fpost', [masq()]],
          ['fpre', markSet(19)], ['fpost', markSet(19)], ['npre', markSet(19)], ['fpost', markSet(3)],
        ] as const
      ).map(([c, e]) => batch(rule('t', c, [...e]))),
      dumpOf(M.GETRULE, INET, str(1, 't')),
    ],
  },
  {
    name: 'NAT statements in regular chains: judged by every base chain that reaches them, in the same batch or a later one',
    requests: () => [
      natTable(),
      batch(rule('t', 'r', snatTo()), rule('t', 'r', [counter()]), rule('t', 'fpre', [jump('r')]), rule('t', 'r', [counter()])),
      batch(rule('t', 'r', snatTo())),
      batch(rule('t', 'fpre', [jump('r')])),
      batch(rule('t', 'fpre', [goto('r')])),
      batch(rule('t', 'npost', [jump('r')])),
      batch(rule('t', 'r2', [jump('r')]), rule('t', 'fpre', [jump('r2')])),
      batch(rule('t', 'r2', [jump('r')]), rule('t', 'nin', [goto('r2')])),
      batch(rule('t', 'r2', [counter()]), rule('t', 'npre', [jump('r2')])),
      dumpOf(M.GETRULE, INET, str(1, 't')),
    ],
  },
  {
    name: 'a failed validation: the replay names the first bad rule and every later rule of its table, takes handles twice, and needs no END',
    requests: () => [
      natTable(),
      batch(rule('t', 'r', [counter()]), rule('t', 'fpre', toPort()), rule('t', 'r', [counter()]), rule('t', 'npre', toPort()), table('t2'), chain('t2', 'x'), rule('t2', 'x', [counter()])),
      batch(rule('t', 'fpre', toPort()), rule('t', 'missing', [counter()])),
      Buffer.concat([begin(), rule('t', 'fpre', toPort())]),
      Buffer.concat([begin(), rule('t', 'npre', toPort())]),
      batch(table('n'), chain('n', 'f', filterAt(HOOK.input)), rule('n', 'f', [masq()]), rule('n', 'f', [counter()])),
      batch(rule('t', 'r', [counter()])),
      dumpOf(M.GETRULE, INET, str(1, 't')),
      dumpOf(M.GETTABLE, 0),
      nft(M.GETGEN, REQ, 0),
    ],
  },
  {
    name: 'a failed validation across tables: the first bad table in the netns is replayed; new tables fail at once until a commit',
    requests: () => {
      const two = () =>
        batch(
          table('a'), chain('a', 'f', filterAt(HOOK.prerouting)), chain('a', 'n', natAt(HOOK.prerouting)),
          table('b', IP), chain('b', 'f', filterAt(HOOK.prerouting), undefined, IP),
        );
      const badA = () => rule('a', 'f', toPort());
      const badB = () => rule('b', 'f', toPort(), undefined, [], IP);
      const badNew = (name: string) => [table(name), chain(name, 'f', filterAt(HOOK.prerouting)), rule(name, 'f', toPort())];
      return [
        two(),
        batch(badB(), badA()),
        batch(badA(), badB()),
        batch(...badNew('x'), badA()),
        batch(...badNew('x')),
        batch(rule('a', 'missing', [counter()])),
        batch(...badNew('x')),
        batch(),
        batch(...badNew('x')),
        batch(rule('a', 'n', toPort())),
        batch(...badNew('x')),
        batch(badA()),
        batch(table('y')),
        batch(...badNew('x')),
        batch(table('z')),
        dumpOf(M.GETTABLE, 0),
        dumpOf(M.GETRULE, INET, str(1, 'a')),
      ];
    },
  },
  {
    name: 'jumps: a loop no base chain reaches is taken, one it reaches is EMLINK, as is a chain 16 jumps down; 15 are taken',
    requests: () => [
      natTable(...Array.from({ length: 17 }, (_, i) => chain('t', `d${i}`))),
      batch(rule('t', 'r', [jump('r2')]), rule('t', 'r2', [jump('r')])),
      batch(rule('t', 'fpre', [jump('r')])),
      batch(rule('t', 'r', [goto('r')])),
      batch(...Array.from({ length: 16 }, (_, i) => rule('t', `d${i}`, [jump(`d${i + 1}`)]))),
      batch(rule('t', 'fpre', [jump('d2')])),
      batch(rule('t', 'fpre', [jump('d1')])),
      batch(rule('t', 'npost', [goto('d1')])),
      batch(rule('t', 'd16', [jump('r')]), rule('t', 'npost', [jump('d15')])),
      dumpOf(M.GETRULE, INET, str(1, 't')),
    ],
  },
  {
    name: 'registers: a load needs an earlier store of the same rule covering it; register numbers and widths',
    requests: () => [
      natTable(set('t', 's', 1), nft(M.NEWSET, REQ | ACK | CREATE, INET, str(1, 't'), str(2, 's6'), be32(3, 0), be32(4, 8), be32(5, 16), be32(10, 2))),
      inR(
        [metaSet(3, 2)], [payload(1, 12, 4), cmp(1, W8)], [payload(1, 12, 4), lookup('s6')], [payload(1, 8, 16), lookup('s6')], [payload(1, 12, 4), lookup('s')],
        [lookup('nosuch'), expr('nosuchexpr')], [metaSet(3, 2), expr('nosuchexpr')], [ctLoad(3, 1), metaSet(3, 1)], [ctLoad(3, 1), bitwise(1, 1, [0, 0, 0xff, 0xff], [0, 0, 0, 1]), ctSet(3, 1)],
        [immediate(0, W4)], [immediate(5, W4)], [immediate(8, W4), cmp(1, W4)], [immediate(23, W8)], [immediate(22, W8), cmp(22, W8)], [immediate(24, [1])], [immediate(4, W16), cmp(4, W16)],
        [immediate(1, [1]), bitwise(1, 2, W4, [0, 0, 0, 0])], [bitwise(1, 2, W4, [0, 0, 0, 0])], [immediate(1, W8), bitwise(1, 2, W8, W8), cmp(2, W8)], [immediate(1, W8), bitwise(1, 2, W8, W4)],
        [immediate(1, [1]), cmp(1, [])], [cmp(1, [1])], [immediate(1, W16), cmp(1, W17)], [immediate(1, W17)], [immediate(1, [1]), cmp(1, [1], 6)],
        [payload(1, 12, 0)], [payload(0, 12, 4)], [payload(4, 0, 16), cmp(4, W16)], [payload(4, 0, 17)], [expr('payload', be32(1, 1), be32(2, 1))],
        [immediate(1, W4), expr('nat', be32(1, 0), be32(2, 2), be32(3, 1), be32(4, 2))], [immediate(1, W4), expr('nat', be32(1, 5), be32(2, 2), be32(3, 1))],
        [expr('nat', be32(1, 0), be32(2, 2))], [immediate(1, W4), expr('nat', be32(1, 0), be32(2, 7), be32(3, 1))], [immediate(1, W4), expr('nat', be32(1, 0), be32(2, 2), be32(3, 1), be32(7, 0x100))],
        [expr('redir', be32(1, 1))], [expr('masq', be32(2, 1))], [immediate(1, [1]), expr('redir', be32(1, 1), be32(2, 3))], [expr('redir', be32(3, 0x100))], [expr('masq', be32(1, 0x100))],
        [expr('meta', be32(2, 3))], [expr('meta', be32(1, 1))], [expr('meta', be32(2, 3), be32(1, 1), be32(3, 1))], [expr('ct', be32(1, 1))], [expr('ct', be32(2, 3))],
      ),
    ],
  },
  {
    name: 'meta and ct keys: the ones a load or a set takes, how wide each is, and which take a direction',
    requests: () => [
      natTable(),
      ...keys.map((k) => inR([metaLoad(k, 1)], [metaLoad(k, 1), cmp(1, W8)], [metaLoad(k, 1), cmp(1, W16)], [immediate(1, W16), metaSet(k, 1)], [immediate(1, [1]), metaSet(k, 1)])),
      ...keys.map((k) =>
        inR(
          [ctLoad(k, 1)], [ctLoad(k, 1), cmp(1, W8)], [ctLoad(k, 1), cmp(1, W16)], [expr('ct', be32(1, 1), be32(2, k), dir(1)), cmp(1, W16)], [expr('ct', be32(1, 1), be32(2, k), dir(2))],
          [immediate(1, W16), ctSet(k, 1)], [immediate(1, [1]), ctSet(k, 1)], [immediate(1, W16), expr('ct', be32(4, 1), be32(2, k), dir(0))],
        ),
      ),
    ],
  },
  {
    name: 'families: a NAT statement of the other family in an ip table, NAT expressions in arp and bridge tables, ct addresses of ip',
    requests: () => [
      batch(table('i', IP), chain('i', 'p', natAt(HOOK.postrouting), undefined, IP), chain('i', 'r', undefined, undefined, IP)),
      batch(rule('i', 'p', snatTo(IP6), undefined, [], IP)),
      batch(rule('i', 'p', snatTo(IP), undefined, [], IP)),
      batch(rule('i', 'r', [expr('ct', be32(1, 1), be32(2, 8), dir(0)), cmp(1, W8)], undefined, [], IP)),
      batch(rule('i', 'r', [expr('ct', be32(1, 1), be32(2, 8), dir(0)), cmp(1, W4)], undefined, [], IP)),
      batch(table('a', ARP), chain('a', 'r', undefined, undefined, ARP)),
      batch(rule('a', 'r', [masq()], undefined, [], ARP), rule('a', 'r', toPort(), undefined, [], ARP), rule('a', 'r', snatTo(), undefined, [], ARP), rule('a', 'r', [expr('ct', be32(1, 1), be32(2, 8), dir(0))], undefined, [], ARP)),
      batch(table('b', BRIDGE), chain('b', 'r', undefined, undefined, BRIDGE)),
      batch(rule('b', 'r', [masq()], undefined, [], BRIDGE), rule('b', 'r', [metaLoad(17, 1), cmp(1, W16)], undefined, [], BRIDGE), rule('b', 'r', [metaLoad(28, 1)], undefined, [], BRIDGE)),
    ],
  },
];

// What issue 29 found: hooks by family (ingress without a device; netdev numbers its hooks from 0), ct in every
// family, a set's new size beside element adds in one batch, a constant set whose rule goes in the same batch.
const NETDEV = 5;
const FAMILIES = [INET, IP, IP6, ARP, BRIDGE, NETDEV];
const INGRESS_INET = 5;
/** devChain is NEWCHAIN of a filter base chain at hook with priority 0, on device dev when one is given. */
const devChain = (t: string, name: string, family: number, hook: number, dev?: string): Buffer =>
  nft(M.NEWCHAIN, REQ | ACK | CREATE, family, str(1, t), str(3, name), nest(4, be32(1, hook), be32(2, 0), ...(dev ? [str(3, dev)] : [])), str(7, 'filter'));
/** sizedSet is NEWSET of an ipv4_addr set in table t with NFTA_SET_DESC_SIZE size (flags NFT_SET_CONSTANT or none). */
const sizedSet = (name: string, id: number, size: number, flags = 0): Buffer =>
  nft(M.NEWSET, REQ | ACK | CREATE, INET, str(1, 't'), str(2, name), be32(3, flags), be32(4, 7), be32(5, 4), nest(9, be32(1, size)), be32(10, id));
const CT_MARK = 3, CT_STATE = 0, CT_ZONE = 17;
/** ctRules are the ct loads and stores of the Nftables rules (ctState, ctMark, setCtMark, setCtZone) in table f's r. */
const ctRules = (family: number): Buffer[] =>
  [
    [ctLoad(CT_STATE, 1), cmp(1, W4)],
    [ctLoad(CT_MARK, 1), cmp(1, W4)],
    [immediate(1, W4), ctSet(CT_MARK, 1)],
    [immediate(1, [0, 1]), ctSet(CT_ZONE, 1)],
  ].map((e) => batch(rule('f', 'r', e, undefined, [], family)));

const KERNEL_29_CASES: Case[] = [
  {
    name: 'hooks by family: ingress and every other hook number in each family, with and without a device, listed back',
    requests: () => [
      ...FAMILIES.flatMap((f) => [
        batch(table('h', f)),
        ...[0, 1, 2, 3, 4, INGRESS_INET, 6].map((hook) => batch(devChain('h', `c${hook}`, f, hook))),
        batch(devChain('h', 'dev', f, f === NETDEV ? 0 : INGRESS_INET, 'lo')),
        batch(devChain('h', 'absent', f, f === NETDEV ? 1 : INGRESS_INET, 'nosuch0')),
        batch(devChain('h', 'in-dev', f, HOOK.input, 'lo')),
        batch(nft(M.NEWCHAIN, REQ | ACK | CREATE, f, str(1, 'h'), str(3, 'two'), nest(4, be32(1, f === NETDEV ? 0 : INGRESS_INET), be32(2, 0), nest(4, str(1, 'lo'), str(1, 'nosuch1'))), str(7, 'filter'))),
        dumpOf(M.GETCHAIN, f),
      ]),
    ],
  },
  {
    name: 'a base chain added again with a type its family lacks: the hook is compared first, then the type',
    requests: () => [
      batch(table('a', ARP), chain('a', 'b', [0, 0, 'filter'], undefined, ARP), table('i'), chain('i', 'b', [1, 0, 'filter'])),
      batch(chain('a', 'b', [1, 0, 'nat'], undefined, ARP)),
      batch(chain('a', 'b', [0, 0, 'nat'], undefined, ARP)),
      batch(chain('a', 'b', [0, 0, 'nosuch'], undefined, ARP)),
      batch(chain('i', 'b', [1, 0, 'nosuch'])),
      batch(chain('i', 'b', [2, 0, 'nosuch'])),
      batch(chain('i', 'b', [1, 0, 'route'])),
      dumpOf(M.GETCHAIN, 0),
    ],
  },
  {
    name: 'ct in every family: a state and mark load, a mark and zone store, in a regular chain',
    requests: () => FAMILIES.flatMap((f) => [batch(table('f', f), chain('f', 'r', undefined, undefined, f)), ...ctRules(f), dumpOf(M.GETRULE, f)]),
  },
  {
    name: 'a set resized in the batch that adds elements: the adds are checked against the size before it',
    requests: () => [
      batch(table('t'), sizedSet('s', 1, 3), sizedSet('g', 2, 2)),
      batch(sizedSet('s', 1, 2), elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 's', [[10, 0, 0, 1], [10, 0, 0, 2], [10, 0, 0, 3]])),
      batch(elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'g', [[10, 0, 0, 1], [10, 0, 0, 2]])),
      batch(sizedSet('g', 2, 5), elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'g', [[10, 0, 0, 3]])),
      batch(elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'g', [[10, 0, 0, 3]]), sizedSet('g', 2, 5)),
      batch(sizedSet('g', 2, 5)),
      batch(elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'g', [[10, 0, 0, 3]])),
      batch(elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 's', [[10, 0, 0, 4]])),
      batch(sizedSet('s', 1, 4), sizedSet('s', 1, 1), elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 's', [[10, 0, 0, 4]])),
      dumpOf(M.GETSET, INET, str(1, 't')),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 's')),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 'g')),
    ],
  },
  {
    name: 'a constant set whose only rule goes in the batch: its elements stay fixed until the commit',
    requests: () => [
      batch(table('t'), chain('t', 'c'), sizedSet('k', 1, 8, 0x2), elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'k', [[10, 0, 0, 1]]), rule('t', 'c', [saddr(), lookup('k')])),
      batch(nft(M.DELRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c')), elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'k', [[10, 0, 0, 2]])),
      batch(nft(M.DELRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c')), elements(M.DELSETELEM, REQ | ACK, 't', 'k', [[10, 0, 0, 1]])),
      batch(nft(M.DELRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c'), be64(3, 4)), elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'k', [[10, 0, 0, 2]])),
      batch(rule('t', 'c', [saddr(), lookup('k')]), nft(M.DELRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c'))),
      batch(nft(M.DELRULE, REQ | ACK, INET, str(1, 't'), str(2, 'c'))),
      batch(elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'k', [[10, 0, 0, 2]])),
      batch(rule('t', 'c', [saddr(), lookup('k')]), elements(M.NEWSETELEM, REQ | ACK | CREATE, 't', 'k', [[10, 0, 0, 3]])),
      dumpOf(M.GETSETELEM, INET, str(1, 't'), str(2, 'k')),
      dumpOf(M.GETRULE, INET, str(1, 't')),
    ],
  },
];

describePrivileged('FakeNftables answers raw nf_tables requests like the kernel', () => {
  it.each([...CASES, ...RULE_CASES, ...KERNEL_29_CASES].map((c) => [c.name, c] as const))('%s', (_name, c) => {
    resetSeq();
    const requests = c.requests();
    using ns = new TestNetns('nftb');
    const kernel = onKernel(ns, requests);
    const fake = new FakeNftables();
    requests.forEach((req, i) => {
      const got = fake.exchange(req).map(normalize);
      const want = (kernel[i] ?? []).map(normalize);
      expect({ request: i, replies: got }).toEqual({ request: i, replies: want });
    });
  });
});
