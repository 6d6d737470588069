/**
 * Dumps: a set's listing in chunks over list()'s own socket, a stream of entries over a socket per stream, and the
 * names of every set.
 */
import { ipsetError } from './error-map.js';
import { LIST_SETNAME, toHeader } from './header.js';
import type { RawIpsetHandle } from '../native.js';
import { decodeRecords } from './record.js';
import { publishDone, publishFailed, requestChannel, traced } from './request-trace.js';
import { type IpsetSession, newHandle } from './session.js';
import type { IpsetListedEntry, IpsetListing } from './types.js';

/** Records per chunk of list()'s dump: decoding one takes a few ms, reading the next from the kernel about as long. */
const LIST_CHUNK = 8192;

/**
 * listSet reads a set's header and all its entries: a worker reads the next chunk from the kernel while the JS
 * thread turns the last one into entries, and the event loop turns between chunks. ENOENT when there is no set.
 */
export function listSet(session: IpsetSession, name: string): Promise<IpsetListing> {
  const handle = session.dumpHandle();
  return traced(
    () => session.about('list', name, 'worker'),
    () => readListing(session, handle, name),
    0,
    (listing) => listing.entries.length,
  );
}

async function readListing(session: IpsetSession, handle: RawIpsetHandle, name: string): Promise<IpsetListing> {
  let chunk = await handle.entries(name, LIST_CHUNK);
  if (!chunk.header) throw ipsetError(2, { operation: 'list', set: name });
  const header = toHeader(chunk.header);
  session.sets.remember(header);
  const entries: IpsetListedEntry[] = [];
  for (;;) {
    const next = chunk.done ? undefined : handle.entries(null, LIST_CHUNK);
    try {
      decodeRecords(chunk.records, entries);
    } catch (err) {
      // The dump's cursor lives in the handle: let the chunk on its way land before anything else uses it.
      await next?.catch(() => undefined);
      throw err;
    }
    if (!next) break;
    chunk = await next;
  }
  return { ...header, entries };
}

/** listNames reads the names of every set in the namespace. */
export function listNames(session: IpsetSession): Promise<string[]> {
  const handle = session.handle();
  return traced(
    () => session.about('listNames', undefined, 'worker'),
    async () => (await handle.list('', LIST_SETNAME, false)).sets.map((s) => s.name),
  );
}

/** streamEntries yields a set's entries, `chunk` records per read, over a socket it closes when the loop ends. */
export async function* streamEntries(session: IpsetSession, name: string, chunk: number): AsyncGenerator<IpsetListedEntry, void, undefined> {
  session.live();
  const handle = newHandle(session.target);
  // Published when the stream ends: done, left early by the loop (ok), or failed.
  const start = requestChannel.hasSubscribers ? performance.now() : -1;
  let count = 0;
  let failure: { error: unknown } | undefined;
  try {
    let next = await handle.entries(name, chunk);
    for (;;) {
      for (const entry of decodeRecords(next.records)) {
        count++;
        yield entry;
      }
      if (next.done) return;
      next = await handle.entries(null, chunk);
    }
  } catch (error) {
    failure = { error };
    throw error;
  } finally {
    handle.close();
    if (start >= 0) {
      const about = session.about('entries', name, 'worker');
      if (failure) publishFailed(about, start, count, failure.error);
      else publishDone(about, start, count, 0);
    }
  }
}
