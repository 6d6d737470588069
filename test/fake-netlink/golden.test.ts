// The fake must answer the requests of captured kernel sessions with the kernel's bytes (masked where runs differ).
import { describe, expect, it } from 'vitest';

import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { hex, loadScenario } from './helpers/fixtures.js';
import { allMessages, attrs, dumpedEntries, topAttrs } from './helpers/replies.js';

describe.each(['basics', 'types', 'extras'])('golden scenario %s', (name) => {
  const steps = loadScenario(name);
  const fake = new FakeIpsetKernel({ now: () => 1_000_000 });
  it.each(steps.map((s, i) => [i, s.label, s] as const))('step %i: %s', (_i, _label, step) => {
    expect(hex(fake.exchange(step.request))).toEqual(hex(step.replies));
  });
});

describe('golden scenario paging', () => {
  const steps = loadScenario('paging');
  const fake = new FakeIpsetKernel({ now: () => 1_000_000 });
  const setup = steps.slice(0, -1);
  const listAll = steps[steps.length - 1]!;

  it('answers the setup requests like the kernel', () => {
    for (const step of setup) expect(hex(fake.exchange(step.request)), step.label).toEqual(hex(step.replies));
  });

  it('lists the same entries, one set per datagram, with the same header and the same paging shape', () => {
    const got = fake.exchange(listAll.request);
    const sortEntries = (m: Map<string, string[]>) => [...m].map(([k, v]) => [k, [...v].sort()]);
    expect(sortEntries(dumpedEntries(got))).toEqual(sortEntries(dumpedEntries(listAll.replies)));
    expect(got.length).toBe(listAll.replies.length);
    // nlmsg_len follows the page size; HASHSIZE differs because the kernel grew its table (the fake does not).
    const head = (d: Uint8Array[]) => hex([d[0]!])[0]!.slice(8, 2 * 76);
    expect(head(got)).toEqual(head(listAll.replies));
    const headerData = (d: Uint8Array[]) => topAttrs(allMessages([d[0]!])[0]!).find((a) => a.type === 7)!;
    expect(attrs(headerData(got).value).map((a) => a.type)).toEqual(attrs(headerData(listAll.replies).value).map((a) => a.type));
    for (const [i, d] of got.entries()) {
      const kernel = listAll.replies[i]!;
      // Page sizes match to within one bucket of entries (the kernel pages by hash bucket).
      expect(Math.abs(d.length - kernel.length), `datagram ${i}`).toBeLessThanOrEqual(16 * 8);
      expect(allMessages([d]).map((m) => topAttrs(m).map((a) => a.type))).toEqual(allMessages([kernel]).map((m) => topAttrs(m).map((a) => a.type)));
    }
  });
});
