// The element records writer: the bytes native/nftables/element_records.h reads, and its duplicate check, which
// must hold for keys that differ only in their high bytes and past the count it was made for.
import { endianness } from 'node:os';

import { describe, expect, it } from 'vitest';

import { ElementRecordWriter } from '../../lib/nftables/element-records.js';
import { NftTransaction } from '../../lib/nftables/transaction.js';

const LE = endianness() === 'LE';
const u16 = (n: number) => (LE ? [n & 255, n >> 8] : [n >> 8, n & 255]);

describe('element records', () => {
  it('writes key length, flags, comment length and the bytes, unaligned; keysOnly drops the comments', () => {
    const w = new ElementRecordWriter(1);
    expect(w.key('10.0.0.1')).toBe(4);
    w.comment('é'); // two UTF-8 bytes
    expect(w.key('fd00::1')).toBe(16);
    expect(w.key('not an address')).toBe(0);
    expect(w.count).toBe(2);
    const v6 = [0xfd, 0, ...Array<number>(13).fill(0), 1];
    expect([...w.records()]).toEqual([4, 1, ...u16(2), 10, 0, 0, 1, 0xc3, 0xa9, 16, 0, ...u16(0), ...v6]);
    expect([...w.keysOnly()]).toEqual([4, 0, 0, 0, 10, 0, 0, 1, 16, 0, 0, 0, ...v6]);
  });

  it('finds every repeated key, also keys differing only in high bytes, 0.0.0.0 and past its expected count', () => {
    const w = new ElementRecordWriter(4);
    const keys = Array.from({ length: 5000 }, (_, i) => `${(i >> 8) & 255}.${i & 255}.0.0`);
    for (const k of keys) {
      w.key(k);
      expect(w.repeated(), k).toBe(false);
    }
    for (const k of [keys[0]!, keys[4999]!, '0.0.0.0', '::1', '0:0::1']) {
      w.key(k);
      expect(w.repeated(), k).toBe(k !== '::1');
    }
  });

  it('is what a transaction refuses a repeated address with, naming the element', () => {
    const tx = new NftTransaction().addElement({ family: 'inet', name: 't' }, 's', [{ address: '10.1.0.1' }, { address: '10.2.0.1' }, { address: '10.1.0.1' }]);
    expect(tx.error).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
    expect(tx.error?.message).toContain('elements[2].address');
  });
});
