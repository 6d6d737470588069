/**
 * Ipset: the typed client over podnet's native nfnetlink ipset codec. One
 * client is one netlink socket bound to one network namespace (or one JS
 * NetlinkPeer such as FakeNetlink).
 *
 * Async operations run in call order through one queue. Adds and deletes
 * that are queued back to back for the same set become one ADT batch (each
 * caller still gets its own result), so 10,000 concurrent add() calls cost a
 * handful of kernel round trips.
 */
import { IpsetError, PodnetError, withCallerStack } from '../errors.js';
import { native, type RawIpsetHandle, type RawSetHeader } from '../native.js';
import { checkNetlinkOpenOptions } from '../netlink/open-options.js';
import type { NetlinkPeer } from '../netlink/peer.js';
import { Netns, type NetnsLike } from '../netns.js';
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { checkEntry, newFields, type EntryFields, type SetShape } from './entry.js';
import { ipsetError } from './error-map.js';
import { RecordWriter, decodeRecords } from './record.js';
import { SyncChannel } from './sync-channel.js';
import type {
  IpsetBatchFailure,
  IpsetBatchResult,
  IpsetCreateOptions,
  IpsetEntry,
  IpsetHeader,
  IpsetListedEntry,
  IpsetListing,
} from './types.js';

const WITH_COUNTERS = 0x08;
const WITH_COMMENT = 0x10;
const LIST_SETNAME = 0x02;
const LIST_HEADER = 0x04;
const TYPES = new Set(['hash:ip', 'hash:net', 'hash:ip,port']);
/** Entries per native call when streaming an iterable: bounds memory, still ~70 ADT messages per call. */
const STREAM_CHUNK = 4096;
/** The most memory addMany keeps between calls for its records (a 100k-entry batch takes about 6 MiB). */
const RETAIN_BYTES = 16 << 20;
/** Records per chunk of list()'s dump: decoding one takes a few ms, reading the next from the kernel about as long. */
const LIST_CHUNK = 8192;
/** Batches are checked and encoded in slices of at most this many ms, with a turn of the event loop between. */
const SLICE_MS = 2;
/** Entries between two looks at the clock while encoding (a clock read costs more than an entry's check). */
const CLOCK_EVERY = 256;

/**
 * ADT requests up to this size are sent from the JS thread, without a worker. nfnetlink runs ipset's handlers in
 * the sender's context: the answer is on the socket before sendmsg() returns, so a small request costs the JS
 * thread a few microseconds (and never waits for its reply), while handing it to a libuv worker and back costs
 * tens (two thread wake-ups). Bigger batches, whose kernel work takes longer, always go to a worker.
 */
const INLINE_BYTES = 8192;
/**
 * Inline requests also go only into sets of fewer entries than this (as far as this client knows): an add that
 * makes the kernel grow a hash set rehashes every entry inside that sendmsg(), measured at ~7 ms around 50k
 * entries, 60 ms at 400k and 110 ms at 700k on a 2-vCPU VM. That work belongs on a worker.
 */
const INLINE_MAX_ELEMENTS = 32_768;

/** A turn of the event loop, so timers and I/O run between encoding slices. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

// The encoding loops below are plain functions called once per slice, not loops inside the async methods: an
// async function's optimized code was thrown away after each await (no type feedback yet for the code past it),
// and 100k entries then ran unoptimized about half the time, taking twice as long.

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

/** A streamed chunk: what its records hold, and where each entry was in the stream. */
interface StreamChunk {
  entries: IpsetEntry[];
  indexes: number[];
}

/**
 * encodeStreamSlice pulls entries into the writer and chunk until the chunk is full, the source ends or SLICE_MS
 * has passed. An entry that does not fit the set goes to invalid, never to the chunk. A source that throws
 * throws from here.
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
const cmd = native.ipsetCommands;

export interface IpsetOpenOptions {
  /** The namespace to work in (a handle or a path); default: the current one. */
  netns?: NetnsLike;
  /** Talk to this peer (FakeNetlink) instead of the kernel. */
  netlink?: NetlinkPeer;
  /** Deadline for each kernel answer, milliseconds (default 5000). */
  timeoutMs?: number;
  /**
   * SO_RCVBUF of the client's kernel sockets, bytes (1..2^30; the kernel doubles it, caps it at net.core.rmem_max and
   * floors it at its minimum, about 2.3 KiB). Default: 8 MiB (SO_RCVBUFFORCE), room for the ACKs of the largest
   * batches. Meant for tests of a receive buffer that overflows: a smaller one makes big batches fail with ENOBUFS
   * (their ACKs are lost; the kernel did apply what they carried). Dumps are read as they come and never overflow.
   * Ignored with `netlink`.
   */
  receiveBufferBytes?: number;
}

interface PendingItem {
  entry: unknown;
  resolve: (v: void) => void;
  reject: (e: unknown) => void;
}

/** A queued ADD/DEL batch that later calls for the same set and mode may join until it starts. */
interface AdtJob {
  command: number;
  excl: boolean;
  name: string;
  items: PendingItem[];
  started: boolean;
}

function checkSetName(value: unknown, name = 'name'): string {
  checkString(name, value, 31);
  return value as string;
}

function familyName(n: number): IpsetHeader['family'] {
  return n === 2 ? 'inet' : n === 10 ? 'inet6' : 'unspec';
}

function toHeader(raw: RawSetHeader): IpsetHeader {
  return {
    name: raw.name,
    type: raw.type,
    family: familyName(raw.family),
    revision: raw.revision,
    references: raw.references,
    maxelem: raw.maxelem,
    hashsize: raw.hashsize,
    elements: raw.elements,
    memsize: raw.memsize,
    comment: (raw.cadtFlags & WITH_COMMENT) !== 0,
    timeout: raw.timeout,
    counters: (raw.cadtFlags & WITH_COUNTERS) !== 0,
    decoded: raw.decoded,
  };
}

function shapeOf(h: IpsetHeader): SetShape {
  return { type: h.type, family: h.family === 'inet6' ? 6 : 4, comment: h.comment, timeout: h.timeout !== undefined };
}

type BatchContext = { command: string; set: string; setType: string; netns: string | undefined };

/**
 * collectFailures turns a native ADT answer ([applied, index, error, ...], indexes into the records sent) into
 * batch failures appended to out; entryAt maps a record index to the caller's index and entry. Returns applied.
 */
function collectFailures(
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

/** Ipset is a client for the kernel's ipset subsystem in one network namespace. */
export class Ipset implements Disposable {
  #handle: RawIpsetHandle | undefined;
  /** addSync/delSync's path to the handle; it has its own record buffer (an async call may still read #writer's). */
  readonly #sync: SyncChannel;
  readonly #netns: Netns | undefined;
  readonly #peer: NetlinkPeer | undefined;
  readonly #timeoutMs: number;
  /** SO_RCVBUF for this client's sockets (the dump sockets too); 0 for podnet's default. */
  readonly #receiveBuffer: number;
  readonly #shapes = new Map<string, SetShape>();
  /** Entries per set, as far as this client knows: from headers, then its own adds and dels (decides INLINE). */
  readonly #sizes = new Map<string, number>();
  /**
   * Coalesced async adds and dels. An async native call reads its writer's buffer in place until it settles; the
   * queue runs one operation at a time, so no async operation writes a buffer that is still being read.
   */
  readonly #writer = new RecordWriter(4096);
  /** Reused by every check on the JS thread (a check and its push never interleave with another). */
  readonly #fields = newFields();
  /**
   * addMany's writers (two: a streamed chunk is encoded while the last is sent), kept between calls: memory the
   * kernel has to hand over fresh costs a page fault per 4 KiB, which was a third of encoding a batch.
   */
  #batchWriters: [RecordWriter, RecordWriter] | undefined;
  /** list()'s own socket, opened on first use: a dump in chunks must not share a socket with *Sync calls. */
  #dumpHandle: RawIpsetHandle | undefined;
  #tail: Promise<unknown> = Promise.resolve();
  #lastAdt: AdtJob | undefined;

  private constructor(handle: RawIpsetHandle, netns: Netns | undefined, peer: NetlinkPeer | undefined, timeoutMs: number, receiveBuffer: number) {
    this.#handle = handle;
    this.#sync = new SyncChannel(handle);
    this.#netns = netns;
    this.#peer = peer;
    this.#timeoutMs = timeoutMs;
    this.#receiveBuffer = receiveBuffer;
  }

  /**
   * Ipset.open opens a netlink socket inside the namespace (or binds to the peer) and checks the kernel's ipset
   * protocol. Throws PodnetSystemError when the namespace cannot be opened or entered, IpsetError when the kernel
   * does not speak protocol 6 or 7.
   */
  static async open(options: IpsetOpenOptions = {}): Promise<Ipset> {
    const o = checkOptions<IpsetOpenOptions>('options', options);
    const receiveBuffer = o.receiveBufferBytes === undefined ? 0 : checkInteger('options.receiveBufferBytes', o.receiveBufferBytes, 1, 1 << 30);
    // A handle of our own on the namespace: the caller may close theirs while we still need to open dump sockets.
    const { timeoutMs, peer, netns } = checkNetlinkOpenOptions(options);
    let handle: RawIpsetHandle;
    try {
      handle = Ipset.#newHandle(netns, peer, timeoutMs, receiveBuffer);
      const version = await handle.protocol(false);
      if (version < 6) throw new PodnetError(`kernel speaks ipset protocol ${version}, podnet needs 6 or 7`, 'ERR_IPSET_PROTOCOL');
    } catch (err) {
      netns?.close();
      throw err;
    }
    return new Ipset(handle, netns, peer, timeoutMs, receiveBuffer);
  }

  static #newHandle(netns: Netns | undefined, peer: NetlinkPeer | undefined, timeoutMs: number, receiveBuffer: number): RawIpsetHandle {
    if (peer) return new native.IpsetHandle(-1, timeoutMs, (req) => peer.exchange(req));
    return new native.IpsetHandle(netns ? netns.fd : -1, timeoutMs, undefined, receiveBuffer);
  }

  /** netns is the namespace this client works in (undefined: the process's own). */
  get netns(): Netns | undefined {
    return this.#netns;
  }

  get closed(): boolean {
    return this.#handle === undefined;
  }

  #live(): RawIpsetHandle {
    if (!this.#handle) throw new PodnetError('ipset client is closed', 'ERR_IPSET_CLOSED');
    return this.#handle;
  }

  /** Runs fn after every operation queued before it; the queue survives failures. */
  #serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const caller = new Error();
    const run = this.#tail.then(() => fn());
    this.#tail = run.catch(() => undefined);
    this.#lastAdt = undefined;
    return withCallerStack(run, caller);
  }

  /** The set's shape, from the cache or its header; a missing set fails as the command that needed it. */
  async #shape(name: string, command: string): Promise<SetShape> {
    const known = this.#shapes.get(name);
    if (known) return known;
    try {
      return this.#remember(await this.#headerNow(name));
    } catch (err) {
      if (err instanceof IpsetError) throw ipsetError(-err.errno, { command, set: name, netns: this.#netns?.path });
      throw err;
    }
  }

  #shapeSync(name: string, command: string): SetShape {
    const known = this.#shapes.get(name);
    if (known) return known;
    try {
      const result = this.#live().list(name, LIST_HEADER, true);
      return this.#remember(this.#firstHeader(result.sets, name));
    } catch (err) {
      if (err instanceof IpsetError) throw ipsetError(-err.errno, { command, set: name, netns: this.#netns?.path });
      throw err;
    }
  }

  #remember(header: IpsetHeader): SetShape {
    const shape = shapeOf(header);
    if (header.decoded) {
      this.#shapes.set(header.name, shape);
      this.#sizes.set(header.name, header.elements);
    }
    return shape;
  }

  /** Forgets what the client knew of a set (all sets when name is undefined). */
  #forget(name?: string): void {
    if (name === undefined) {
      this.#shapes.clear();
      this.#sizes.clear();
    } else {
      this.#shapes.delete(name);
      this.#sizes.delete(name);
    }
  }

  /** The set's size, from a header when the client does not know it (a set made with `exist`, or elsewhere). */
  async #size(name: string): Promise<number> {
    const known = this.#sizes.get(name);
    if (known !== undefined) return known;
    try {
      this.#remember(await this.#headerNow(name));
    } catch {
      // The operation itself reports a missing set.
    }
    return this.#sizes.get(name) ?? Infinity;
  }

  /** Counts what an ADD (more entries) or DEL (fewer) applied into the set's known size. */
  #counted(name: string, command: number, applied: number): void {
    const known = this.#sizes.get(name);
    if (known !== undefined) this.#sizes.set(name, Math.max(0, known + (command === cmd.add ? applied : -applied)));
  }

  #firstHeader(sets: RawSetHeader[], name: string): IpsetHeader {
    const raw = sets[0];
    if (!raw) throw ipsetError(2, { command: 'list', set: name });
    return toHeader(raw);
  }

  async #headerNow(name: string): Promise<IpsetHeader> {
    const result = await this.#live().list(name, LIST_HEADER, false);
    return this.#firstHeader(result.sets, name);
  }

  /**
   * create makes a set. With `{ exist: true }` an existing set of identical type and options is accepted (the kernel
   * still refuses a different one with EEXIST... as IPSET_ERR_EXIST). Throws InvalidArgumentError for bad options.
   */
  async create(name: string, options: IpsetCreateOptions, flags: { exist?: boolean } = {}): Promise<void> {
    checkSetName(name);
    const o = checkOptions<IpsetCreateOptions>('options', options);
    if (!TYPES.has(o.type as string)) throw invalidValue('options.type', `one of ${[...TYPES].join(', ')}`, o.type);
    const family = o.family ?? 'inet';
    if (family !== 'inet' && family !== 'inet6') throw invalidValue('options.family', "'inet' or 'inet6'", family);
    for (const key of ['comment', 'counters'] as const) {
      if (o[key] !== undefined && typeof o[key] !== 'boolean') throw invalidType(`options.${key}`, 'a boolean', o[key]);
    }
    if (o.timeout !== undefined) checkInteger('options.timeout', o.timeout, 0, 2147483);
    if (o.maxelem !== undefined) checkInteger('options.maxelem', o.maxelem, 1, 0xffffffff);
    if (o.hashsize !== undefined) checkInteger('options.hashsize', o.hashsize, 64, 0x80000000);
    checkOptions('flags', flags);
    const spec = {
      name,
      type: o.type as string,
      family: family === 'inet' ? 2 : 10,
      hashsize: o.hashsize,
      maxelem: o.maxelem,
      timeout: o.timeout,
      cadtFlags: (o.comment ? WITH_COMMENT : 0) | (o.counters ? WITH_COUNTERS : 0),
      exist: flags.exist === true,
    };
    return this.#serial(async () => {
      await this.#live().create(spec, false);
      this.#shapes.set(name, { type: spec.type, family: family === 'inet' ? 4 : 6, comment: !!o.comment, timeout: o.timeout !== undefined });
      // With `exist` the set may have been there, full: its size is learnt from a header when it matters.
      if (spec.exist) this.#sizes.delete(name);
      else this.#sizes.set(name, 0);
    });
  }

  /** destroy removes a set (all sets when name is omitted). IPSET_ERR_BUSY when iptables still references it. */
  async destroy(name?: string): Promise<void> {
    if (name !== undefined) checkSetName(name);
    return this.#serial(async () => {
      try {
        await this.#live().simple(cmd.destroy, name ?? '', '', true, false);
      } finally {
        this.#forget(name);
      }
    });
  }

  /** flush removes every entry of a set (of all sets when name is omitted). */
  async flush(name?: string): Promise<void> {
    if (name !== undefined) checkSetName(name);
    return this.#serial(async () => {
      await this.#live().simple(cmd.flush, name ?? '', '', true, false);
      for (const set of name === undefined ? [...this.#sizes.keys()] : [name]) if (this.#sizes.has(set)) this.#sizes.set(set, 0);
    });
  }

  /** rename renames a set; IPSET_ERR_EXIST_SETNAME2 when the new name is taken. */
  async rename(from: string, to: string): Promise<void> {
    checkSetName(from, 'from');
    checkSetName(to, 'to');
    return this.#serial(async () => {
      try {
        await this.#live().simple(cmd.rename, from, to, true, false);
      } finally {
        this.#forget(from);
        this.#forget(to);
      }
    });
  }

  /** swap exchanges the contents of two sets of the same type and family (IPSET_ERR_TYPE_MISMATCH otherwise). */
  async swap(a: string, b: string): Promise<void> {
    checkSetName(a, 'a');
    checkSetName(b, 'b');
    return this.#serial(async () => {
      try {
        await this.#live().simple(cmd.swap, a, b, true, false);
      } finally {
        this.#forget(a);
        this.#forget(b);
      }
    });
  }

  /**
   * add adds one entry, exclusively: an entry that is already there rejects with IpsetError `IPSET_ERR_EXIST`.
   * `{ replace: true }` overwrites it instead (its comment and timeout are replaced). Throws InvalidArgumentError
   * for an entry that does not fit the set, before anything is sent.
   */
  add(name: string, entry: IpsetEntry, options?: { replace?: boolean }): Promise<void> {
    return this.#one(cmd.add, name, entry, options, 'replace');
  }

  /** del deletes one entry; a missing one rejects with IPSET_ERR_EXIST unless `{ ignoreMissing: true }`. */
  del(name: string, entry: IpsetEntry, options?: { ignoreMissing?: boolean }): Promise<void> {
    return this.#one(cmd.del, name, entry, options, 'ignoreMissing');
  }

  /** add or del of one entry, exclusive unless options[lenient]. Bad arguments reject; nothing is sent for them. */
  #one(command: number, name: string, entry: unknown, options: object | undefined, lenient: 'replace' | 'ignoreMissing'): Promise<void> {
    // Not an async function: 10,000 concurrent adds would each pay for a second promise and its extra ticks.
    try {
      checkSetName(name);
      const o = checkOptions<Record<typeof lenient, boolean | undefined>>('options', options);
      return this.#queueAdt(command, name, entry, o[lenient] !== true);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #queueAdt(command: number, name: string, entry: unknown, excl: boolean): Promise<void> {
    if (typeof entry !== 'object' || entry === null) throw invalidType('entry', 'an entry object', entry);
    this.#live();
    return new Promise<void>((resolve, reject) => {
      const item: PendingItem = { entry, resolve, reject };
      const open = this.#lastAdt;
      if (open && !open.started && open.command === command && open.excl === excl && open.name === name) {
        open.items.push(item);
        return;
      }
      const job: AdtJob = { command, excl, name, items: [item], started: false };
      this.#serial(() => this.#runAdtJob(job, command, name, excl)).catch(() => undefined);
      this.#lastAdt = job;
    });
  }

  async #runAdtJob(job: AdtJob, command: number, name: string, excl: boolean): Promise<void> {
    job.started = true;
    if (this.#lastAdt === job) this.#lastAdt = undefined;
    const items = job.items;
    let shape: SetShape;
    try {
      shape = await this.#shape(name, command === cmd.add ? 'add' : 'del');
    } catch (err) {
      for (const item of items) item.reject(err);
      return;
    }
    const writer = this.#writer;
    writer.reset();
    const sent: PendingItem[] = [];
    for (const item of items) {
      try {
        writer.push(checkEntry(item.entry, shape, 'entry', this.#fields));
        sent.push(item);
      } catch (err) {
        item.reject(err);
      }
    }
    if (sent.length === 0) return;
    let result;
    try {
      const inline = writer.byteLength <= INLINE_BYTES && (await this.#size(name)) < INLINE_MAX_ELEMENTS;
      // Inline: the records are read before adt() returns. Either way the writer is not written until it settles.
      result = await this.#live().adt(command, name, writer.bytes(), excl, inline);
    } catch (err) {
      for (const item of sent) item.reject(err);
      return;
    }
    this.#counted(name, command, result[0]!);
    const failed = new Map<number, number>();
    for (let i = 1; i < result.length; i += 2) failed.set(result[i]!, result[i + 1]!);
    const command_ = command === cmd.add ? 'add' : 'del';
    sent.forEach((item, index) => {
      const error = failed.get(index);
      if (error === undefined) item.resolve();
      else item.reject(ipsetError(error, { command: command_, set: name, setType: shape.type, entry: item.entry, netns: this.#netns?.path }));
    });
  }

  /** addSync is add() done synchronously (it blocks the event loop for one kernel round trip; it does not wait for queued async work). */
  addSync(name: string, entry: IpsetEntry, options: { replace?: boolean } = {}): void {
    this.#adtSync(cmd.add, 'add', name, entry, checkOptions<{ replace?: boolean }>('options', options).replace !== true);
  }

  /** delSync is del() done synchronously. */
  delSync(name: string, entry: IpsetEntry, options: { ignoreMissing?: boolean } = {}): void {
    this.#adtSync(cmd.del, 'del', name, entry, checkOptions<{ ignoreMissing?: boolean }>('options', options).ignoreMissing !== true);
  }

  #adtSync(command: number, label: string, name: string, entry: IpsetEntry, excl: boolean): void {
    // A name with a known shape was checked when it was learned: a name over 10 characters costs its check a
    // UTF-8 byte count, a call into C++, which a hot loop of single adds would pay on every call.
    const shape = this.#shapes.get(name) ?? this.#shapeSync(checkSetName(name), label);
    const fields = checkEntry(entry, shape, 'entry', this.#fields);
    this.#live();
    const error = this.#sync.send(command, excl, name, fields);
    if (error !== 0) throw ipsetError(error, { command: label, set: name, setType: shape.type, entry, netns: this.#netns?.path });
  }

  /** test tells whether entry is in the set. */
  async test(name: string, entry: IpsetEntry): Promise<boolean> {
    checkSetName(name);
    return this.#serial(async () => {
      const record = this.#oneRecord(checkEntry(entry, await this.#shape(name, 'test')));
      return this.#live().test(name, record, true); // one small request: inline, as small ADT batches (INLINE_BYTES)
    });
  }

  /** testSync is test() done synchronously. */
  testSync(name: string, entry: IpsetEntry): boolean {
    checkSetName(name);
    const record = this.#oneRecord(checkEntry(entry, this.#shapeSync(name, 'test')));
    return this.#live().test(name, record, true);
  }

  #oneRecord(fields: EntryFields): Buffer {
    const w = new RecordWriter(128);
    w.push(fields);
    return w.bytes();
  }

  /**
   * addMany adds every entry of an iterable in ADT batches and resolves with what was applied and which entries
   * failed (each with its index and IpsetError); one failing entry never stops the others. An array is checked
   * whole before anything is sent (InvalidArgumentError, nothing changed); other iterables are streamed in chunks
   * and an invalid entry is reported in `failed` and never sent.
   */
  async addMany(name: string, entries: Iterable<IpsetEntry>, options: { replace?: boolean } = {}): Promise<IpsetBatchResult> {
    const o = checkOptions<{ replace?: boolean }>('options', options);
    return this.#many(cmd.add, 'add', name, entries, o.replace !== true);
  }

  /** delMany deletes every entry of an iterable, as addMany adds. */
  async delMany(name: string, entries: Iterable<IpsetEntry>, options: { ignoreMissing?: boolean } = {}): Promise<IpsetBatchResult> {
    const o = checkOptions<{ ignoreMissing?: boolean }>('options', options);
    return this.#many(cmd.del, 'del', name, entries, o.ignoreMissing !== true);
  }

  #many(command: number, label: string, name: string, entries: Iterable<IpsetEntry>, excl: boolean): Promise<IpsetBatchResult> {
    checkSetName(name);
    if (entries === null || typeof (entries as Iterable<IpsetEntry>)?.[Symbol.iterator] !== 'function') {
      throw invalidType('entries', 'an iterable of entries', entries);
    }
    return this.#serial(async () => {
      const shape = await this.#shape(name, label);
      const context = { command: label, set: name, setType: shape.type, netns: this.#netns?.path };
      if (Array.isArray(entries)) return this.#manyArray(command, name, entries, excl, shape, context);
      return this.#manyStream(command, name, entries, excl, shape, context);
    });
  }

  /**
   * An iterable is streamed in chunks, double-buffered: the next chunk is checked and encoded on the JS thread
   * while a worker sends the previous one. Chunks go out one after another (the session's lock does not order
   * waiting workers, so the next is sent only once the last has settled).
   */
  async #manyStream(
    command: number,
    name: string,
    entries: Iterable<IpsetEntry>,
    excl: boolean,
    shape: SetShape,
    context: BatchContext,
  ): Promise<IpsetBatchResult> {
    const result: IpsetBatchResult = { applied: 0, failed: [] };
    const invalid: IpsetBatchFailure[] = [];
    const writers = this.#writers();
    let writer = writers[0];
    writer.reset();
    const fields = this.#fields;
    let chunk: StreamChunk = { entries: [], indexes: [] };
    let inFlight: Promise<void> = Promise.resolve();
    let failure: { error: unknown } | undefined;
    const send = async () => {
      await inFlight;
      if (failure) throw failure.error;
      if (chunk.entries.length === 0) return;
      const records = writer.bytes();
      writer = writer === writers[0] ? writers[1] : writers[0]; // the other one's send has settled (awaited above)
      writer.reset();
      const { entries: sentEntries, indexes: sentIndexes } = chunk;
      chunk = { entries: [], indexes: [] };
      // Settles into result or failure right away, so a rejection is never left unhandled while encoding goes on.
      inFlight = this.#live().adt(command, name, records, excl, false).then(
        (raw) => {
          result.applied += collectFailures(raw, (at) => [sentIndexes[at]!, sentEntries[at]!], context, result.failed);
          this.#counted(name, command, raw[0]!);
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

  /** An array is checked whole before anything is sent (in slices that let the event loop turn), then sent in one native call. */
  async #manyArray(
    command: number,
    name: string,
    entries: IpsetEntry[],
    excl: boolean,
    shape: SetShape,
    context: BatchContext,
  ): Promise<IpsetBatchResult> {
    const writer = this.#writers()[0];
    let raw;
    try {
      writer.reset(entries.length * 64);
      for (let i = 0; i < entries.length; ) {
        i = encodeArraySlice(writer, entries, i, shape, this.#fields);
        if (i < entries.length) await yieldToLoop();
      }
      raw = await this.#live().adt(command, name, writer.bytes(), excl, false);
    } finally {
      this.#releaseWriters();
    }
    const failed: IpsetBatchFailure[] = [];
    const applied = collectFailures(raw, (at) => [at, entries[at]!], context, failed);
    this.#counted(name, command, applied);
    return { applied, failed };
  }

  #writers(): [RecordWriter, RecordWriter] {
    return (this.#batchWriters ??= [new RecordWriter(STREAM_CHUNK * 64), new RecordWriter(STREAM_CHUNK * 64)]);
  }

  /** A writer grown past RETAIN_BYTES by a huge batch is let go rather than kept for the client's lifetime. */
  #releaseWriters(): void {
    if (this.#batchWriters && this.#batchWriters[0].capacity > RETAIN_BYTES) this.#batchWriters = undefined;
  }

  /**
   * list returns a set's header and all its entries (see entries() for sets too large to hold at once). The dump
   * comes in chunks over a socket of its own: a worker reads the next chunk from the kernel while the JS thread
   * turns the last one into entries, and the event loop turns between chunks.
   */
  async list(name: string): Promise<IpsetListing> {
    checkSetName(name);
    return this.#serial(async () => {
      this.#live();
      const handle = (this.#dumpHandle ??= Ipset.#newHandle(this.#netns, this.#peer, this.#timeoutMs, this.#receiveBuffer));
      let chunk = await handle.entries(name, LIST_CHUNK);
      if (!chunk.header) throw ipsetError(2, { command: 'list', set: name });
      const header = toHeader(chunk.header);
      this.#remember(header);
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
    });
  }

  /** header returns a set's header without its members. ENOENT (IpsetError) when there is no such set. */
  async header(name: string): Promise<IpsetHeader> {
    checkSetName(name);
    return this.#serial(() => this.#headerNow(name));
  }

  /** listNames returns the names of every set in the namespace, whoever made them. */
  async listNames(): Promise<string[]> {
    return this.#serial(async () => {
      const raw = await this.#live().list('', LIST_SETNAME, false);
      return raw.sets.map((s) => s.name);
    });
  }

  /**
   * entries streams a set's entries with bounded memory, over a socket of its own (other operations go on
   * meanwhile). Breaking out of the loop ends the dump.
   */
  async *entries(name: string, options: { chunk?: number } = {}): AsyncGenerator<IpsetListedEntry, void, undefined> {
    checkSetName(name);
    const chunk = options.chunk === undefined ? 4096 : checkInteger('options.chunk', options.chunk, 1, 1 << 20);
    this.#live();
    const handle = Ipset.#newHandle(this.#netns, this.#peer, this.#timeoutMs, this.#receiveBuffer);
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

  /** close closes the socket (and this client's namespace handle). Queued operations fail with ERR_IPSET_CLOSED. */
  close(): void {
    if (!this.#handle) return;
    this.#handle.close();
    this.#handle = undefined;
    this.#dumpHandle?.close();
    this.#dumpHandle = undefined;
    this.#netns?.close();
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

export { IpsetError };
