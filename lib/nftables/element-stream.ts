/**
 * A set's elements as a stream: the dump read a chunk at a time over a socket of the stream's own, so a set of a
 * million elements is listed in bounded memory and the client's other operations go on meanwhile.
 */
import { NftablesError } from '../errors.js';
import type { RawNftablesHandle, RawNftElement } from '../native.js';
import { isIntervalSet, toElements } from './listing.js';
import type { NftElement } from './types.js';

/** Elements asked of the addon per read: a few datagrams' worth, small next to the set, large next to a call's cost. */
export const ELEMENT_CHUNK = 4096;

/** The set a stream lists, in the addon's terms. */
export interface ElementStreamTarget {
  family: number;
  table: string;
  set: string;
}

/**
 * streamElements yields the set's elements as elements() lists them, over `handle`, which it closes when the loop
 * ends (done, left early, or failed). The next chunk is read while the last one is yielded. An interval set's
 * ranges are merged from starts and ends the kernel lists in any order, so an interval set is read whole before its
 * first range is yielded; other sets stream. ENOENT (NftablesError) when the table or set is missing.
 */
export async function* streamElements(handle: RawNftablesHandle, target: ElementStreamTarget, chunk: number): AsyncGenerator<NftElement, void, undefined> {
  let next: Promise<{ elements: RawNftElement[]; done: boolean }> | undefined;
  try {
    const { family, table, set } = target;
    const info = await handle.getSet(family, table, set);
    if (info === null) throw new NftablesError(`nftables: no set '${set}' in table '${table}'`, 'ENOENT', -2, { operation: 'elements' });
    await handle.elementsStart(family, table, set);
    const interval = isIntervalSet(info);
    const held: RawNftElement[] = [];
    for (;;) {
      const got = await (next ?? handle.elementsNext(chunk));
      next = got.done ? undefined : handle.elementsNext(chunk);
      if (interval) {
        for (const e of got.elements) held.push(e);
      } else {
        yield* toElements(got.elements, info);
      }
      if (!next) break;
    }
    if (interval) yield* toElements(held, info);
  } finally {
    // A chunk still on its way when the loop is left settles unobserved: the stream's error, if any, is reported.
    next?.catch(() => undefined);
    handle.close();
  }
}
