// Fault injection: scripted errors, lost answers and interrupted dumps, each firing once on the matching request.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../lib/errors.js';
import { FakeRtnetlink } from '../../lib/testing/index.js';
import { allMessages, codes, firstError, messages } from './helpers/replies.js';
import { ACK, CREATE, REPLACE, REQ, T, dump, getLink, route, rule } from './helpers/requests.js';

const LOCAL4 = route({ dst: '0.0.0.0', dstLen: 0, type: 2, scope: 254, oif: 1, table: 100, flags: REQ | ACK | CREATE | REPLACE });
const LOCAL6 = route({ family: 6, dst: '::', dstLen: 0, type: 2, oif: 1, table: 100, flags: REQ | ACK | CREATE | REPLACE });
const inTable100 = (fake: FakeRtnetlink) => fake.dump().routes.filter((r) => r.table === 100).map((r) => r.family);

describe('FakeRtnetlink faults', () => {
  it('failNext answers the next request with the errno, echoing it, and leaves state alone', () => {
    const fake = new FakeRtnetlink();
    fake.failNext(105);
    const e = firstError(fake.exchange(LOCAL4));
    expect(e).toMatchObject({ error: -105, flags: 0, echo: Buffer.from(LOCAL4).toString('hex') });
    expect(inTable100(fake)).toEqual([]);
    expect(codes(fake.exchange(LOCAL4))).toEqual([0]);
  });

  it('failNext with a matcher waits for a request of that type and family', () => {
    const fake = new FakeRtnetlink();
    fake.failNext(-16, { type: 'newroute', family: 6 });
    expect(codes(fake.exchange(Buffer.concat([rule({ priority: 5, table: 100 }), LOCAL4, LOCAL6, LOCAL6])))).toEqual([0, 0, -16, 0]);
    expect(fake.pendingFaults).toBe(0);
    expect(inTable100(fake)).toEqual([4, 6]);
  });

  it('failNext still takes the deprecated one-object form', () => {
    const fake = new FakeRtnetlink();
    fake.failNext({ type: 'newroute', family: 6, errno: -16 });
    expect(codes(fake.exchange(Buffer.concat([LOCAL4, LOCAL6])))).toEqual([0, -16]);
  });

  it('failNext on a dump answers a lone NLMSG_DONE with the error, as a dump that fails at once', () => {
    const fake = new FakeRtnetlink();
    fake.failNext(4, { type: 'getroute' });
    expect(fake.exchange(dump(T.getroute)).flatMap(messages)).toEqual([expect.objectContaining({ type: 3, flags: 2, error: -4 })]);
  });

  it('dropNextReply applies the request but loses its answer, a whole dump included', () => {
    const fake = new FakeRtnetlink({ dumpPageSize: 256 });
    fake.dropNextReply({ type: 'newroute' });
    expect(fake.exchange(LOCAL4)).toEqual([]);
    expect(inTable100(fake)).toEqual([4]);
    fake.dropNextReply({ type: 'getroute' });
    expect(fake.exchange(dump(T.getroute))).toEqual([]);
    expect(allMessages(fake.exchange(dump(T.getroute))).length).toBe(6);
  });

  it('interruptNextDump sets NLM_F_DUMP_INTR on every message of the next matching dump only', () => {
    const fake = new FakeRtnetlink();
    fake.interruptNextDump({ type: 'getrule' });
    expect(allMessages(fake.exchange(dump(T.getroute))).every((m) => m.flags === 2)).toBe(true);
    const interrupted = allMessages(fake.exchange(dump(T.getrule)));
    expect(interrupted.map((m) => m.flags)).toEqual([0x12, 0x12, 0x12, 0x12, 0x12, 0x12]);
    expect(allMessages(fake.exchange(dump(T.getrule))).every((m) => m.flags === 2)).toBe(true);
    // A request that is not a dump does not use up the fault.
    fake.interruptNextDump();
    fake.exchange(getLink(1));
    expect(fake.pendingFaults).toBe(1);
  });

  it('clearFaults drops pending faults', () => {
    const fake = new FakeRtnetlink();
    fake.failNext(1);
    fake.dropNextReply();
    fake.interruptNextDump();
    expect(fake.pendingFaults).toBe(3);
    fake.clearFaults();
    expect(codes(fake.exchange(LOCAL4))).toEqual([0]);
  });

  it.each([
    ['errno 0', (f: FakeRtnetlink) => f.failNext(0), 'ERR_INVALID_ARG_VALUE'],
    ['errno 1.5', (f: FakeRtnetlink) => f.failNext(1.5), 'ERR_INVALID_ARG_VALUE'],
    ['errno 5000', (f: FakeRtnetlink) => f.failNext(5000), 'ERR_INVALID_ARG_VALUE'],
    ['a bad matcher', (f: FakeRtnetlink) => f.failNext(1, { family: 5 as 4 }), 'ERR_INVALID_ARG_VALUE'],
    ['errno 0 in the deprecated form', (f: FakeRtnetlink) => f.failNext({ errno: 0 }), 'ERR_INVALID_ARG_VALUE'],
    ['no options', (f: FakeRtnetlink) => f.failNext(null as unknown as { errno: number }), 'ERR_INVALID_ARG_TYPE'],
    ['an unknown request type', (f: FakeRtnetlink) => f.dropNextReply({ type: 'nope' as 'getlink' }), 'ERR_INVALID_ARG_VALUE'],
    ['family 5', (f: FakeRtnetlink) => f.interruptNextDump({ family: 5 as 4 }), 'ERR_INVALID_ARG_VALUE'],
    ['a matcher that is not an object', (f: FakeRtnetlink) => f.dropNextReply('getlink' as unknown as object), 'ERR_INVALID_ARG_TYPE'],
  ])('rejects %s', (_name, call, code) => {
    const fake = new FakeRtnetlink();
    expect(() => call(fake)).toThrow(InvalidArgumentError);
    expect(() => call(fake)).toThrow(expect.objectContaining({ code }));
    expect(fake.pendingFaults).toBe(0);
  });
});
