// A dump far bigger than a deliberately tiny SO_RCVBUF, on the real kernel (issue 15). The truth found: it succeeds.
// A netlink dump is paced by its reader: the kernel fills the next datagram only when recvmsg() made room, so a dump
// never overflows a receive buffer, however small. ADT batches do not overflow it either: the engine sends one ADT
// message per sendmsg() and reads its ACK before the next, so at most one reply is ever outstanding. ENOBUFS would
// need many replies queued at once, which podnet never asks for; the option exists to prove exactly that.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Ipset, runInNetns } from '../../lib/index.js';
import { openFds } from '../helpers/fds.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';

const ENTRIES = 20_000;
const ip = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
// A comment per entry makes each record ~80 bytes: the dump is ~1.6 MB, some 50 datagrams of up to 32 KiB each.
const comment = (n: number) => `entry ${n} `.padEnd(40, '.');

/**
 * The SO_RCVBUF (ss's `rb`) of each NETLINK_NETFILTER socket in the namespace but the kernel's own: in a fresh test
 * namespace only this test's clients have any. (ss names a socket by its process only when its port id is the pid,
 * true of one socket per process; the others show a port number.)
 */
function receiveBuffers(tns: TestNetns): number[] {
  const out = tns.exec(['ss', '--family=netlink', '--memory']);
  return out
    .split('\n')
    .map((line) => /\snft:(\S+)\s.*\brb(\d+)/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && m[1] !== 'kernel')
    .map((m) => Number(m[2]));
}

/** `ipset save` in the namespace (megabytes here: podnet's runner has no 1 MiB limit as execFileSync does). */
async function ipsetSave(tns: TestNetns): Promise<string> {
  const result = await runInNetns(tns.path, ['ipset', 'save']);
  expect(result.exitCode, result.stderr).toBe(0);
  return result.stdout;
}

describe('Ipset.open receiveBufferBytes (any user)', () => {
  it.each([0, -1, 1.5, 2 ** 30 + 1, '4096', null])('refuses %s before opening anything', async (value) => {
    const before = openFds().size;
    const err = await rejection(Ipset.open({ receiveBufferBytes: value as number, netns: '/proc/self/ns/net' }));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ argument: 'options.receiveBufferBytes' });
    expect(openFds().size).toBe(before);
  });
});

describePrivileged(
  'a dump bigger than a tiny SO_RCVBUF (real kernel)',
  () => {
    it('lists and streams a 20k-entry set through a 2.3 KiB receive buffer completely, changing nothing; the client goes on', async () => {
      using tns = new TestNetns('rcvbuf');
      using normal = await Ipset.open({ netns: tns.path });
      await normal.create('many', { type: 'hash:ip', comment: true, maxelem: 1 << 20 });
      const added = await normal.addMany(
        'many',
        Array.from({ length: ENTRIES }, (_, n) => ({ ip: ip(n), comment: comment(n) })),
      );
      expect(added).toEqual({ applied: ENTRIES, failed: [] });
      const saved = await ipsetSave(tns);
      expect(saved.split('\n').filter((l) => l.startsWith('add many '))).toHaveLength(ENTRIES);

      using tiny = await Ipset.open({ netns: tns.path, receiveBufferBytes: 1 });
      const listing = await tiny.list('many');
      // The kernel doubles 1 and floors it at SOCK_MIN_RCVBUF (2304 bytes on x86_64): the client's socket and the
      // dump socket list() opened both have it, while the normal client's has podnet's 8 MiB (doubled: 16 MiB).
      const buffers = receiveBuffers(tns);
      expect(buffers.filter((rb) => rb <= 4096)).toHaveLength(2);
      expect(buffers.filter((rb) => rb >= 8 << 20)).toHaveLength(1);
      expect(buffers).toHaveLength(3);
      // A dump datagram (up to 32 KiB) is larger than the whole buffer: the kernel still hands each over, one per read.
      expect(listing.entries).toHaveLength(ENTRIES);
      const got = new Map(listing.entries.map((e) => [e.ip, e.comment]));
      for (let n = 0; n < ENTRIES; n += 997) expect(got.get(ip(n))).toBe(comment(n));
      expect(got.size).toBe(ENTRIES);
      let streamed = 0;
      for await (const _ of tiny.entries('many', { chunk: 500 })) streamed++;
      expect(streamed).toBe(ENTRIES);
      expect(await ipsetSave(tns)).toBe(saved);

      // The client goes on: a sync call, an async one, and a batch whose ACKs come back one message at a time.
      await tiny.create('batch', { type: 'hash:ip', maxelem: 1 << 20 });
      expect(await tiny.addMany('batch', Array.from({ length: ENTRIES }, (_, n) => ({ ip: ip(n) })))).toEqual({
        applied: ENTRIES,
        failed: [],
      });
      tiny.addSync('many', { ip: '10.255.0.1', comment: 'after' });
      expect(await tiny.test('many', { ip: '10.255.0.1' })).toBe(true);
      expect((await normal.header('batch')).elements).toBe(ENTRIES);
      expect((await normal.header('many')).elements).toBe(ENTRIES + 1);
    });
  },
  missingBinary('ipset', 'ss'),
);

