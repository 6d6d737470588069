/**
 * A set's elements as a stream: the dump read a chunk at a time over a socket of the stream's own, so a set of a
 * million elements is listed in bounded memory and the client's other operations go on meanwhile.
 */
import { NftablesError } from '../errors.js';
import type { RawNftablesHandle, RawNftElement } from '../native.js';
import { elementConverter, isIntervalSet, toElements } from './listing.js';
import type { NftElement } from './types.js';

/**
 * Elements asked of the addon per read: fewer than a dump datagram holds (about 800 addresses with comments in the
 * kernel's 32 KiB), so a read is one datagram. Each read costs a worker round trip, tens of microseconds next to the
 * kernel's walk of the set for that datagram; larger chunks stay alive across V8's young-generation collections while
 * they are yielded and make the heap grow (at 100k elements, 4096 grew RSS by 37 MiB where 512 grew it by 12).
 */
export const ELEMENT_CHUNK = 512;

/** The set a stream lists, in the addon's terms. */
export interface ElementStreamTarget {
  family: number;
  table: string;
  set: string;
}

/**
 * streamElements yields the set's elements as elements() lists them, over `handle`, which it closes when the loop
 * ends (done, left early, or failed). The next chunk is read while the last one is yielded, and no further: the
 * dump waits in the kernel until the consumer gets there. An element is converted when it is pulled, so a chunk's
 * listed elements never exist all at once. An interval set's ranges are merged from starts and ends the kernel
 * lists in any order, so an interval set is read whole before its first range is yielded; other sets stream.
 * ENOENT (NftablesError) when the table or set is missing.
 */
export async function* streamElements(handle: RawNftablesHandle, target: ElementStreamTarget, chunk: number): AsyncGenerator<NftElement, void, undefined> {
  let next: Promise<{ elements: RawNftElement[]; done: boolean }> | undefined;
  try {
    const { family, table, set } = target;
    const info = await handle.getSet(family, table, set);
    if (info === null) throw new NftablesError(`nftables: no set '${set}' in table '${table}'`, 'ENOENT', -2, { operation: 'elements' });
    await handle.elementsStart(family, table, set);
    const interval = isIntervalSet(info);
    const convert = elementConverter(info);
    const held: RawNftElement[] = [];
    for (;;) {
      const got = await (next ?? handle.elementsNext(chunk));
      next = got.done ? undefined : handle.elementsNext(chunk);
      if (interval) {
        for (const e of got.elements) held.push(e);
      } else {
        for (const e of got.elements) yield convert(e);
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
