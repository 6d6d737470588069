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
 * slotOf is a key's home slot in a table of `size` (a power of two) words: the high bits of a multiplicative hash,
 * so that keys differing only in their high bytes (10.1.0.1, 10.2.0.1, ...) do not share one.
 */
function slotOf(key: number, size: number): number {
  return Math.imul(key, 0x9e3779b1) >>> (32 - (31 - Math.clz32(size)));
}

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
  /** Keys written so far, for repeated(). */
  #seen4: Uint32Array;
  #seen4Count = 0;
  #seenZero = false;
  readonly #seen16 = new Set<string>();

  constructor(expected: number) {
    this.#buf = Buffer.allocUnsafe(Math.max(256, expected * 48));
    let slots = 64;
    while (slots < expected * 2) slots *= 2;
    this.#seen4 = new Uint32Array(slots);
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

  /**
   * repeated tells whether the last record's key was written before (the kernel takes a key twice in one message as
   * a clash with itself). IPv4 keys go in an open-addressing table of words: a Set of 10k numbers cost the batch
   * more than encoding it.
   */
  repeated(): boolean {
    const p = this.#record;
    const len = this.#buf[p]!;
    if (len !== 4) {
      const k = this.#buf.toString('latin1', p + HEADER, p + HEADER + len);
      if (this.#seen16.has(k)) return true;
      this.#seen16.add(k);
      return false;
    }
    const k = this.#view.getUint32(p + HEADER);
    // 0 marks a free slot, so 0.0.0.0 is kept apart.
    if (k === 0) {
      if (this.#seenZero) return true;
      this.#seenZero = true;
      return false;
    }
    if (this.#seen4Count * 2 >= this.#seen4.length) this.#rehash();
    const table = this.#seen4;
    const mask = table.length - 1;
    for (let i = slotOf(k, table.length); ; i = (i + 1) & mask) {
      const slot = table[i]!;
      if (slot === k) return true;
      if (slot === 0) {
        table[i] = k;
        this.#seen4Count++;
        return false;
      }
    }
  }

  #rehash(): void {
    const old = this.#seen4;
    this.#seen4 = new Uint32Array(Math.max(64, old.length * 2));
    this.#seen4Count = 0;
    const mask = this.#seen4.length - 1;
    for (const k of old) {
      if (k === 0) continue;
      let i = slotOf(k, this.#seen4.length);
      while (this.#seen4[i] !== 0) i = (i + 1) & mask;
      this.#seen4[i] = k;
      this.#seen4Count++;
    }
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
