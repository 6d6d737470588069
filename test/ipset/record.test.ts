import { endianness } from 'node:os';

import { describe, expect, it } from 'vitest';

import { checkEntry, newFields, type SetShape } from '../../lib/ipset/entry.js';
import { RecordWriter, decodeRecords } from '../../lib/ipset/record.js';

// The record layout is native/ipset/record.h's (host byte order). The writer stores words where the layout allows
// and reuses one fields object for every entry, so these pin the exact bytes and that nothing of an earlier entry
// leaks into a later record.
const v4: SetShape = { type: 'hash:ip', family: 4, comment: true, timeout: true };
const v6net: SetShape = { type: 'hash:net', family: 6, comment: true, timeout: false };
const ports: SetShape = { type: 'hash:ip,port', family: 4, comment: false, timeout: true };

describe('RecordWriter', () => {
  it('writes the documented layout byte for byte', () => {
    const w = new RecordWriter(64);
    w.push(checkEntry({ ip: '10.1.2.3', comment: 'pod-a', timeout: 70000 }, v4));
    const le = endianness() === 'LE';
    const u16 = (n: number) => (le ? [n & 0xff, n >> 8] : [n >> 8, n & 0xff]);
    const u32 = (n: number) => (le ? [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24] : [n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff]);
    const expected = [
      ...u16(56), 2, 8 | 16, // size, family, flags: timeout + comment
      0, 0, ...u16(0), // cidr, proto, port
      ...u32(70000),
      ...u16(5), 0, 0, // comment length, reserved
      10, 1, 2, 3, ...new Array(12).fill(0), // ip
      ...new Array(16).fill(0), // counters
      ...Buffer.from('pod-a'), 0, 0, 0, // comment, padding to 8
    ];
    expect([...w.bytes()]).toEqual(expected);
    expect(w.count).toBe(1);
  });

  it('round-trips every field, with reused fields and a reused buffer leaking nothing between records', () => {
    const w = new RecordWriter(64); // small: it must grow on the way
    const fields = newFields();
    const garbage = Buffer.alloc(4096, 0xa5);
    w.push(checkEntry({ ip: 'fd00::1:2:3:4', cidr: 64, comment: 'é'.repeat(100) }, v6net, 'entry', fields));
    w.reset();
    // Whatever the last use left in the buffer must not show through the next records.
    w.buffer.set(garbage.subarray(0, w.buffer.length));
    const entries = [
      { ip: 'fd00::1:2:3:4', cidr: 64, comment: 'é'.repeat(100) },
      { ip: 'fd00::9', cidr: 128 },
    ];
    for (const e of entries) w.push(checkEntry(e, v6net, 'entry', fields));
    w.push(checkEntry({ ip: '192.168.0.1', port: 65535, proto: 'udp', timeout: 2147483 }, ports, 'entry', fields));
    w.push(checkEntry({ ip: '10.0.0.1', comment: 'x' }, v4, 'entry', fields)); // after an IPv6 entry in the same fields
    const bytes = w.bytes();
    expect(decodeRecords(bytes)).toEqual([
      { ip: 'fd00::1:2:3:4', cidr: 64, comment: 'é'.repeat(100) },
      { ip: 'fd00::9', cidr: 128 },
      { ip: '192.168.0.1', port: 65535, proto: 'udp', timeout: 2147483 },
      { ip: '10.0.0.1', comment: 'x' },
    ]);
    // The IPv4 record's address bytes past the first 4, its counters and its padding are zero.
    const last = bytes.length - 56;
    expect([...bytes.subarray(last + 20, last + 48)]).toEqual(new Array(28).fill(0));
    expect([...bytes.subarray(last + 49, last + 56)]).toEqual(new Array(7).fill(0));
  });

  it('never grows a fixed buffer: it refuses instead of writing elsewhere', () => {
    const fixed = Buffer.alloc(320);
    const w = new RecordWriter(0, fixed);
    w.push(checkEntry({ ip: '10.0.0.1', comment: 'c'.repeat(255) }, v4));
    expect(w.buffer).toBe(fixed);
    expect(() => w.push(checkEntry({ ip: '10.0.0.2' }, v4))).toThrow(RangeError);
    expect(() => w.reset(321)).toThrow(RangeError);
  });
});
