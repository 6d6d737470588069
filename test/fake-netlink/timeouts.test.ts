// Timeouts run on the injected clock: remaining time goes down, entries expire, and expired entries behave as absent.
import { describe, expect, it } from 'vitest';

import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { ACK, CMD, REQ, adt, create, list } from './helpers/requests.js';
import { attrs, codes, dumpedEntries } from './helpers/replies.js';

function clocked(): { fake: FakeIpsetKernel; advance: (ms: number) => void } {
  let now = 5_000_000;
  const fake = new FakeIpsetKernel({ now: () => now });
  expect(codes(fake.exchange(create('t', 'hash:ip', 2, { timeout: 10, cadtFlags: 0x18 })))).toEqual([0]);
  return { fake, advance: (ms) => (now += ms) };
}

const timeoutsOf = (fake: FakeIpsetKernel) => Object.fromEntries(fake.dump().sets[0]!.entries.map((e) => [e.ip, e.timeout]));

describe('FakeIpsetKernel timeouts', () => {
  it('counts remaining seconds down from the set default, a per-entry value, or 0 for permanent', () => {
    const { fake, advance } = clocked();
    fake.exchange(Buffer.concat([adt(CMD.add, 't', '1.0.0.1'), adt(CMD.add, 't', '1.0.0.2', { timeout: 5 }), adt(CMD.add, 't', '1.0.0.3', { timeout: 0 })]));
    expect(timeoutsOf(fake)).toEqual({ '1.0.0.1': 10, '1.0.0.2': 5, '1.0.0.3': 0 });
    advance(2500);
    expect(timeoutsOf(fake)).toEqual({ '1.0.0.1': 7, '1.0.0.2': 2, '1.0.0.3': 0 });
    advance(2500);
    expect(timeoutsOf(fake)).toEqual({ '1.0.0.1': 5, '1.0.0.3': 0 });
  });

  it('reports the remaining time in dumps as a network-order TIMEOUT', () => {
    const { fake, advance } = clocked();
    fake.exchange(adt(CMD.add, 't', '1.0.0.1', { timeout: 100 }));
    advance(30_000);
    const [data] = dumpedEntries(fake.exchange(list('t'))).get('t')!;
    const timeout = attrs(Buffer.from(data!, 'hex')).find((a) => a.type === 6)!;
    expect(timeout.flags).toBe(0x4000);
    expect(Buffer.from(timeout.value).readUInt32BE()).toBe(70);
  });

  it('treats an expired entry as absent for TEST, DEL and exclusive ADD', () => {
    const { fake, advance } = clocked();
    fake.exchange(adt(CMD.add, 't', '1.0.0.1', { timeout: 1, bytes: 7n }));
    expect(codes(fake.exchange(adt(CMD.test, 't', '1.0.0.1', {}, REQ | ACK)))).toEqual([0]);
    advance(1000);
    expect(codes(fake.exchange(adt(CMD.test, 't', '1.0.0.1', {}, REQ | ACK)))).toEqual([-4103]);
    expect(codes(fake.exchange(adt(CMD.del, 't', '1.0.0.1')))).toEqual([-4103]);
    expect(fake.dump().sets[0]!.entries).toEqual([]);
    expect(codes(fake.exchange(adt(CMD.add, 't', '1.0.0.1')))).toEqual([0]);
    expect(timeoutsOf(fake)).toEqual({ '1.0.0.1': 10 });
  });

  it('resets the timeout and replaces the comment on a non-exclusive re-add, keeping counters unless given', () => {
    const { fake, advance } = clocked();
    fake.exchange(adt(CMD.add, 't', '1.0.0.1', { bytes: 3n, packets: 4n, comment: 'old' }));
    advance(4000);
    expect(codes(fake.exchange(adt(CMD.add, 't', '1.0.0.1', { packets: 9n }, REQ | ACK)))).toEqual([0]);
    expect(fake.dump().sets[0]!.entries).toEqual([{ ip: '1.0.0.1', timeout: 10, bytes: 3n, packets: 9n }]);
  });

  it('clamps a per-entry timeout to the kernel maximum', () => {
    const { fake } = clocked();
    fake.exchange(adt(CMD.add, 't', '1.0.0.1', { timeout: 0xffffffff }));
    expect(timeoutsOf(fake)).toEqual({ '1.0.0.1': 2147483 });
  });

  it('makes room in a full set once entries have expired', () => {
    let now = 0;
    const fake = new FakeIpsetKernel({ now: () => now });
    fake.exchange(create('f', 'hash:ip', 2, { timeout: 1, maxelem: 1 }));
    expect(codes(fake.exchange(adt(CMD.add, 'f', '1.0.0.1')))).toEqual([0]);
    expect(codes(fake.exchange(adt(CMD.add, 'f', '1.0.0.2')))).toEqual([-4352]);
    now += 1000;
    expect(codes(fake.exchange(adt(CMD.add, 'f', '1.0.0.2')))).toEqual([0]);
    expect(fake.dump().sets[0]!.entries.map((e) => e.ip)).toEqual(['1.0.0.2']);
  });
});
