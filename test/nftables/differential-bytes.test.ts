// Named request sequences in raw nf_tables bytes, sent to the kernel (in a fresh namespace per case, through a small
// python bridge on a NETLINK_NETFILTER socket with extended ACKs, as podnet's) and to FakeNftables: the replies must
// be the same datagram for datagram, message for message (type, flags, seq, nfgenmsg, attributes; for errors the
// errno and the echoed message). What the Nftables client cannot send yet is covered here: rules with positions,
// replace and delete by handle, set and chain references, unknown expressions, batch framing, GETs, the generation.
import { execFileSync } from 'node:child_process';

import { expect, it } from 'vitest';

import { FakeNftables } from '../../lib/testing/index.js';
import { CLI_ENV, TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

// The bridge reads one hex sendmsg per line and prints the reply datagrams of each as one line of hex; a GETGEN
// with ACK after every request marks where its replies end (and is left out).
const BRIDGE = `
import socket, struct, sys
SENT = 0xFFFFFFF0
def hdrs(d):
    off = 0
    while off + 16 <= len(d):
        ln, t, f, seq, _ = struct.unpack_from('=IHHII', d, off)
        yield t, f, seq
        if ln < 16: break
        off += (ln + 3) & ~3
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)
s.setsockopt(270, 11, 1)
s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)
s.bind((0, 0))
s.settimeout(5)
gen = struct.pack('=IHHII', 20, (10 << 8) | 16, 1 | 4, SENT, 0) + bytes(4)
for line in sys.stdin:
    line = line.strip()
    if not line: continue
    req = bytes.fromhex(line)
    dumps = {seq for t, f, seq in hdrs(req) if f & 0x300 == 0x300 and t != 16}
    s.send(req)
    out = []
    while dumps:
        d = s.recv(1 << 20)
        out.append(d.hex())
        for t, f, seq in hdrs(d):
            if t in (2, 3): dumps.discard(seq)
    s.send(gen)
    while True:
        d = s.recv(1 << 20)
        seqs = [seq for t, f, seq in hdrs(d)]
        if all(q == SENT for q in seqs):
            if any(t == 2 for t, f, q in hdrs(d)): break
            continue
        out.append(d.hex())
    print(' '.join(out), flush=True)
`;

const REQ = 1, ACK = 4, EXCL = 0x200, CREATE = 0x400, APPEND = 0x800, REPLACE = 0x100, NONREC = 0x100, DUMP = 0x300;
const M = { NEWTABLE: 0, GETTABLE: 1, DELTABLE: 2, NEWCHAIN: 3, GETCHAIN: 4, DELCHAIN: 5, NEWRULE: 6, GETRULE: 7, DELRULE: 8, NEWSET: 9, GETSET: 10, DELSET: 11, NEWSETELEM: 12, GETSETELEM: 13, DELSETELEM: 14, GETGEN: 16 };
const INET = 1, IP = 2;

function attr(type: number, payload: Uint8Array, nested = false): Buffer {
  const out = Buffer.alloc((4 + payload.length + 3) & ~3);
  out.writeUInt16LE(4 + payload.length, 0);
  out.writeUInt16LE(type | (nested ? 0x8000 : 0), 2);
  out.set(payload, 4);
  return out;
}
const str = (type: number, s: string) => attr(type, Buffer.from(`${s}\0`));
const be32 = (type: number, v: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return attr(type, b);
};
const be64 = (type: number, v: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(v));
  return attr(type, b);
};
const nest = (type: number, ...parts: Buffer[]) => attr(type, Buffer.concat(parts), true);
const comment = (type: number, text: string) => attr(type, Buffer.concat([Buffer.from([0, text.length + 1]), Buffer.from(`${text}\0`)]));

let seq = 100;
function msg(type: number, flags: number, family: number, attrs: Buffer[], resId = 0): Buffer {
  const body = Buffer.concat(attrs);
  const h = Buffer.alloc(20);
  h.writeUInt32LE(20 + body.length, 0);
  h.writeUInt16LE(type, 4);
  h.writeUInt16LE(flags, 6);
  h.writeUInt32LE(seq++, 8);
  h[16] = family;
  h.writeUInt16BE(resId, 18);
  return Buffer.concat([h, body]);
}
const nft = (m: number, flags: number, family: number, ...attrs: Buffer[]) => msg((10 << 8) | m, flags, family, attrs);
const begin = (resId = 10, ...attrs: Buffer[]) => msg(16, REQ | ACK, 0, attrs, resId);
const end = () => msg(17, REQ, 0, []);
const batch = (...msgs: Buffer[]) => Buffer.concat([begin(), ...msgs, end()]);

// Objects, as nft sends them (every message acknowledged).
const table = (name: string, family = INET, flags = REQ | ACK | CREATE) => nft(M.NEWTABLE, flags, family, str(1, name), be32(2, 0));
const chain = (t: string, name: string, hook?: [number, number, string], flags = REQ | ACK | CREATE, family = INET) =>
  nft(M.NEWCHAIN, flags, family, str(1, t), str(3, name), ...(hook ? [nest(4, be32(1, hook[0]), be32(2, hook[1])), str(7, hook[2])] : []));
const set = (t: string, name: string, id: number, flags = REQ | ACK | CREATE) =>
  nft(M.NEWSET, flags, INET, str(1, t), str(2, name), be32(3, 0), be32(4, 7), be32(5, 4), be32(10, id));
const elements = (m: number, flags: number, t: string, s: string, keys: number[][], note?: string) =>
  nft(m, flags, INET, str(1, t), str(2, s), nest(3, ...keys.map((k) => nest(1, nest(1, attr(1, Uint8Array.from(k))), ...(note ? [comment(6, note)] : [])))));

// Expressions in the kernel's own form, so that what it dumps back is what was sent.
const expr = (name: string, ...data: Buffer[]) => nest(1, str(1, name), nest(2, ...data));
const accept = () => expr('immediate', be32(1, 0), nest(2, nest(2, be32(1, 1))));
const jump = (to: string) => expr('immediate', be32(1, 0), nest(2, nest(2, be32(1, -3), str(2, to))));
const saddr = () => expr('payload', be32(1, 1), be32(2, 1), be32(3, 12), be32(4, 4));
const lookup = (s: string) => expr('lookup', str(1, s), be32(2, 1), be32(5, 0));
const rule = (t: string, c: string, exprs: Buffer[], flags = REQ | ACK | CREATE | APPEND, extra: Buffer[] = []) =>
  nft(M.NEWRULE, flags, INET, str(1, t), str(2, c), ...extra, nest(4, ...exprs));
const dumpOf = (m: number, family: number, ...attrs: Buffer[]) => nft(m, REQ | DUMP, family, ...attrs);

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

/** The attributes of a nest, each as hex: the kernel lists a hash set's elements in its hash order. */
function children(b: Buffer): string[] {
  const out: string[] = [];
  let a = 0;
  while (a + 4 <= b.length) {
    const al = b.readUInt16LE(a);
    if (al < 4) break;
    out.push(b.subarray(a, a + al).toString('hex'));
    a += (al + 3) & ~3;
  }
  return out;
}

/** A datagram as compared: messages with pid and extended-ACK TLVs left out, set dumps without NFTA_SET_TYPE. */
function normalize(d: Uint8Array): unknown[] {
  const b = Buffer.from(d);
  const out: unknown[] = [];
  let off = 0;
  while (off + 16 <= b.length) {
    const len = b.readUInt32LE(off);
    const type = b.readUInt16LE(off + 4);
    const flags = b.readUInt16LE(off + 6);
    const s = b.readUInt32LE(off + 8);
    if (type === 2) {
      const error = b.readInt32LE(off + 16);
      const echoLen = b.readUInt32LE(off + 20);
      // An error echoes the whole request (an ACK its header): compare the echo, not the TLVs after it.
      const echo = b.subarray(off + 20, off + 20 + (error === 0 ? 16 : echoLen)).toString('hex');
      out.push({ error, seq: s, echo, capped: (flags & 0x100) !== 0 });
    } else if (type === 3) {
      out.push({ done: b.readInt32LE(off + 16), seq: s, flags });
    } else {
      const gen = b.subarray(off + 16, off + 20).toString('hex');
      const attrs: string[] = [];
      let a = off + 20;
      while (a + 4 <= off + len) {
        const al = b.readUInt16LE(a);
        const at = b.readUInt16LE(a + 2);
        if (al < 4) break;
        // NFTA_SET_TYPE names the set's backend by a kernel pointer; NFTA_GEN_PROC_* the process.
        const skip = (type === 0xa09 && at === 19) || (type === 0xa0f && (at === 2 || at === 3));
        if (type === 0xa0c && at === 3) attrs.push(`elements ${children(b.subarray(a + 4, a + al)).sort().join(' ')}`);
        else if (!skip) attrs.push(b.subarray(a, a + al).toString('hex'));
        a += (al + 3) & ~3;
      }
      out.push({ type, flags, seq: s, gen, attrs });
    }
    off += (len + 3) & ~3;
  }
  return out;
}

function onKernel(ns: TestNetns, requests: Buffer[]): Uint8Array[][] {
  const input = requests.map((r) => r.toString('hex')).join('\n') + '\n';
  const out = execFileSync('ip', ['netns', 'exec', ns.name, 'python3', '-c', BRIDGE], { input, encoding: 'utf8', env: CLI_ENV, maxBuffer: 1 << 28 });
  return out
    .split('\n')
    .slice(0, requests.length)
    .map((line) => (line.trim() === '' ? [] : line.trim().split(' ').map((h) => Buffer.from(h, 'hex'))));
}

describePrivileged('FakeNftables answers raw nf_tables requests like the kernel', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    seq = 100;
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
