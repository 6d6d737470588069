/**
 * Entry records, the binary form in which entries cross the N-API boundary in
 * bulk (layout documented in native/ipset/record.h; host byte order).
 */
import { formatIp } from './address.js';
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
  readonly #initial: number;
  #pos = 0;
  count = 0;

  readonly #fixed: boolean;

  /** With `fixed`, records are written into that buffer only (a sync channel's frame); it never grows. */
  constructor(initialBytes = 64 * 1024, fixed?: Buffer) {
    this.#initial = initialBytes;
    this.#fixed = fixed !== undefined;
    this.#buf = fixed ?? Buffer.allocUnsafeSlow(initialBytes);
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
    }
  }

  push(f: EntryFields): void {
    // Room for the longest comment first; the real length is known once written.
    if (this.#pos + HEADER + 264 > this.#buf.length) {
      if (this.#fixed) throw new RangeError('RecordWriter: no room for a record in its fixed buffer');
      const bigger = Buffer.allocUnsafeSlow(Math.max(this.#initial, this.#buf.length * 2, this.#pos + HEADER + 264));
      this.#buf.copy(bigger, 0, 0, this.#pos);
      this.#buf = bigger;
    }
    const b = this.#buf;
    const p = this.#pos;
    const commentLen = f.comment === undefined ? 0 : writeUtf8(b, f.comment, p + HEADER);
    const size = align8(HEADER + commentLen);
    // Plain loops, not Buffer#fill/#write: for a few dozen bytes a call into C++ per field costs more than the
    // bytes (this is the per-entry hot path of addMany and coalesced adds).
    for (let i = p + 16; i < p + HEADER; i++) b[i] = 0;
    for (let i = p + HEADER + commentLen; i < p + size; i++) b[i] = 0;
    let flags = 0;
    if (f.cidr !== undefined) flags |= HAS_CIDR;
    if (f.port !== undefined) flags |= HAS_PORT;
    if (f.proto !== undefined) flags |= HAS_PROTO;
    if (f.timeout !== undefined) flags |= HAS_TIMEOUT;
    if (f.comment !== undefined) flags |= HAS_COMMENT;
    const port = f.port ?? 0;
    const timeout = f.timeout ?? 0;
    b[p] = size & 0xff;
    b[p + 1] = size >>> 8;
    b[p + 2] = f.family === 4 ? 2 : 10;
    b[p + 3] = flags;
    b[p + 4] = f.cidr ?? 0;
    b[p + 5] = f.proto ?? 0;
    b[p + 6] = port & 0xff;
    b[p + 7] = port >>> 8;
    b[p + 8] = timeout & 0xff;
    b[p + 9] = (timeout >>> 8) & 0xff;
    b[p + 10] = (timeout >>> 16) & 0xff;
    b[p + 11] = timeout >>> 24;
    b[p + 12] = commentLen & 0xff;
    b[p + 13] = commentLen >>> 8;
    b[p + 14] = 0;
    b[p + 15] = 0;
    const ip = f.ip;
    const ipLen = f.family === 4 ? 4 : 16; // the rest of ip may hold an earlier entry's bytes (reused fields)
    for (let i = 0; i < ipLen; i++) b[p + 16 + i] = ip[i]!;
    this.#pos += size;
    this.count++;
  }

  /** buffer is the whole backing buffer: what was written is its first byteLength bytes (no view to allocate). */
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
  let p = 0;
  while (p + HEADER <= buf.length) {
    const size = buf.readUInt16LE(p);
    const family = buf[p + 2] === 10 ? 6 : 4;
    const flags = buf[p + 3]!;
    const entry: IpsetListedEntry = { ip: formatIp(family, buf, p + 16) };
    if (flags & HAS_CIDR) entry.cidr = buf[p + 4]!;
    if (flags & HAS_PORT) entry.port = buf.readUInt16LE(p + 6);
    if (flags & HAS_PROTO) entry.proto = protoName(buf[p + 5]!);
    if (flags & HAS_TIMEOUT) entry.timeout = buf.readUInt32LE(p + 8);
    if (flags & HAS_COMMENT) entry.comment = buf.toString('utf8', p + HEADER, p + HEADER + buf.readUInt16LE(p + 12));
    if (flags & HAS_COUNTERS) {
      entry.bytes = buf.readDoubleLE(p + 32);
      entry.packets = buf.readDoubleLE(p + 40);
    }
    if (flags & NOMATCH) entry.nomatch = true;
    out.push(entry);
    p += size;
  }
  return out;
}
