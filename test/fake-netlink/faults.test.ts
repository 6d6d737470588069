// Fault injection: scripted errors, lost replies and truncated datagrams, each firing once on the matching request.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../lib/errors.js';
import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { ACK, CMD, REQ, adt, create, list } from './helpers/requests.js';
import { allMessages, codes } from './helpers/replies.js';

function withSet(): FakeIpsetKernel {
  const fake = new FakeIpsetKernel();
  expect(codes(fake.exchange(Buffer.concat([create('a', 'hash:ip'), create('b', 'hash:ip')])))).toEqual([0, 0]);
  return fake;
}

const ips = (fake: FakeIpsetKernel, set: string) => fake.dump().sets.find((s) => s.name === set)!.entries.map((e) => e.ip);

describe('FakeIpsetKernel faults', () => {
  it('failNext answers the next request with the errno, echoing it, and leaves state alone', () => {
    const fake = withSet();
    fake.failNext(105);
    const request = adt(CMD.add, 'a', '1.1.1.1', {}, REQ);
    const [reply] = allMessages(fake.exchange(request));
    expect(reply).toMatchObject({ type: 2, flags: 0, error: -105 });
    expect(Buffer.from(reply!.bytes.subarray(20))).toEqual(Buffer.from(request));
    expect(ips(fake, 'a')).toEqual([]);
    expect(codes(fake.exchange(adt(CMD.add, 'a', '1.1.1.1')))).toEqual([0]);
  });

  it('failNext with a matcher waits for a request of that command and set', () => {
    const fake = withSet();
    fake.failNext(-4103, { command: 'del', set: 'b' });
    const batch = Buffer.concat([
      adt(CMD.add, 'b', '1.1.1.1'),
      adt(CMD.del, 'a', '1.1.1.1'),
      adt(CMD.del, 'b', '1.1.1.1'),
      adt(CMD.del, 'b', '1.1.1.1'),
    ]);
    expect(codes(fake.exchange(batch))).toEqual([0, -4103, -4103, 0]);
    expect(fake.pendingFaults).toBe(0);
    expect(ips(fake, 'b')).toEqual([]);
  });

  it('dropNextReply applies the request but loses its ACK', () => {
    const fake = withSet();
    fake.dropNextReply({ command: 'add' });
    expect(fake.exchange(Buffer.concat([adt(CMD.add, 'a', '1.1.1.1'), adt(CMD.add, 'a', '1.1.1.2')])).length).toBe(1);
    expect(ips(fake, 'a')).toEqual(['1.1.1.1', '1.1.1.2']);
  });

  it('dropNextReply on a dump loses the whole dump', () => {
    const fake = withSet();
    fake.dropNextReply({ command: 'list' });
    expect(fake.exchange(list())).toEqual([]);
    expect(fake.exchange(list()).length).toBe(3);
  });

  it('truncateNextReply cuts the first datagram of the next reply', () => {
    const fake = withSet();
    fake.truncateNextReply(10);
    const [cut] = fake.exchange(adt(CMD.add, 'a', '1.1.1.1', {}, REQ | ACK));
    expect(cut!.length).toBe(10);
    fake.truncateNextReply();
    const replies = fake.exchange(list('a'));
    expect(replies.length).toBe(2);
    expect(replies[0]!.length).toBe(Math.floor(allMessages([fake.exchange(list('a'))[0]!])[0]!.bytes.length / 2));
  });

  it('clearFaults drops pending faults', () => {
    const fake = withSet();
    fake.failNext(1);
    fake.dropNextReply();
    expect(fake.pendingFaults).toBe(2);
    fake.clearFaults();
    expect(codes(fake.exchange(adt(CMD.add, 'a', '1.1.1.1', {}, REQ | ACK)))).toEqual([0]);
  });

  it.each([
    ['failNext(0)', (f: FakeIpsetKernel) => f.failNext(0), 'ERR_INVALID_ARG_VALUE'],
    ['failNext(1.5)', (f: FakeIpsetKernel) => f.failNext(1.5), 'ERR_INVALID_ARG_VALUE'],
    ['an unknown command', (f: FakeIpsetKernel) => f.dropNextReply({ command: 'nope' as 'add' }), 'ERR_INVALID_ARG_VALUE'],
    ['a set name that is not a string', (f: FakeIpsetKernel) => f.dropNextReply({ set: 1 as unknown as string }), 'ERR_INVALID_ARG_TYPE'],
    ['a negative truncation', (f: FakeIpsetKernel) => f.truncateNextReply(-1), 'ERR_INVALID_ARG_VALUE'],
    ['referencing a missing set', (f: FakeIpsetKernel) => f.setReferenced('zz'), 'ERR_INVALID_ARG_VALUE'],
    ['a negative reference count', (f: FakeIpsetKernel) => f.setReferenced('a', -1), 'ERR_INVALID_ARG_VALUE'],
  ])('rejects %s', (_name, call, code) => {
    const fake = withSet();
    expect(() => call(fake)).toThrow(InvalidArgumentError);
    expect(() => call(fake)).toThrow(expect.objectContaining({ code }));
  });

  it.each([
    ['a page size that is too small', { dumpPageSize: 10 }, 'ERR_INVALID_ARG_VALUE'],
    ['a clock that is not a function', { now: 5 as unknown as () => number }, 'ERR_INVALID_ARG_TYPE'],
    ['a negative port id', { portId: -1 }, 'ERR_INVALID_ARG_VALUE'],
  ])('constructor rejects %s', (_name, options, code) => {
    expect(() => new FakeIpsetKernel(options)).toThrow(expect.objectContaining({ code }));
  });
});
