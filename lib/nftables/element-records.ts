/**
 * Element records: the binary form in which a transaction's set elements cross to the addon, one buffer per op
 * (layout in native/nftables/element_records.h). Read property by property, a 10k-element add spent more time in
 * N-API calls than the kernel spent inserting.
 */
import { endianness } from 'node:os';

import { writeAddressKey } from './address-key.js';

const HEADER = 4;
const HAS_COMMENT = 1;
/** The longest record: a 16-byte key and a comment of 128 UTF-8 bytes (nft's limit). */
const RECORD_MAX = HEADER + 16 + 128;
const HOST_LE = endianness() === 'LE';

/**
 * ElementRecordWriter appends elements to one buffer. `key` parses an address straight into it (no Buffer per
 * element); `comment` follows the key it belongs to.
 */
export class ElementRecordWriter {
  #buf: Buffer;
  #view: DataView;
  #pos = 0;
  /** Where the record being written starts, for `comment`. */
  #record = -1;
  count = 0;

  constructor(expected: number) {
    this.#buf = Buffer.allocUnsafe(Math.max(256, expected * 48));
    this.#view = new DataView(this.#buf.buffer, this.#buf.byteOffset, this.#buf.length);
  }

  /**
   * key starts a record with an address's key and returns the key's length (4 or 16), or 0 when text is not an
   * address; then nothing is written.
   */
  key(text: string): number {
    if (this.#pos + RECORD_MAX > this.#buf.length) this.#grow();
    const b = this.#buf;
    const p = this.#pos;
    const n = writeAddressKey(b, p + HEADER, text);
    if (n === 0) return 0;
    b[p] = n;
    b[p + 1] = 0;
    b[p + 2] = 0;
    b[p + 3] = 0;
    this.#record = p;
    this.#pos = p + HEADER + n;
    this.count++;
    return n;
  }

  /** lastKeyId is the last record's key as a value that tells keys apart (a number for IPv4, a string for IPv6). */
  lastKeyId(): number | string {
    const p = this.#record;
    const len = this.#buf[p]!;
    if (len === 4) return this.#view.getUint32(p + HEADER);
    return this.#buf.toString('latin1', p + HEADER, p + HEADER + len);
  }

  /** comment gives the last record a comment (checked by the caller: at most 128 bytes, no NUL). */
  comment(text: string): void {
    const b = this.#buf;
    const p = this.#pos;
    let n = text.length;
    let ascii = true;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) {
        ascii = false;
        break;
      }
      b[p + i] = c;
    }
    if (!ascii) n = b.write(text, p, 'utf8');
    b[this.#record + 1] = HAS_COMMENT;
    this.#view.setUint16(this.#record + 2, n, HOST_LE);
    this.#pos = p + n;
  }

  /** records is what was written. */
  records(): Buffer {
    return this.#buf.subarray(0, this.#pos);
  }

  /** keysOnly is the same elements without their comments (a replace's add and delete of the keys). */
  keysOnly(): Buffer {
    const src = this.#buf;
    const out = Buffer.allocUnsafe(this.#pos);
    let o = 0;
    for (let p = 0; p < this.#pos; ) {
      const len = src[p]!;
      const comment = this.#view.getUint16(p + 2, HOST_LE);
      out[o] = len;
      out[o + 1] = 0;
      out[o + 2] = 0;
      out[o + 3] = 0;
      src.copy(out, o + HEADER, p + HEADER, p + HEADER + len);
      o += HEADER + len;
      p += HEADER + len + comment;
    }
    return out.subarray(0, o);
  }

  #grow(): void {
    const bigger = Buffer.allocUnsafe(Math.max(this.#buf.length * 2, this.#pos + RECORD_MAX));
    this.#buf.copy(bigger, 0, 0, this.#pos);
    this.#buf = bigger;
    this.#view = new DataView(bigger.buffer, bigger.byteOffset, bigger.length);
  }
}
