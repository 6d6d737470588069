// podnet:ipset:request on FakeIpsetKernel: one message per request the client sends, with what it was about, its send
// path, the entries it carried, and its outcome as the error's code.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { DIAGNOSTICS_CHANNELS, Ipset, IpsetError, type IpsetRequestMessage } from '../../lib/index.js';
import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { expectTiming, record, type Recorder } from './recorder.js';

const SET = { type: 'hash:ip', family: 'inet', comment: true } as const;

/** The fields of a message that do not depend on the clock. */
function about(m: IpsetRequestMessage) {
  return { command: m.command, set: m.set, mode: m.mode, entries: m.entries, failed: m.failed, outcome: m.outcome };
}

describe('podnet:ipset:request', () => {
  let ipset: Ipset;
  let fake: FakeIpsetKernel;
  let rec: Recorder<'podnet:ipset:request'>;

  beforeEach(async () => {
    fake = new FakeIpsetKernel();
    ipset = await Ipset.open({ netlink: fake });
    await ipset.create('s', SET);
    rec = record(DIAGNOSTICS_CHANNELS.ipsetRequest);
  });
  afterEach(() => {
    rec.stop();
    ipset.close();
  });

  it('publishes a sync add with its timing, and a refused one with the code and error the caller gets', () => {
    const before = performance.now();
    ipset.addSync('s', { ip: '10.0.0.1', comment: 'a' });
    const after = performance.now();
    const thrown = (() => {
      try {
        ipset.addSync('s', { ip: '10.0.0.1', comment: 'a' });
      } catch (err) {
        return err;
      }
    })();
    expect(thrown).toBeInstanceOf(IpsetError);
    const [ok, refused] = rec.take();
    expect(about(ok!)).toEqual({ command: 'add', set: 's', mode: 'sync', entries: 1, failed: 0, outcome: 'ok' });
    expect(ok!.error).toBeUndefined();
    expect(ok!.netns).toBeUndefined();
    expectTiming(ok!, before, after);
    expect(about(refused!)).toEqual({ command: 'add', set: 's', mode: 'sync', entries: 1, failed: 1, outcome: 'IPSET_ERR_EXIST' });
    expect(refused!.error).toBe(thrown);
  });

  it('publishes concurrent adds coalesced into one request, with the first refusal as its outcome', async () => {
    ipset.addSync('s', { ip: '10.0.0.2', comment: 'x' });
    rec.take();
    const results = await Promise.allSettled([
      ipset.add('s', { ip: '10.0.0.1', comment: 'a' }),
      ipset.add('s', { ip: '10.0.0.2', comment: 'b' }),
      ipset.add('s', { ip: '10.0.0.3', comment: 'c' }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const messages = rec.take();
    expect(messages.map(about)).toEqual([{ command: 'add', set: 's', mode: 'inline', entries: 3, failed: 1, outcome: 'IPSET_ERR_EXIST' }]);
    expect((messages[0]!.error as IpsetError).code).toBe('IPSET_ERR_EXIST');
    expect(messages[0]!.error).toBe((results[1] as PromiseRejectedResult).reason);
  });

  it('publishes an array batch as one worker request and a stream as one per chunk', async () => {
    const entries = (n: number, from = 0) => Array.from({ length: n }, (_, i) => ({ ip: `10.1.${(from + i) >> 8}.${(from + i) & 255}`, comment: 'c' }));
    const array = await ipset.addMany('s', entries(10));
    expect(array.applied).toBe(10);
    function* stream() {
      yield* entries(5000, 10);
    }
    const streamed = await ipset.addMany('s', stream());
    expect(streamed.applied).toBe(5000);
    const dup = await ipset.addMany('s', entries(2));
    expect(dup.failed.length).toBe(2);
    const messages = rec.take();
    expect(messages.map(about)).toEqual([
      { command: 'add', set: 's', mode: 'worker', entries: 10, failed: 0, outcome: 'ok' },
      { command: 'add', set: 's', mode: 'worker', entries: 4096, failed: 0, outcome: 'ok' },
      { command: 'add', set: 's', mode: 'worker', entries: 904, failed: 0, outcome: 'ok' },
      { command: 'add', set: 's', mode: 'worker', entries: 2, failed: 2, outcome: 'IPSET_ERR_EXIST' },
    ]);
    // The message's error is the first refused entry's, as the batch result reports it.
    expect(messages[3]!.error).toMatchObject({ code: 'IPSET_ERR_EXIST', index: dup.failed[0]!.index, entry: dup.failed[0]!.entry, set: 's' });
  });

  it('publishes dumps with the entries they read, and every other command', async () => {
    await ipset.addMany('s', [
      { ip: '10.0.0.1', comment: 'a' },
      { ip: '10.0.0.2', comment: 'b' },
    ]);
    await ipset.create('t', SET);
    rec.take();
    expect((await ipset.list('s')).entries.length).toBe(2);
    let streamed = 0;
    for await (const _ of ipset.entries('s', { chunk: 1 })) streamed++;
    expect(streamed).toBe(2);
    expect(await ipset.test('s', { ip: '10.0.0.1' })).toBe(true);
    expect(ipset.testSync('s', { ip: '10.0.0.9' })).toBe(false);
    await ipset.header('s');
    await ipset.listNames();
    await ipset.swap('s', 't');
    await ipset.rename('t', 'u');
    await ipset.flush('u');
    await ipset.destroy('u');
    expect(rec.take().map(about)).toEqual([
      { command: 'list', set: 's', mode: 'worker', entries: 2, failed: 0, outcome: 'ok' },
      { command: 'entries', set: 's', mode: 'worker', entries: 2, failed: 0, outcome: 'ok' },
      { command: 'test', set: 's', mode: 'inline', entries: 1, failed: 0, outcome: 'ok' },
      { command: 'test', set: 's', mode: 'sync', entries: 1, failed: 0, outcome: 'ok' },
      { command: 'header', set: 's', mode: 'worker', entries: 0, failed: 0, outcome: 'ok' },
      { command: 'listNames', set: undefined, mode: 'worker', entries: 0, failed: 0, outcome: 'ok' },
      { command: 'swap', set: 's', mode: 'worker', entries: 0, failed: 0, outcome: 'ok' },
      { command: 'rename', set: 't', mode: 'worker', entries: 0, failed: 0, outcome: 'ok' },
      { command: 'flush', set: 'u', mode: 'worker', entries: 0, failed: 0, outcome: 'ok' },
      { command: 'destroy', set: 'u', mode: 'worker', entries: 0, failed: 0, outcome: 'ok' },
    ]);
  });

  it('publishes a failed request with its error code, and the header lookups a missing set costs', async () => {
    fake.failNext(12, { command: 'create' });
    const err = await ipset.create('v', SET).catch((e: unknown) => e);
    expect((err as IpsetError).code).toBe('ENOMEM');
    const missing = await ipset.add('nope', { ip: '10.0.0.1' }).catch((e: unknown) => e);
    expect((missing as IpsetError).code).toBe('ENOENT');
    const messages = rec.take();
    expect(messages.map(about)).toEqual([
      { command: 'create', set: 'v', mode: 'worker', entries: 0, failed: 0, outcome: 'ENOMEM' },
      { command: 'header', set: 'nope', mode: 'worker', entries: 0, failed: 0, outcome: 'ENOENT' },
    ]);
    expect((messages[0]!.error as IpsetError).code).toBe('ENOMEM');
  });

  it('publishes nothing once unsubscribed, and nothing for arguments refused before a request', async () => {
    await expect(ipset.add('s', { ip: 'not an ip' })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
    expect(() => ipset.addSync('s', { ip: '10.0.0.1', port: 1 })).toThrow();
    expect(rec.take()).toEqual([]);
    rec.stop();
    ipset.addSync('s', { ip: '10.0.0.5', comment: 'a' });
    await ipset.add('s', { ip: '10.0.0.6', comment: 'a' });
    expect(rec.messages).toEqual([]);
  });
});
