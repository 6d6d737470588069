/**
 * addMany and delMany of an array: checked whole before anything is sent, then sent in one native call on a worker.
 * Also what the streamed path (batch-stream.ts) shares with it: the writers, slicing, and failures per entry.
 */
import { native } from '../native.js';
import { checkEntry, type EntryFields, type SetShape } from './entry.js';
import { ipsetError } from './error-map.js';
import { RecordWriter } from './record.js';
import { publishDone, publishFailed, requestChannel } from './request-trace.js';
import type { IpsetSession } from './session.js';
import type { IpsetBatchFailure, IpsetBatchResult, IpsetEntry } from './types.js';

/** Entries per native call when streaming an iterable: bounds memory, still ~70 ADT messages per call. */
export const STREAM_CHUNK = 4096;
/** The most memory addMany keeps between calls for its records (a 100k-entry batch takes about 6 MiB). */
const RETAIN_BYTES = 16 << 20;
/** Batches are checked and encoded in slices of at most this many ms, with a turn of the event loop between. */
export const SLICE_MS = 2;
/** Entries between two looks at the clock while encoding (a clock read costs more than an entry's check). */
export const CLOCK_EVERY = 256;

/** A turn of the event loop, so timers and I/O run between encoding slices. */
export const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** What a batch is about, for the errors of its entries. */
export type BatchContext = { operation: string; set: string; setType: string; netns: string | undefined };

/** One batch call: the ADT command, its set, whether exclusive, and what its errors name. */
export interface BatchRequest {
  command: number;
  name: string;
  excl: boolean;
  shape: SetShape;
  context: BatchContext;
}

/**
 * BatchWriters are a client's two batch writers (a streamed chunk is encoded while the last is sent), kept between
 * calls: memory the kernel has to hand over fresh costs a page fault per 4 KiB, a third of the time of encoding a
 * batch into new buffers.
 */
export class BatchWriters {
  #pair: [RecordWriter, RecordWriter] | undefined;

  pair(): [RecordWriter, RecordWriter] {
    return (this.#pair ??= [new RecordWriter(STREAM_CHUNK * 64), new RecordWriter(STREAM_CHUNK * 64)]);
  }

  /**
   * release lets go of a writer grown past RETAIN_BYTES by a huge batch rather than keep it for the client's lifetime.
   */
  release(): void {
    if (this.#pair && this.#pair[0].capacity > RETAIN_BYTES) this.#pair = undefined;
  }
}

/**
 * collectFailures turns a native ADT answer ([applied, index, error, ...], indexes into the records sent) into
 * batch failures appended to out; entryAt maps a record index to the caller's index and entry. Returns applied.
 */
export function collectFailures(
  raw: Uint32Array,
  entryAt: (at: number) => [number, IpsetEntry],
  context: BatchContext,
  out: IpsetBatchFailure[],
): number {
  for (let i = 1; i < raw.length; i += 2) {
    const [index, entry] = entryAt(raw[i]!);
    out.push({ index, entry, error: ipsetError(raw[i + 1]!, { ...context, entry, index }) });
  }
  return raw[0]!;
}

// The encoding loops are plain functions called once per slice, not loops inside the async functions: an async
// function's optimized code is thrown away after each await (no type feedback yet for the code past it), and
// 100k entries then run unoptimized about half the time, taking twice as long.

/** encodeArraySlice checks and encodes entries from `from` on until SLICE_MS has passed; returns where it stopped. */
function encodeArraySlice(writer: RecordWriter, entries: readonly IpsetEntry[], from: number, shape: SetShape, fields: EntryFields): number {
  const until = performance.now() + SLICE_MS;
  const n = entries.length;
  for (let i = from; i < n; i++) {
    writer.push(checkEntry(entries[i], shape, i, fields));
    if (i % CLOCK_EVERY === CLOCK_EVERY - 1 && performance.now() >= until) return i + 1;
  }
  return n;
}

/**
 * sendArray checks the whole array before anything is sent (in slices that let the event loop turn), then sends it
 * in one native call. Throws InvalidArgumentError for the first entry that does not fit (nothing sent).
 */
export async function sendArray(session: IpsetSession, writers: BatchWriters, request: BatchRequest, entries: IpsetEntry[]): Promise<IpsetBatchResult> {
  const { command, name, shape, context } = request;
  const writer = writers.pair()[0];
  let raw;
  try {
    writer.reset(entries.length * 64);
    for (let i = 0; i < entries.length; ) {
      i = encodeArraySlice(writer, entries, i, shape, session.fields);
      if (i < entries.length) await yieldToLoop();
    }
    raw = await tracedAdt(session, request, writer.bytes(), entries.length, (at) => [at, entries[at]!]);
  } finally {
    writers.release();
  }
  const failed: IpsetBatchFailure[] = [];
  const applied = collectFailures(raw, (at) => [at, entries[at]!], context, failed);
  session.sets.counted(name, command === native.ipsetCommands.add, applied);
  return { applied, failed };
}

/**
 * tracedAdt sends one batch's records (`count` entries; entryAt as for collectFailures) on a worker, published on
 * `podnet:ipset:request` when it has subscribers. Rejects as the native call does.
 */
export function tracedAdt(
  session: IpsetSession,
  request: BatchRequest,
  records: Uint8Array,
  count: number,
  entryAt: (at: number) => [number, IpsetEntry],
): Promise<Uint32Array> {
  const { command, name, excl } = request;
  const pending = session.handle().adt(command, name, records, excl, false);
  if (!requestChannel.hasSubscribers) return pending;
  const about = session.about(request.context.operation, name, 'worker');
  const start = performance.now();
  return pending.then(
    (raw) => {
      const failed = (raw.length - 1) / 2;
      if (failed === 0) publishDone(about, start, count, 0);
      else {
        const [index, entry] = entryAt(raw[1]!);
        publishDone(about, start, count, failed, ipsetError(raw[2]!, { ...request.context, entry, index }));
      }
      return raw;
    },
    (err: unknown) => {
      publishFailed(about, start, count, err);
      throw err;
    },
  );
}
