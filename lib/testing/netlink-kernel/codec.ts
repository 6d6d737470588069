/**
 * Netlink framing and attribute codec of the fake kernels. Reading never trusts a length: every attribute is checked
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
export function splitMessages(request: Uint8Array): NlMsg[] {
  // One Buffer view of the whole request: attributes then decode strings from it without further views.
  const buf = Buffer.from(request.buffer, request.byteOffset, request.byteLength);
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

/** align4 rounds n up to NLMSG_ALIGN / NLA_ALIGN. */
export function align4(n: number): number {
  return (n + 3) & ~3;
}

/**
 * Attr is one netlink attribute: its payload is buf[off, off + len). The view `value` is made on demand because a
 * batch of 100k entries would otherwise allocate several views per entry.
 */
export class Attr {
  constructor(
    readonly buf: Buffer,
    readonly off: number,
    readonly len: number,
    readonly type: number,
    readonly nested: boolean,
    readonly netOrder: boolean,
  ) {}

  get value(): Uint8Array {
    return this.buf.subarray(this.off, this.off + this.len);
  }

  /** children parses the payload as attributes. */
  children(): AttrList {
    return parseAttrs(this.buf, this.off, this.off + this.len);
  }
}

/**
 * AttrTable maps attribute types to the last attribute of that type, as nla_parse fills its table. It is an array
 * because it is built once per entry of a batch, where a Map costs too much.
 */
export class AttrTable {
  readonly #slots: (Attr | undefined)[] = [];

  get(type: number): Attr | undefined {
    return this.#slots[type];
  }

  has(type: number): boolean {
    return this.#slots[type] !== undefined;
  }

  set(type: number, attr: Attr): void {
    this.#slots[type] = attr;
  }
}

/** AttrList is a parsed attribute stream: the last attribute of each type wins, as in nla_parse. */
export interface AttrList {
  byType: AttrTable;
  /** Every attribute in order (ADT holds repeated DATA). */
  all: Attr[];
  /** Bytes at the end that do not form a whole attribute (a truncated or overlong one). */
  trailing: number;
}

/** parseAttrs reads the attributes in buf[start, end); it never reads past end. */
export function parseAttrs(bytes: Uint8Array, start = 0, end = bytes.byteLength): AttrList {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const byType = new AttrTable();
  const all: Attr[] = [];
  let off = start;
  while (end - off >= 4) {
    const len = (buf[off] ?? 0) | ((buf[off + 1] ?? 0) << 8);
    if (len < 4 || len > end - off) break;
    const raw = (buf[off + 2] ?? 0) | ((buf[off + 3] ?? 0) << 8);
    const attr = new Attr(buf, off + 4, len - 4, raw & NLA_TYPE_MASK, (raw & NLA_F_NESTED) !== 0, (raw & NLA_F_NET_BYTEORDER) !== 0);
    byType.set(attr.type, attr);
    all.push(attr);
    off += align4(len);
  }
  return { byType, all, trailing: Math.max(0, end - off) };
}

// Readers take the first bytes of the payload; policies have checked the length before they run, and a short
// payload reads as zeros rather than past the attribute.
function byte(a: Attr, i: number): number {
  return i < a.len ? (a.buf[a.off + i] ?? 0) : 0;
}

/** readU8 reads a u8 payload. */
export function readU8(a: Attr): number {
  return byte(a, 0);
}

/** readBe16 reads a network-order u16 payload (ports). */
export function readBe16(a: Attr): number {
  return (byte(a, 0) << 8) | byte(a, 1);
}

/** readBe32 reads a network-order u32 payload. */
export function readBe32(a: Attr): number {
  return ((byte(a, 0) << 24) | (byte(a, 1) << 16) | (byte(a, 2) << 8) | byte(a, 3)) >>> 0;
}

/** readBe64 reads a network-order u64 payload (counters). */
export function readBe64(a: Attr): bigint {
  return (BigInt(readBe32(a)) << 32n) | BigInt(((byte(a, 4) << 24) | (byte(a, 5) << 16) | (byte(a, 6) << 8) | byte(a, 7)) >>> 0);
}

/**
 * readNulString returns the string before the first NUL, or undefined when the payload has no NUL or the string is
 * longer than maxLen bytes (what the NLA_NUL_STRING policy rejects).
 */
export function readNulString(a: Attr, maxLen: number): string | undefined {
  const nul = nulIndex(a);
  if (nul < 0 || nul > maxLen) return undefined;
  return a.buf.toString('utf8', a.off, a.off + nul);
}

/** nulIndex is the offset of the first NUL in a's payload, or -1 (what NLA_NUL_STRING validation looks for). */
export function nulIndex(a: Attr): number {
  const end = a.off + a.len;
  for (let i = a.off; i < end; i++) if (a.buf[i] === 0) return i - a.off;
  return -1;
}

/** u32attr writes a host-order u32 attribute (nla_put_u32). */
export function u32attr(w: MsgWriter, type: number, v: number): void {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  w.raw(type, b);
}

/** u16attr writes a host-order u16 attribute (nla_put_u16). */
export function u16attr(w: MsgWriter, type: number, v: number): void {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(v);
  w.raw(type, b);
}

/** readU32 reads a host-order u32 payload; the policy has checked that at least 4 bytes are there. */
export function readU32(a: Attr): number {
  return a.len >= 4 ? a.buf.readUInt32LE(a.off) : 0;
}

/** readBytes copies up to n payload bytes, zero-filled to n (as nla_memcpy into a zeroed field). */
export function readBytes(a: Attr, n: number): Uint8Array {
  const out = new Uint8Array(n);
  out.set(a.buf.subarray(a.off, a.off + Math.min(n, a.len)));
  return out;
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
    this.strBytes(type, Buffer.from(s, 'utf8'));
  }

  /** strBytes writes already encoded string bytes and the NUL. */
  strBytes(type: number, enc: Uint8Array): void {
    const at = this.#header(type, enc.length + 1);
    this.#buf.set(enc, at);
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

const SLAB_SIZE = 64 * 1024;
let slab = new Uint8Array(SLAB_SIZE);
let slabUsed = 0;

/**
 * copyBytes copies buf[off, off + len) out of a request (whose buffer the caller may reuse) into a shared slab:
 * one ArrayBuffer per stored address would dominate the cost of a 100k-entry batch.
 */
export function copyBytes(buf: Uint8Array, off: number, len: number): Uint8Array {
  if (slabUsed + len > SLAB_SIZE) {
    slab = new Uint8Array(SLAB_SIZE);
    slabUsed = 0;
  }
  const out = slab.subarray(slabUsed, slabUsed + len);
  out.set(buf.subarray(off, off + len));
  slabUsed += len;
  return out;
}
