// streamElements reads the dump no further ahead than the consumer: at most one chunk past the elements pulled, over
// a handle that counts its reads, so a slow consumer of a large set holds two chunks, never the set.
import { describe, expect, it } from 'vitest';

import { native, type RawNftablesHandle, type RawNftElement, type RawNftSet } from '../../lib/native.js';
import { streamElements } from '../../lib/nftables/element-stream.js';

const SET: RawNftSet = { family: 1, table: 't', name: 's', flags: 0, keyType: native.nftablesConstants.typeIpv4Addr, keyLen: 4, unknown: [] };

/** A handle over `total` elements answering each read with `perRead` of them, as the addon answers a datagram. */
function countingHandle(total: number, perRead: number): { handle: RawNftablesHandle; reads: () => number; read: () => number; closed: () => boolean } {
  let at = 0;
  let reads = 0;
  let closed = false;
  const handle = {
    getSet: async () => SET,
    elementsStart: async () => undefined,
    elementsNext: async () => {
      reads++;
      const elements: RawNftElement[] = [];
      for (; elements.length < perRead && at < total; at++) elements.push({ key: Buffer.from([10, 0, at >> 8, at & 255]), flags: 0, comment: `pod-${at}`, unknown: [] });
      return { elements, done: at === total };
    },
    close: () => {
      closed = true;
    },
  } as unknown as RawNftablesHandle;
  return { handle, reads: () => reads, read: () => at, closed: () => closed };
}

describe('streamElements pulls the dump as the consumer does', () => {
  it('reads at most one chunk past the elements yielded, and all of them in order by the end', async () => {
    const total = 10_000;
    const perRead = 300;
    const h = countingHandle(total, perRead);
    const it = streamElements(h.handle, { family: 1, table: 't', set: 's' }, perRead);
    let pulled = 0;
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      expect(r.value).toEqual({ address: `10.0.${pulled >> 8}.${pulled & 255}`, comment: `pod-${pulled}` });
      pulled++;
      // The chunk being yielded and the one read meanwhile: never more.
      expect(h.read() - pulled).toBeLessThanOrEqual(2 * perRead);
      // A pause lets a stream that read ahead on its own show it.
      if (pulled % 1000 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(pulled).toBe(total);
    expect(h.reads()).toBe(Math.ceil(total / perRead));
    expect(h.closed()).toBe(true);
  });

  it('a consumer that stops early leaves the rest unread and the handle closed', async () => {
    const h = countingHandle(100_000, 500);
    let pulled = 0;
    for await (const e of streamElements(h.handle, { family: 1, table: 't', set: 's' }, 500)) {
      expect(e.comment).toBe(`pod-${pulled}`);
      if (++pulled === 1200) break;
    }
    expect(h.read()).toBeLessThanOrEqual(1200 + 2 * 500);
    expect(h.closed()).toBe(true);
  });
});
