/**
 * Entry records, the binary form in which entries cross the N-API boundary in
 * bulk (layout documented in native/ipset/record.h; host byte order).
 */
import { endianness } from 'node:os';

import { formatIp } from '../address/index.js';
import type { EntryFields } from './entry.js';
import { protoName } from './entry.js';
import type { IpsetListedEntry } from './types.js';

const HEADER = 48;
const HAS_CIDR = 1;
const HAS_PORT = 2;
const HAS_PROTO = 4;
const HAS_TIMEOUT = 8;
const HAS_COMMENT = 16;
const HAS_COUNTERS = 32;
const NOMATCH = 64;

const align8 = (n: number) => (n + 7) & ~7;
/** Records are in host byte order: the header's words are written in it. */
const HOST_LE = endianness() === 'LE';

function viewOf(b: Buffer): DataView {
  return new DataView(b.buffer, b.byteOffset, b.length);
}

/** writeUtf8 writes s at offset as UTF-8 and returns its byte length; ASCII without a call into C++. */
function writeUtf8(b: Buffer, s: string, offset: number): number {
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return b.write(s, offset, 'utf8');
    b[offset + i] = c;
  }
  return n;
}

/**
 * RecordWriter packs entries into one growing buffer, reused between batches. Every byte of a record is written
 * (header, zeroed reserved bytes, padding), so the buffer needs no zero fill: a 100k-entry batch does not stall
 * the event loop clearing megabytes it is about to overwrite.
 */
export class RecordWriter {
  #buf: Buffer;
  /** #buf as words: a record's header and zeroed fields go in 4 bytes a store, not 1. */
  #view: DataView;
  readonly #initial: number;
  #pos = 0;
  count = 0;

  readonly #fixed: boolean;

  /** With `fixed`, records are written into that buffer only (a sync channel's frame); it never grows. */
  constructor(initialBytes = 64 * 1024, fixed?: Buffer) {
    this.#initial = initialBytes;
    this.#fixed = fixed !== undefined;
    this.#buf = fixed ?? Buffer.allocUnsafeSlow(initialBytes);
    this.#view = viewOf(this.#buf);
  }

  get byteLength(): number {
    return this.#pos;
  }

  /** capacity is the size of the buffer, written or not. */
  get capacity(): number {
    return this.#buf.length;
  }

  /** reset starts over on the same buffer, grown first to at least `reserve` bytes (one copy-free allocation). */
  reset(reserve = 0): void {
    this.#pos = 0;
    this.count = 0;
    if (reserve > this.#buf.length) {
      if (this.#fixed) throw new RangeError('RecordWriter: a fixed buffer cannot grow');
      this.#buf = Buffer.allocUnsafeSlow(reserve);
      this.#view = viewOf(this.#buf);
    }
  }

  push(f: EntryFields): void {
    // Room for the longest comment first; the real length is known once written.
    if (this.#pos + HEADER + 264 > this.#buf.length) {
      if (this.#fixed) throw new RangeError('RecordWriter: no room for a record in its fixed buffer');
      const bigger = Buffer.allocUnsafeSlow(Math.max(this.#initial, this.#buf.length * 2, this.#pos + HEADER + 264));
      this.#buf.copy(bigger, 0, 0, this.#pos);
      this.#buf = bigger;
      this.#view = viewOf(bigger);
    }
    const b = this.#buf;
    const v = this.#view;
    const p = this.#pos;
    const comment = f.comment;
    const commentLen = comment === undefined ? 0 : writeUtf8(b, comment, p + HEADER);
    const size = align8(HEADER + commentLen);
    // Plain stores, not Buffer#fill/#write: for a few dozen bytes a call into C++ per field costs more than the
    // bytes (this is the per-entry hot path of addMany and coalesced adds). Through a DataView, as words where
    // the layout has them, and the zeroed fields 4 bytes a store: a 100k-entry batch's encoding went from ~6.8 to
    // ~3.5 ms.
    for (let i = p + HEADER + commentLen; i < p + size; i++) b[i] = 0;
    let flags = 0;
    if (f.cidr !== undefined) flags |= HAS_CIDR;
    if (f.port !== undefined) flags |= HAS_PORT;
    if (f.proto !== undefined) flags |= HAS_PROTO;
    if (f.timeout !== undefined) flags |= HAS_TIMEOUT;
    if (comment !== undefined) flags |= HAS_COMMENT;
    const v4 = f.family === 4;
    // Each field at its own offset, in host order (fields packed into one word would land elsewhere on a
    // big-endian host).
    v.setUint16(p, size, HOST_LE);
    b[p + 2] = v4 ? 2 : 10;
    b[p + 3] = flags;
    b[p + 4] = f.cidr ?? 0;
    b[p + 5] = f.proto ?? 0;
    v.setUint16(p + 6, f.port ?? 0, HOST_LE);
    v.setUint32(p + 8, f.timeout ?? 0, HOST_LE);
    v.setUint16(p + 12, commentLen, HOST_LE);
    v.setUint16(p + 14, 0);
    const ip = f.ip; // for IPv4, bytes 4-15 may hold an earlier entry's (reused fields): the record's are zeroed
    if (v4) {
      b[p + 16] = ip[0]!;
      b[p + 17] = ip[1]!;
      b[p + 18] = ip[2]!;
      b[p + 19] = ip[3]!;
      v.setUint32(p + 20, 0);
      v.setUint32(p + 24, 0);
      v.setUint32(p + 28, 0);
    } else {
      for (let i = 0; i < 16; i++) b[p + 16 + i] = ip[i]!;
    }
    for (let i = p + 32; i < p + HEADER; i += 4) v.setUint32(i, 0); // counters: never sent
    this.#pos += size;
    this.count++;
  }

  /** buffer is the whole backing buffer (what was written is its first byteLength bytes). */
  get buffer(): Buffer {
    return this.#buf;
  }

  /** bytes returns a view of what was written (valid until the next push or reset). */
  bytes(): Buffer {
    return this.#buf.subarray(0, this.#pos);
  }
}

/** decodeRecords turns a records buffer from a dump into entries. */
export function decodeRecords(buf: Buffer, out: IpsetListedEntry[] = []): IpsetListedEntry[] {
  const v = viewOf(buf);
  let p = 0;
  while (p + HEADER <= buf.length) {
    const size = v.getUint16(p, HOST_LE);
    const family = buf[p + 2] === 10 ? 6 : 4;
    const flags = buf[p + 3]!;
    const entry: IpsetListedEntry = { ip: formatIp(family, buf, p + 16) };
    if (flags & HAS_CIDR) entry.cidr = buf[p + 4]!;
    if (flags & HAS_PORT) entry.port = v.getUint16(p + 6, HOST_LE);
    if (flags & HAS_PROTO) entry.proto = protoName(buf[p + 5]!);
    if (flags & HAS_TIMEOUT) entry.timeout = v.getUint32(p + 8, HOST_LE);
    if (flags & HAS_COMMENT) entry.comment = buf.toString('utf8', p + HEADER, p + HEADER + v.getUint16(p + 12, HOST_LE));
    if (flags & HAS_COUNTERS) {
      entry.bytes = v.getFloat64(p + 32, HOST_LE);
      entry.packets = v.getFloat64(p + 40, HOST_LE);
    }
    if (flags & NOMATCH) entry.nomatch = true;
    out.push(entry);
    p += size;
  }
  return out;
}
