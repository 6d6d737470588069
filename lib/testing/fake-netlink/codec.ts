/**
 * Netlink framing and attribute codec for the fake kernel. Reading never trusts a length: every attribute is checked
 * against its container, and what does not fit is reported (as `trailing`) instead of being skipped in silence; the
 * caller decides what the kernel would do with it (nfnetlink ignores it at the top level, ipset's strict nested
 * parsers reject it).
 */
import { NLA_F_NESTED, NLA_F_NET_BYTEORDER, NLA_TYPE_MASK, NLMSG_HDRLEN } from './constants.js';

/** NlMsg is one netlink message of a request, as a view into the request buffer. */
export interface NlMsg {
  len: number;
  type: number;
  flags: number;
  seq: number;
  pid: number;
  /** The whole message, header included (what an error reply echoes). */
  bytes: Uint8Array;
}

/** splitMessages cuts one sendmsg buffer into messages, stopping where the kernel's netlink_rcv_skb stops. */
export function splitMessages(buf: Uint8Array): NlMsg[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: NlMsg[] = [];
  let off = 0;
  while (buf.byteLength - off >= NLMSG_HDRLEN) {
    const len = view.getUint32(off, true);
    // The kernel drops the rest of the buffer silently on a bad length; so does the fake.
    if (len < NLMSG_HDRLEN || len > buf.byteLength - off) break;
    out.push({
      len,
      type: view.getUint16(off + 4, true),
      flags: view.getUint16(off + 6, true),
      seq: view.getUint32(off + 8, true),
      pid: view.getUint32(off + 12, true),
      bytes: buf.subarray(off, off + len),
    });
    off += align4(len);
  }
  return out;
}

export function align4(n: number): number {
  return (n + 3) & ~3;
}

/** Attr is one netlink attribute; `value` is a view of its payload. */
export interface Attr {
  type: number;
  nested: boolean;
  netOrder: boolean;
  value: Uint8Array;
}

/** AttrList is a parsed attribute stream: the last attribute of each type wins, as in nla_parse. */
export interface AttrList {
  byType: Map<number, Attr>;
  /** Every attribute in order (ADT holds repeated DATA). */
  all: Attr[];
  /** Bytes at the end that do not form a whole attribute (a truncated or overlong one). */
  trailing: number;
}

/** parseAttrs reads the attributes in buf[start, end); it never reads past end. */
export function parseAttrs(buf: Uint8Array, start = 0, end = buf.byteLength): AttrList {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const byType = new Map<number, Attr>();
  const all: Attr[] = [];
  let off = start;
  while (end - off >= 4) {
    const len = view.getUint16(off, true);
    if (len < 4 || len > end - off) break;
    const raw = view.getUint16(off + 2, true);
    const attr: Attr = {
      type: raw & NLA_TYPE_MASK,
      nested: (raw & NLA_F_NESTED) !== 0,
      netOrder: (raw & NLA_F_NET_BYTEORDER) !== 0,
      value: buf.subarray(off + 4, off + len),
    };
    byType.set(attr.type, attr);
    all.push(attr);
    off += align4(len);
  }
  return { byType, all, trailing: Math.max(0, end - off) };
}

/** parseNested parses the payload of a nested attribute. */
export function parseNested(attr: Attr): AttrList {
  return parseAttrs(attr.value);
}

export function readU8(a: Attr): number {
  return a.value[0] ?? 0;
}

export function readBe16(a: Attr): number {
  return ((a.value[0] ?? 0) << 8) | (a.value[1] ?? 0);
}

export function readBe32(a: Attr): number {
  return (((a.value[0] ?? 0) << 24) | ((a.value[1] ?? 0) << 16) | ((a.value[2] ?? 0) << 8) | (a.value[3] ?? 0)) >>> 0;
}

export function readBe64(a: Attr): bigint {
  let v = 0n;
  for (let i = 0; i < 8; i++) v = (v << 8n) | BigInt(a.value[i] ?? 0);
  return v;
}

/**
 * readNulString returns the string before the first NUL, or undefined when the payload has no NUL or the string is
 * longer than maxLen bytes (what the NLA_NUL_STRING policy rejects).
 */
export function readNulString(a: Attr, maxLen: number): string | undefined {
  const nul = a.value.indexOf(0);
  if (nul < 0 || nul > maxLen) return undefined;
  return Buffer.from(a.value.buffer, a.value.byteOffset, nul).toString('utf8');
}

/**
 * MsgWriter appends netlink messages and attributes to one growing buffer; a datagram is what it holds when taken.
 * Integers marked "net" get NLA_F_NET_BYTEORDER, as the kernel's nla_put_net* do.
 */
export class MsgWriter {
  #buf: Buffer;
  #len = 0;
  #stack: number[] = [];

  constructor(initial = 4096) {
    this.#buf = Buffer.alloc(initial);
  }

  get length(): number {
    return this.#len;
  }

  #reserve(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const next = Buffer.alloc(size);
    this.#buf.copy(next, 0, 0, this.#len);
    this.#buf = next;
  }

  /** beginMessage writes an nlmsghdr (length patched by endMessage); returns its offset. */
  beginMessage(type: number, flags: number, seq: number, pid: number): number {
    this.#reserve(NLMSG_HDRLEN);
    const at = this.#len;
    this.#buf.writeUInt32LE(0, at);
    this.#buf.writeUInt16LE(type, at + 4);
    this.#buf.writeUInt16LE(flags, at + 6);
    this.#buf.writeUInt32LE(seq, at + 8);
    this.#buf.writeUInt32LE(pid, at + 12);
    this.#len += NLMSG_HDRLEN;
    return at;
  }

  endMessage(at: number): void {
    this.#buf.writeUInt32LE(this.#len - at, at);
  }

  /** nfgenmsg: the kernel always answers with family AF_INET, version 0, res_id 0. */
  nfgen(family = 2): void {
    this.bytes(Uint8Array.of(family, 0, 0, 0));
  }

  bytes(data: Uint8Array): void {
    this.#reserve(data.byteLength);
    this.#buf.set(data, this.#len);
    this.#len += data.byteLength;
  }

  #header(type: number, payloadLen: number): number {
    const total = align4(4 + payloadLen);
    this.#reserve(total);
    const at = this.#len;
    this.#buf.writeUInt16LE(4 + payloadLen, at);
    this.#buf.writeUInt16LE(type, at + 2);
    // Padding bytes must be zero: the buffer may be reused after truncate().
    this.#buf.fill(0, at + 4 + payloadLen, at + total);
    this.#len = at + total;
    return at + 4;
  }

  u8(type: number, v: number): void {
    this.#buf[this.#header(type, 1)] = v;
  }

  be16(type: number, v: number): void {
    this.#buf.writeUInt16BE(v, this.#header(type | NLA_F_NET_BYTEORDER, 2));
  }

  be32(type: number, v: number): void {
    this.#buf.writeUInt32BE(v >>> 0, this.#header(type | NLA_F_NET_BYTEORDER, 4));
  }

  be64(type: number, v: bigint): void {
    this.#buf.writeBigUInt64BE(v, this.#header(type | NLA_F_NET_BYTEORDER, 8));
  }

  raw(type: number, data: Uint8Array): void {
    this.#buf.set(data, this.#header(type, data.byteLength));
  }

  /** str writes a NUL-terminated string, as nla_put_string does. */
  str(type: number, s: string): void {
    const enc = Buffer.from(s, 'utf8');
    const at = this.#header(type, enc.length + 1);
    enc.copy(this.#buf, at);
    this.#buf[at + enc.length] = 0;
  }

  beginNest(type: number): void {
    this.#reserve(4);
    this.#stack.push(this.#len);
    this.#buf.writeUInt16LE(type | NLA_F_NESTED, this.#len + 2);
    this.#len += 4;
  }

  endNest(): void {
    const at = this.#stack.pop();
    if (at === undefined) throw new Error('fake-netlink: endNest without beginNest');
    this.#buf.writeUInt16LE(this.#len - at, at);
  }

  /** truncate drops everything after offset (a half-written entry that did not fit a dump page). */
  truncate(offset: number): void {
    this.#len = offset;
  }

  u32le(v: number): void {
    this.#reserve(4);
    this.#buf.writeInt32LE(v | 0, this.#len);
    this.#len += 4;
  }

  /** take returns a copy of what was written and empties the writer. */
  take(): Uint8Array {
    const out = new Uint8Array(this.#len);
    out.set(this.#buf.subarray(0, this.#len));
    this.#len = 0;
    this.#stack = [];
    return out;
  }
}
