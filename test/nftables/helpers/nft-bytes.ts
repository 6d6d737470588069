// Raw nf_tables requests for the byte-level differential: message and attribute builders, expressions in the
// kernel's own form (so that what it dumps back is what was sent), a python bridge that sends them to the kernel
// from inside a namespace, and the normal form replies are compared in.
import { execFileSync } from 'node:child_process';

import { CLI_ENV, type TestNetns } from '../../helpers/netns.js';

// The bridge reads one hex sendmsg per line and prints the reply datagrams of each as one line of hex; a GETGEN
// with ACK after every request marks where its replies end (and is left out).
const PY_BRIDGE = `
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

export const REQ = 1, ACK = 4, EXCL = 0x200, CREATE = 0x400, APPEND = 0x800, REPLACE = 0x100, NONREC = 0x100, DUMP = 0x300;
export const M = { NEWTABLE: 0, GETTABLE: 1, DELTABLE: 2, NEWCHAIN: 3, GETCHAIN: 4, DELCHAIN: 5, NEWRULE: 6, GETRULE: 7, DELRULE: 8, NEWSET: 9, GETSET: 10, DELSET: 11, NEWSETELEM: 12, GETSETELEM: 13, DELSETELEM: 14, GETGEN: 16 };
export const INET = 1, IP = 2, ARP = 3, BRIDGE = 7, IP6 = 10;
/** Hook numbers (NF_INET_*). */
export const HOOK = { prerouting: 0, input: 1, forward: 2, output: 3, postrouting: 4 } as const;

export function attr(type: number, payload: Uint8Array, nested = false): Buffer {
  const out = Buffer.alloc((4 + payload.length + 3) & ~3);
  out.writeUInt16LE(4 + payload.length, 0);
  out.writeUInt16LE(type | (nested ? 0x8000 : 0), 2);
  out.set(payload, 4);
  return out;
}
export const str = (type: number, s: string): Buffer => attr(type, Buffer.from(`${s}\0`));
export const be32 = (type: number, v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return attr(type, b);
};
export const be64 = (type: number, v: number): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(v));
  return attr(type, b);
};
export const nest = (type: number, ...parts: Buffer[]): Buffer => attr(type, Buffer.concat(parts), true);
export const comment = (type: number, text: string): Buffer => attr(type, Buffer.concat([Buffer.from([0, text.length + 1]), Buffer.from(`${text}\0`)]));

let seq = 100;
/** resetSeq starts the sequence numbers again, so that kernel and fake see the same bytes. */
export function resetSeq(): void {
  seq = 100;
}
export function msg(type: number, flags: number, family: number, attrs: Buffer[], resId = 0): Buffer {
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
export const nft = (m: number, flags: number, family: number, ...attrs: Buffer[]): Buffer => msg((10 << 8) | m, flags, family, attrs);
export const begin = (resId = 10, ...attrs: Buffer[]): Buffer => msg(16, REQ | ACK, 0, attrs, resId);
export const end = (): Buffer => msg(17, REQ, 0, []);
export const batch = (...msgs: Buffer[]): Buffer => Buffer.concat([begin(), ...msgs, end()]);

// Objects, as nft sends them (every message acknowledged).
export const table = (name: string, family = INET, flags = REQ | ACK | CREATE): Buffer => nft(M.NEWTABLE, flags, family, str(1, name), be32(2, 0));
export const chain = (t: string, name: string, hook?: [number, number, string], flags = REQ | ACK | CREATE, family = INET): Buffer =>
  nft(M.NEWCHAIN, flags, family, str(1, t), str(3, name), ...(hook ? [nest(4, be32(1, hook[0]), be32(2, hook[1])), str(7, hook[2])] : []));
export const set = (t: string, name: string, id: number, flags = REQ | ACK | CREATE): Buffer =>
  nft(M.NEWSET, flags, INET, str(1, t), str(2, name), be32(3, 0), be32(4, 7), be32(5, 4), be32(10, id));
export const elements = (m: number, flags: number, t: string, s: string, keys: number[][], note?: string): Buffer =>
  nft(m, flags, INET, str(1, t), str(2, s), nest(3, ...keys.map((k) => nest(1, nest(1, attr(1, Uint8Array.from(k))), ...(note ? [comment(6, note)] : [])))));
export const rule = (t: string, c: string, exprs: Buffer[], flags = REQ | ACK | CREATE | APPEND, extra: Buffer[] = [], family = INET): Buffer =>
  nft(M.NEWRULE, flags, family, str(1, t), str(2, c), ...extra, nest(4, ...exprs));
export const dumpOf = (m: number, family: number, ...attrs: Buffer[]): Buffer => nft(m, REQ | DUMP, family, ...attrs);

// Expressions in the kernel's own form.
export const expr = (name: string, ...data: Buffer[]): Buffer => nest(1, str(1, name), nest(2, ...data));
export const verdict = (code: number, to?: string): Buffer => expr('immediate', be32(1, 0), nest(2, nest(2, be32(1, code), ...(to ? [str(2, to)] : []))));
export const accept = (): Buffer => verdict(1);
export const jump = (to: string): Buffer => verdict(-3, to);
export const goto = (to: string): Buffer => verdict(-4, to);
/** payload load LEN @ network header + OFFSET => reg DREG (ip saddr: 12, 4). */
export const payload = (dreg: number, offset: number, len: number, base = 1): Buffer => expr('payload', be32(1, dreg), be32(2, base), be32(3, offset), be32(4, len));
export const saddr = (): Buffer => payload(1, 12, 4);
export const metaLoad = (key: number, dreg: number): Buffer => expr('meta', be32(2, key), be32(1, dreg));
export const metaSet = (key: number, sreg: number): Buffer => expr('meta', be32(2, key), be32(3, sreg));
export const ctLoad = (key: number, dreg: number): Buffer => expr('ct', be32(1, dreg), be32(2, key));
export const ctSet = (key: number, sreg: number): Buffer => expr('ct', be32(4, sreg), be32(2, key));
export const cmp = (sreg: number, data: number[], op = 0): Buffer => expr('cmp', be32(1, sreg), be32(2, op), nest(3, attr(1, Uint8Array.from(data))));
export const bitwise = (sreg: number, dreg: number, mask: number[], xor: number[]): Buffer =>
  expr('bitwise', be32(1, sreg), be32(2, dreg), be32(3, mask.length), be32(6, 0), nest(4, attr(1, Uint8Array.from(mask))), nest(5, attr(1, Uint8Array.from(xor))));
export const immediate = (dreg: number, data: number[]): Buffer => expr('immediate', be32(1, dreg), nest(2, attr(1, Uint8Array.from(data))));
export const lookup = (s: string, sreg = 1): Buffer => expr('lookup', str(1, s), be32(2, sreg), be32(5, 0));
export const counter = (): Buffer => expr('counter', be64(1, 0), be64(2, 0));
/** redir to the port in reg PROTO (flags NF_NAT_RANGE_PROTO_SPECIFIED, as the kernel dumps it). */
export const redir = (proto = 1): Buffer => expr('redir', be32(1, proto), be32(2, proto), be32(3, 2));
export const masq = (): Buffer => expr('masq');
/** nat snat (0) or dnat (1) of FAMILY to the address in reg ADDR (flags NF_NAT_RANGE_MAP_IPS, as dumped). */
export const nat = (type: number, family: number, addr = 1): Buffer => expr('nat', be32(1, type), be32(2, family), be32(3, addr), be32(4, addr), be32(7, 1));
export const SNAT = 0, DNAT = 1;
/** The 4 bytes of 169.254.7.127 or a port 15001, as immediates load them. */
export const ADDR = [169, 254, 7, 127], PORT = [0x3a, 0x99];

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

const NLMSGERR_ATTR_OFFS = 2;

/** The offset an error's extended ACK points at (NLMSGERR_ATTR_OFFS), undefined without one. */
function errorOffset(b: Buffer, start: number, end: number): number | undefined {
  let a = start;
  while (a + 4 <= end) {
    const al = b.readUInt16LE(a);
    if (al < 4) break;
    if ((b.readUInt16LE(a + 2) & 0x3fff) === NLMSGERR_ATTR_OFFS && al >= 8) return b.readUInt32LE(a + 4);
    a += (al + 3) & ~3;
  }
  return undefined;
}

/**
 * A datagram as compared: messages with pid left out, errors by errno, echo and the offset their extended ACK
 * points at, set dumps without NFTA_SET_TYPE.
 */
export function normalize(d: Uint8Array): unknown[] {
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
      // An error echoes the whole request (an ACK its header).
      const echoed = error === 0 || flags & 0x100 ? 16 : echoLen;
      const echo = b.subarray(off + 20, off + 20 + (error === 0 ? 16 : echoLen)).toString('hex');
      const offset = errorOffset(b, off + 20 + ((echoed + 3) & ~3), off + len);
      out.push({ error, seq: s, echo, capped: (flags & 0x100) !== 0, ...(offset !== undefined ? { offset } : {}) });
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

/** onKernel sends the requests one by one in the namespace and returns the reply datagrams of each. */
export function onKernel(ns: TestNetns, requests: Buffer[]): Uint8Array[][] {
  const input = requests.map((r) => r.toString('hex')).join('\n') + '\n';
  const out = execFileSync('ip', ['netns', 'exec', ns.name, 'python3', '-c', PY_BRIDGE], { input, encoding: 'utf8', env: CLI_ENV, maxBuffer: 1 << 28 });
  return out
    .split('\n')
    .slice(0, requests.length)
    .map((line) => (line.trim() === '' ? [] : line.trim().split(' ').map((h) => Buffer.from(h, 'hex'))));
}
