// A small, test-only builder of ipset nfnetlink requests: podnet's real encoder lives in C++, and these tests must
// not depend on it, so they spell the bytes out the way the kernel documentation does.
import { isIPv4 } from 'node:net';

export const REQ = 0x1;
export const ACK = 0x4;
export const EXCL = 0x200;
export const CREATE = 0x400;
export const DUMP = 0x300;
const NESTED = 0x8000;
const NBO = 0x4000;

export const CMD = {
  protocol: 1,
  create: 2,
  destroy: 3,
  flush: 4,
  rename: 5,
  swap: 6,
  list: 7,
  save: 8,
  add: 9,
  del: 10,
  test: 11,
  header: 12,
  type: 13,
  getByName: 14,
  getByIndex: 15,
} as const;

export type Bytes = Uint8Array;

function concat(parts: Bytes[]): Bytes {
  return Buffer.concat(parts);
}

export function attr(type: number, payload: Bytes, flags = 0): Bytes {
  const len = 4 + payload.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type | flags, 2);
  out.set(payload, 4);
  return out;
}

export const u8 = (t: number, v: number): Bytes => attr(t, Uint8Array.of(v));
export const be16 = (t: number, v: number): Bytes => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return attr(t, b, NBO);
};
export const be32 = (t: number, v: number): Bytes => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return attr(t, b, NBO);
};
export const be64 = (t: number, v: bigint): Bytes => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(v);
  return attr(t, b, NBO);
};
export const str = (t: number, s: string): Bytes => attr(t, Buffer.from(`${s}\0`));
export const nest = (t: number, ...children: Bytes[]): Bytes => attr(t, concat(children), NESTED);

/** ipBytes turns an address in text form into its 4 or 16 network-order bytes. */
export function ipBytes(ip: string): Bytes {
  if (isIPv4(ip)) return Uint8Array.from(ip.split('.').map(Number));
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = ip.includes('::') && tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** ip builds an IP (or IP_TO, type 2) nest. */
export function ip(addr: string, type = 1): Bytes {
  const b = ipBytes(addr);
  return nest(type, attr(b.length === 4 ? 1 : 2, b, NBO));
}

export const PROTO = u8(1, 7);
export const setname = (n: string): Bytes => str(2, n);
export const data = (...a: Bytes[]): Bytes => nest(7, ...a);

let seqCounter = 1000;

/** msg builds one request message; seq defaults to a fresh number. */
export function msg(cmd: number, flags: number, attrs: Bytes[], seq = ++seqCounter, pid = 0): Bytes {
  const body = concat([Uint8Array.of(2, 0, 0, 0), ...attrs]);
  const out = Buffer.alloc(16 + body.length);
  out.writeUInt32LE(out.length, 0);
  out.writeUInt16LE((6 << 8) | cmd, 4);
  out.writeUInt16LE(flags, 6);
  out.writeUInt32LE(seq, 8);
  out.writeUInt32LE(pid, 12);
  out.set(body, 16);
  return out;
}

export interface CreateOptions {
  hashsize?: number;
  maxelem?: number;
  timeout?: number;
  cadtFlags?: number;
  revision?: number;
}

/** create builds a CREATE request; family 2 (inet) or 10 (inet6). */
export function create(name: string, type: string, family = 2, o: CreateOptions = {}, flags = REQ | ACK | CREATE | EXCL): Bytes {
  const d: Bytes[] = [];
  if (o.hashsize !== undefined) d.push(be32(18, o.hashsize));
  if (o.maxelem !== undefined) d.push(be32(19, o.maxelem));
  if (o.timeout !== undefined) d.push(be32(6, o.timeout));
  if (o.cadtFlags !== undefined) d.push(be32(8, o.cadtFlags));
  const rev = o.revision ?? { 'hash:ip': 6, 'hash:net': 7, 'hash:ip,port': 7 }[type] ?? 0;
  return msg(CMD.create, flags, [PROTO, setname(name), str(3, type), u8(4, rev), u8(5, family), data(...d)]);
}

export interface EntryOptions {
  cidr?: number;
  port?: number;
  proto?: number;
  timeout?: number;
  bytes?: bigint;
  packets?: bigint;
  comment?: string;
  nomatch?: boolean;
  lineno?: number;
  ipTo?: string;
  portTo?: number;
  skbmark?: bigint;
  skbprio?: number;
  skbqueue?: number;
}

/** entry builds the attributes of one DATA nest. */
export function entry(addr: string, o: EntryOptions = {}): Bytes {
  const a: Bytes[] = [ip(addr)];
  if (o.ipTo !== undefined) a.push(ip(o.ipTo, 2));
  if (o.cidr !== undefined) a.push(u8(3, o.cidr));
  if (o.port !== undefined) a.push(be16(4, o.port));
  if (o.portTo !== undefined) a.push(be16(5, o.portTo));
  if (o.timeout !== undefined) a.push(be32(6, o.timeout));
  if (o.proto !== undefined) a.push(u8(7, o.proto));
  if (o.nomatch) a.push(be32(8, 4));
  if (o.lineno !== undefined) a.push(be32(9, o.lineno));
  if (o.bytes !== undefined) a.push(be64(24, o.bytes));
  if (o.packets !== undefined) a.push(be64(25, o.packets));
  if (o.comment !== undefined) a.push(str(26, o.comment));
  if (o.skbmark !== undefined) a.push(be64(27, o.skbmark));
  if (o.skbprio !== undefined) a.push(be32(28, o.skbprio));
  if (o.skbqueue !== undefined) a.push(be16(29, o.skbqueue));
  return data(...a);
}

/** adt builds ADD/DEL/TEST of one entry. */
export function adt(cmd: number, set: string, addr: string, o: EntryOptions = {}, flags = REQ | ACK | EXCL): Bytes {
  return msg(cmd, flags, [PROTO, setname(set), entry(addr, o)]);
}

/** batch builds an ADT-aggregated ADD/DEL: top-level LINENO and one DATA per entry, numbered from 1. */
export function batch(cmd: number, set: string, entries: Bytes[], flags = REQ | ACK | EXCL): Bytes {
  return msg(cmd, flags, [PROTO, setname(set), be32(9, 0), nest(8, ...entries)]);
}

export const simple = (cmd: number, attrs: Bytes[], flags = REQ | ACK): Bytes => msg(cmd, flags, [PROTO, ...attrs]);
export const list = (set?: string, flags = REQ | ACK | DUMP): Bytes =>
  msg(CMD.list, flags, set === undefined ? [PROTO] : [PROTO, setname(set)]);

/** header is a bare nlmsghdr (pid 0), for framing tests that build malformed messages by hand. */
export function header(len: number, type: number, flags: number, seq: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt32LE(len, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(seq, 8);
  return b;
}
