/**
 * addMany and delMany of an iterable that is not an array: streamed in chunks, double-buffered, so memory stays
 * bounded however long the source is.
 */
import { native } from '../native.js';
import { checkEntry, type EntryFields, type SetShape } from './entry.js';
import { type BatchRequest, type BatchWriters, CLOCK_EVERY, SLICE_MS, STREAM_CHUNK, collectFailures, tracedAdt, yieldToLoop } from './batch.js';
import type { RecordWriter } from './record.js';
import type { IpsetSession } from './session.js';
import type { IpsetBatchFailure, IpsetBatchResult, IpsetEntry } from './types.js';

/** A streamed chunk: what its records hold, and where each entry was in the stream. */
interface StreamChunk {
  entries: IpsetEntry[];
  indexes: number[];
}

/**
 * encodeStreamSlice pulls entries into the writer and chunk until the chunk is full, the source ends or SLICE_MS
 * has passed. An entry that does not fit the set goes to invalid, never to the chunk. A source that throws
 * throws from here. (A plain function called once per slice, for the reason given in batch.ts.)
 */
function encodeStreamSlice(
  source: Iterator<IpsetEntry>,
  position: { index: number },
  writer: RecordWriter,
  chunk: StreamChunk,
  invalid: IpsetBatchFailure[],
  shape: SetShape,
  fields: EntryFields,
): 'full' | 'end' | 'slice' {
  const until = performance.now() + SLICE_MS;
  for (;;) {
    if (chunk.entries.length >= STREAM_CHUNK) return 'full';
    const next = source.next();
    if (next.done) return 'end';
    const index = position.index++;
    const entry = next.value;
    try {
      writer.push(checkEntry(entry, shape, index, fields));
      chunk.entries.push(entry);
      chunk.indexes.push(index);
    } catch (error) {
      invalid.push({ index, entry, error: error as Error });
    }
    if (index % CLOCK_EVERY === CLOCK_EVERY - 1 && performance.now() >= until) return 'slice';
  }
}

/**
 * sendStream streams an iterable in chunks: the next chunk is checked and encoded on the JS thread while a worker
 * sends the previous one. Chunks go out one after another (the session's lock does not order waiting workers, so
 * the next is sent only once the last has settled). An invalid entry is reported in `failed` and never sent; a
 * chunk that fails as a whole (set gone, ...) rejects with its error and the rest of the source is not pulled.
 */
export async function sendStream(
  session: IpsetSession,
  writers: BatchWriters,
  request: BatchRequest,
  entries: Iterable<IpsetEntry>,
): Promise<IpsetBatchResult> {
  const { command, name, shape, context } = request;
  const adding = command === native.ipsetCommands.add;
  const result: IpsetBatchResult = { applied: 0, failed: [] };
  const invalid: IpsetBatchFailure[] = [];
  const pair = writers.pair();
  let writer = pair[0];
  writer.reset();
  const fields = session.fields;
  let chunk: StreamChunk = { entries: [], indexes: [] };
  let inFlight: Promise<void> = Promise.resolve();
  let failure: { error: unknown } | undefined;
  const send = async () => {
    await inFlight;
    if (failure) throw failure.error;
    if (chunk.entries.length === 0) return;
    const records = writer.bytes();
    writer = writer === pair[0] ? pair[1] : pair[0]; // the other one's send has settled (awaited above)
    writer.reset();
    const { entries: sentEntries, indexes: sentIndexes } = chunk;
    chunk = { entries: [], indexes: [] };
    // Settles into result or failure right away, so a rejection is never left unhandled while encoding goes on.
    const entryAt = (at: number): [number, IpsetEntry] => [sentIndexes[at]!, sentEntries[at]!];
    inFlight = tracedAdt(session, request, records, sentEntries.length, entryAt).then(
      (raw) => {
        result.applied += collectFailures(raw, entryAt, context, result.failed);
        session.sets.counted(name, adding, raw[0]!);
      },
      (error: unknown) => {
        failure = { error };
      },
    );
  };
  const source = entries[Symbol.iterator]();
  const position = { index: 0 };
  // Whether the source is still open: done, or threw (as for-of, a source that threw is not closed).
  let open = true;
  const pull = (): 'full' | 'end' | 'slice' => {
    try {
      return encodeStreamSlice(source, position, writer, chunk, invalid, shape, fields);
    } catch (err) {
      open = false;
      throw err;
    }
  };
  try {
    for (;;) {
      const state = pull();
      if (state === 'end') break;
      if (state === 'full') await send();
      else await yieldToLoop();
      // A chunk that failed as a whole (set gone, ...) ends the stream before more of the source is pulled.
      if (failure) throw failure.error;
    }
    open = false;
    await send();
  } finally {
    // As for-of would: a source left early (a send failed) is closed.
    if (open) {
      try {
        source.return?.();
      } catch {
        // the send's error is the one to report
      }
    }
    await inFlight; // a source that throws still lets the chunk on its way finish before the queue moves on
  }
  if (failure) throw failure.error;
  if (invalid.length > 0) result.failed = [...result.failed, ...invalid].sort((a, b) => a.index - b.index);
  return result;
}
