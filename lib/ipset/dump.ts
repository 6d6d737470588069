/**
 * Dumps: a set's listing in chunks over list()'s own socket, a stream of entries over a socket per stream, and the
 * names of every set.
 */
import { ipsetError } from './error-map.js';
import { LIST_SETNAME, toHeader } from './header.js';
import { decodeRecords } from './record.js';
import { type IpsetSession, newHandle } from './session.js';
import type { IpsetListedEntry, IpsetListing } from './types.js';

/** Records per chunk of list()'s dump: decoding one takes a few ms, reading the next from the kernel about as long. */
const LIST_CHUNK = 8192;

/**
 * listSet reads a set's header and all its entries: a worker reads the next chunk from the kernel while the JS
 * thread turns the last one into entries, and the event loop turns between chunks. ENOENT when there is no set.
 */
export async function listSet(session: IpsetSession, name: string): Promise<IpsetListing> {
  const handle = session.dumpHandle();
  let chunk = await handle.entries(name, LIST_CHUNK);
  if (!chunk.header) throw ipsetError(2, { command: 'list', set: name });
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
export async function listNames(session: IpsetSession): Promise<string[]> {
  const raw = await session.live().list('', LIST_SETNAME, false);
  return raw.sets.map((s) => s.name);
}

/** streamEntries yields a set's entries, `chunk` records per read, over a socket it closes when the loop ends. */
export async function* streamEntries(session: IpsetSession, name: string, chunk: number): AsyncGenerator<IpsetListedEntry, void, undefined> {
  session.live();
  const handle = newHandle(session.target);
  try {
    let next = await handle.entries(name, chunk);
    for (;;) {
      for (const entry of decodeRecords(next.records)) yield entry;
      if (next.done) return;
      next = await handle.entries(null, chunk);
    }
  } finally {
    handle.close();
  }
}
