// Dumps of big sets: every entry comes back exactly once, paged over datagrams of the configured size. How fast the
// fake is belongs in bench/, not here: a 1000 ms bound failed a fresh clone on a loaded 2-core machine.
import { describe, expect, it } from 'vitest';

import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { ACK, CMD, EXCL, PROTO, REQ, attr, be32, create, list, msg, setname } from './helpers/requests.js';
import { allMessages, codes, dumpedEntries, messages, topAttrs } from './helpers/replies.js';

const N = 100_000;

function ipOf(i: number): string {
  return `10.${(i >> 16) & 0xff}.${(i >> 8) & 0xff}.${i & 0xff}`;
}

/**
 * batches builds ADT adds of n hash:ip entries, at most 2500 per message (one nest stays under 64 KiB). The bytes are
 * written straight into one buffer: building 100k requests as many small arrays costs more than the adds themselves.
 */
function batches(name: string, n: number): Uint8Array {
  const requests: Uint8Array[] = [];
  for (let start = 0; start < n; start += 2500) {
    const count = Math.min(n, start + 2500) - start;
    const body = Buffer.alloc(count * 24);
    for (let k = 0; k < count; k++) {
      const i = start + k + 1;
      const o = k * 24;
      body.writeUInt16LE(24, o);
      body.writeUInt16LE(0x8007, o + 2); // DATA, nested
      body.writeUInt16LE(12, o + 4);
      body.writeUInt16LE(0x8001, o + 6); // IP, nested
      body.writeUInt16LE(8, o + 8);
      body.writeUInt16LE(0x4001, o + 10); // IPADDR_IPV4, network order
      body.set(Uint8Array.from(ipOf(i).split('.').map(Number)), o + 12);
      body.writeUInt16LE(8, o + 16);
      body.writeUInt16LE(0x4009, o + 18); // LINENO
      body.writeUInt32BE(i, o + 20);
    }
    requests.push(msg(CMD.add, REQ | ACK | EXCL, [PROTO, setname(name), be32(9, 0), attr(8, body, 0x8000)]));
  }
  return Buffer.concat(requests);
}

function fill(fake: FakeIpsetKernel, name: string, n: number): number[] {
  return codes(fake.exchange(batches(name, n)));
}

describe('FakeIpsetKernel dump paging', () => {
  it(`adds ${N} entries in ADT batches and dumps every one of them exactly once`, () => {
    const fake = new FakeIpsetKernel();
    expect(codes(fake.exchange(create('big', 'hash:ip', 2, { maxelem: 1 << 20 })))).toEqual([0]);
    expect(codes(fake.exchange(batches('big', N)))).toEqual(Array(N / 2500).fill(0));

    const dgrams = fake.exchange(list('big'));

    const entries = dumpedEntries(dgrams).get('big')!;
    expect(entries.length).toBe(N);
    expect(new Set(entries).size).toBe(N);
    // 16 bytes per hash:ip entry, ~32 KiB per datagram: about 50 datagrams, each one message, then NLMSG_DONE.
    expect(dgrams.length).toBeGreaterThan(45);
    for (const d of dgrams.slice(0, -1)) {
      expect(d.length).toBeLessThanOrEqual(32448);
      expect(messages(d)).toHaveLength(1);
    }
    const last = messages(dgrams[dgrams.length - 1]!);
    expect(last).toMatchObject([{ type: 3, flags: 2, error: 0 }]);
  });

  it('puts the header only in the first message and PROTOCOL, SETNAME, ADT in the continuations', () => {
    const fake = new FakeIpsetKernel({ dumpPageSize: 512 });
    fake.exchange(create('s', 'hash:ip', 2));
    expect(fill(fake, 's', 100)).toEqual([0]);
    const msgs = allMessages(fake.exchange(list('s')));
    const shapes = msgs.map((m) => topAttrs(m).map((a) => a.type));
    expect(shapes[0]).toEqual([1, 2, 3, 5, 4, 11, 7, 8]);
    for (const s of shapes.slice(1, -1)) expect(s).toEqual([1, 2, 8]);
    expect(msgs.every((m) => m.bytes.length <= 512)).toBe(true);
    expect(msgs.slice(0, -1).every((m) => m.flags === 2 && m.type === 0x607)).toBe(true);
    expect(dumpedEntries(fake.exchange(list('s'))).get('s')).toHaveLength(100);
  });

  it('starts every set of a dump of all sets in its own datagram, in index order', () => {
    const fake = new FakeIpsetKernel({ dumpPageSize: 1024 });
    for (const name of ['a', 'b', 'c']) fake.exchange(create(name, 'hash:ip', 2));
    fill(fake, 'b', 300);
    const sets = fake.exchange(list()).slice(0, -1).map((d) => {
      const name = topAttrs(messages(d)[0]!).find((a) => a.type === 2)!;
      return Buffer.from(name.value).toString('utf8').replace(/\0+$/, '');
    });
    expect(sets[0]).toBe('a');
    expect(sets[sets.length - 1]).toBe('c');
    expect(sets.slice(1, -1).every((n) => n === 'b')).toBe(true);
    expect(sets.length).toBeGreaterThan(4);
  });
});
