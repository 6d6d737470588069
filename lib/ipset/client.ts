/**
 * Ipset: the typed client over podnet's native nfnetlink ipset codec. One client is one netlink socket bound to one
 * network namespace (or one JS NetlinkPeer such as FakeNetlink).
 *
 * Its parts: the queue that runs async operations in call order and coalesces single adds and deletes (queue.ts),
 * how those reach the kernel (adt-send.ts), batches of arrays (batch.ts) and iterables (batch-stream.ts), dumps
 * (dump.ts), and the socket and what the client knows of each set (session.ts, set-cache.ts).
 */
import { IpsetError, PodnetError } from '../errors.js';
import { native, type RawIpsetHandle } from '../native.js';
import { checkNetlinkOpenOptions, type NetlinkOpenOptions } from '../netlink/open-options.js';
import type { Netns } from '../netns.js';
import { checkInteger, checkOptions, invalidType } from '../validate.js';
import { sendJob, sendSync } from './adt-send.js';
import { type BatchRequest, BatchWriters, sendArray } from './batch.js';
import { sendStream } from './batch-stream.js';
import { createSpec } from './create-spec.js';
import { listNames, listSet, streamEntries } from './dump.js';
import { checkEntry } from './entry.js';
import { IpsetQueue } from './queue.js';
import { traced, tracedSync } from './request-trace.js';
import { RecordWriter } from './record.js';
import { IpsetSession, newHandle, type SessionTarget } from './session.js';
import { checkSetName } from './set-name.js';
import type { IpsetBatchResult, IpsetCreateOptions, IpsetEntry, IpsetHeader, IpsetListedEntry, IpsetListing } from './types.js';

const cmd = native.ipsetCommands;

/** IpsetOpenOptions configure Ipset.open: the netlink options every client takes, and the receive buffer. */
export interface IpsetOpenOptions extends NetlinkOpenOptions {
  /**
   * SO_RCVBUF of the client's kernel sockets, bytes (1..2^30; the kernel doubles it, caps it at net.core.rmem_max and
   * floors it at its minimum, about 2.3 KiB). Default: 8 MiB (SO_RCVBUFFORCE), room for the ACKs of the largest
   * batches. Meant for tests of a receive buffer that overflows: a smaller one makes big batches fail with ENOBUFS
   * (their ACKs are lost; the kernel did apply what they carried). Dumps are read as they come and never overflow.
   * Ignored with `netlink`.
   */
  receiveBufferBytes?: number;
}

/**
 * Ipset is a client for the kernel's ipset subsystem in one network namespace. Operations run in call order. A
 * kernel refusal rejects with IpsetError (the kernel's code read by the operation, such as `IPSET_ERR_EXIST` for an
 * add of a present entry, `IPSET_ERR_ENTRY_MISSING` for a del of an absent one, or `ENOENT` for a missing set, with
 * the operation, set and entry); a kernel or peer that does not answer within timeoutMs rejects with
 * PodnetSystemError `ETIMEDOUT` (the request may still have been applied: read the state to know); calls made
 * after close() fail with PodnetError `ERR_IPSET_CLOSED`, while those made before it finish. Bad arguments are
 * refused with InvalidArgumentError (`ERR_INVALID_ARG_TYPE` / `ERR_INVALID_ARG_VALUE`) before anything is sent.
 */
export class Ipset implements Disposable {
  readonly #session: IpsetSession;
  readonly #queue: IpsetQueue;
  /** addMany's writers, kept between calls. */
  readonly #batchWriters = new BatchWriters();

  private constructor(handle: RawIpsetHandle, target: SessionTarget) {
    const session = new IpsetSession(handle, target);
    this.#session = session;
    this.#queue = new IpsetQueue((job) => sendJob(session, job));
  }

  /**
   * Ipset.open opens a netlink socket inside the namespace (or binds to the peer) and checks the kernel's ipset
   * protocol. Throws InvalidArgumentError for bad options; rejects with PodnetSystemError when the namespace cannot
   * be opened or entered, PodnetError `ERR_IPSET_PROTOCOL` when the kernel does not speak protocol 6 or 7.
   */
  static async open(options: IpsetOpenOptions = {}): Promise<Ipset> {
    const o = checkOptions<IpsetOpenOptions>('options', options);
    const receiveBuffer = o.receiveBufferBytes === undefined ? 0 : checkInteger('options.receiveBufferBytes', o.receiveBufferBytes, 1, 1 << 30);
    // A handle of our own on the namespace: the caller may close theirs while we still need to open dump sockets.
    const { timeoutMs, peer, netns } = checkNetlinkOpenOptions(options, ['receiveBufferBytes']);
    const target: SessionTarget = { netns, peer, timeoutMs, receiveBuffer };
    let handle: RawIpsetHandle;
    try {
      handle = newHandle(target);
      const opened = handle;
      const version = await traced(() => ({ command: 'protocol', set: undefined, netns: netns?.path, mode: 'worker' }), () => opened.protocol(false));
      if (version < 6) throw new PodnetError(`kernel speaks ipset protocol ${version}, podnet needs 6 or 7`, 'ERR_IPSET_PROTOCOL');
    } catch (err) {
      netns?.close();
      throw err;
    }
    return new Ipset(handle, target);
  }

  /** netns is the namespace this client works in (undefined: the process's own). */
  get netns(): Netns | undefined {
    return this.#session.target.netns;
  }

  /** closed tells whether close() was called. */
  get closed(): boolean {
    return this.#session.closed;
  }

  /**
   * create makes a set. With `{ exist: true }` an existing set of identical type and options is accepted (the kernel
   * still refuses a different one with EEXIST... as IPSET_ERR_EXIST). Throws InvalidArgumentError for bad options.
   */
  async create(name: string, options: IpsetCreateOptions, flags: { exist?: boolean } = {}): Promise<void> {
    checkSetName(name);
    const { spec, shape } = createSpec(name, options, flags);
    const session = this.#session;
    return this.#queue.serial(async () => {
      const handle = session.handle();
      await traced(() => session.about('create', name, 'worker'), () => handle.create(spec, false));
      session.sets.created(name, shape, spec.exist);
    });
  }

  /**
   * destroy removes a set (all sets when name is omitted). Rejects with IpsetError `IPSET_ERR_BUSY` when iptables
   * still references it, `ENOENT` when there is no such set.
   */
  async destroy(name?: string): Promise<void> {
    if (name !== undefined) checkSetName(name);
    const session = this.#session;
    return this.#queue.serial(async () => {
      try {
        await this.#wholeSetCommand(cmd.destroy, 'destroy', name);
      } finally {
        session.sets.forget(name);
      }
    });
  }

  /**
   * flush removes every entry of a set (of all sets when name is omitted). Rejects with IpsetError `ENOENT` for no such
   * set.
   */
  async flush(name?: string): Promise<void> {
    if (name !== undefined) checkSetName(name);
    const session = this.#session;
    return this.#queue.serial(async () => {
      await this.#wholeSetCommand(cmd.flush, 'flush', name);
      session.sets.flushed(name);
    });
  }

  /** rename renames a set; rejects with IpsetError `IPSET_ERR_EXIST_SETNAME2` when the new name is taken. */
  async rename(from: string, to: string): Promise<void> {
    checkSetName(from, 'from');
    checkSetName(to, 'to');
    return this.#twoSets(cmd.rename, 'rename', from, to);
  }

  /**
   * swap exchanges the contents of two sets of the same type and family; rejects with IpsetError
   * `IPSET_ERR_TYPE_MISMATCH` otherwise.
   */
  async swap(a: string, b: string): Promise<void> {
    checkSetName(a, 'a');
    checkSetName(b, 'b');
    return this.#twoSets(cmd.swap, 'swap', a, b);
  }

  /** rename and swap: after either, what the client knew of both sets is stale. */
  #twoSets(command: number, label: string, a: string, b: string): Promise<void> {
    const session = this.#session;
    return this.#queue.serial(async () => {
      try {
        await this.#wholeSetCommand(command, label, a, b);
      } finally {
        session.sets.forget(a);
        session.sets.forget(b);
      }
    });
  }

  /** A command of one or two set names and no entries (destroy, flush, rename, swap), on a worker. */
  #wholeSetCommand(command: number, label: string, name: string | undefined, name2 = ''): Promise<void> {
    const session = this.#session;
    const handle = session.handle();
    return traced(() => session.about(label, name, 'worker'), () => handle.wholeSetCommand(command, name ?? '', name2, true, false));
  }

  /**
   * add adds one entry, exclusively: an entry that is already there rejects with IpsetError `IPSET_ERR_EXIST`.
   * `{ replace: true }` overwrites it instead (its comment and timeout are replaced). Throws InvalidArgumentError
   * for an entry that does not fit the set, before anything is sent.
   */
  add(name: string, entry: IpsetEntry, options?: { replace?: boolean }): Promise<void> {
    return this.#one(cmd.add, name, entry, options, 'replace');
  }

  /**
   * del deletes one entry; a missing one rejects with IpsetError `IPSET_ERR_ENTRY_MISSING` (`isNotFound`; its
   * `ipsetCode` is the kernel's `IPSET_ERR_EXIST`) unless `{ ignoreMissing: true }`.
   */
  del(name: string, entry: IpsetEntry, options?: { ignoreMissing?: boolean }): Promise<void> {
    return this.#one(cmd.del, name, entry, options, 'ignoreMissing');
  }

  /** add or del of one entry, exclusive unless options[lenient]. Bad arguments reject; nothing is sent for them. */
  #one(command: number, name: string, entry: unknown, options: object | undefined, lenient: 'replace' | 'ignoreMissing'): Promise<void> {
    // Not an async function: 10,000 concurrent adds would each pay for a second promise and its extra ticks.
    try {
      checkSetName(name);
      const o = checkOptions<Record<typeof lenient, boolean | undefined>>('options', options);
      if (typeof entry !== 'object' || entry === null) throw invalidType('entry', 'an entry object', entry);
      this.#session.live();
      return this.#queue.adt(command, name, entry, o[lenient] !== true);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * addSync is add() done synchronously (it blocks the event loop for one kernel round trip; it does not wait for
   * queued async work). It throws what add rejects with, and `ERR_IPSET_REENTERED` (errno `EDEADLK`) when called from
   * a NetlinkPeer's exchange() on this client.
   */
  addSync(name: string, entry: IpsetEntry, options?: { replace?: boolean }): void {
    // No default options object: left out, there is nothing to check or read.
    const excl = options === undefined || checkOptions<{ replace?: boolean }>('options', options).replace !== true;
    sendSync(this.#session, cmd.add, 'add', name, entry, excl);
  }

  /** delSync is del() done synchronously; it throws what del rejects with, as addSync does. */
  delSync(name: string, entry: IpsetEntry, options?: { ignoreMissing?: boolean }): void {
    const excl = options === undefined || checkOptions<{ ignoreMissing?: boolean }>('options', options).ignoreMissing !== true;
    sendSync(this.#session, cmd.del, 'del', name, entry, excl);
  }

  /** test tells whether entry is in the set. Rejects with IpsetError `ENOENT` when there is no such set. */
  async test(name: string, entry: IpsetEntry): Promise<boolean> {
    checkSetName(name);
    const session = this.#session;
    return this.#queue.serial(async () => {
      const record = oneRecord(checkEntry(entry, await session.shape(name, 'test')));
      const handle = session.handle();
      // One small request: inline, as small ADT batches (adt-send.ts).
      return traced(() => session.about('test', name, 'inline'), async () => handle.test(name, record, true), 1);
    });
  }

  /** testSync is test() done synchronously; it throws what test rejects with, as addSync does. */
  testSync(name: string, entry: IpsetEntry): boolean {
    checkSetName(name);
    const session = this.#session;
    const record = oneRecord(checkEntry(entry, session.shapeSync(name, 'test')));
    const handle = session.live();
    return tracedSync(() => session.about('test', name, 'sync'), () => handle.test(name, record, true), 1);
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

  /** delMany deletes every entry of an iterable, as addMany adds; a missing entry fails with `IPSET_ERR_ENTRY_MISSING`. */
  async delMany(name: string, entries: Iterable<IpsetEntry>, options: { ignoreMissing?: boolean } = {}): Promise<IpsetBatchResult> {
    const o = checkOptions<{ ignoreMissing?: boolean }>('options', options);
    return this.#many(cmd.del, 'del', name, entries, o.ignoreMissing !== true);
  }

  #many(command: number, label: string, name: string, entries: Iterable<IpsetEntry>, excl: boolean): Promise<IpsetBatchResult> {
    checkSetName(name);
    if (entries === null || typeof (entries as Iterable<IpsetEntry>)?.[Symbol.iterator] !== 'function') {
      throw invalidType('entries', 'an iterable of entries', entries);
    }
    const session = this.#session;
    return this.#queue.serial(async () => {
      const shape = await session.shape(name, label);
      const context = { operation: label, set: name, setType: shape.type, netns: session.netnsPath };
      const request: BatchRequest = { command, name, excl, shape, context };
      if (Array.isArray(entries)) return sendArray(session, this.#batchWriters, request, entries);
      return sendStream(session, this.#batchWriters, request, entries);
    });
  }

  /**
   * list returns a set's header and all its entries (see entries() for sets too large to hold at once). The dump
   * comes in chunks over a socket of its own, and the event loop turns between chunks. Rejects with IpsetError
   * `ENOENT` when there is no such set.
   */
  async list(name: string): Promise<IpsetListing> {
    checkSetName(name);
    return this.#queue.serial(() => listSet(this.#session, name));
  }

  /** header returns a set's header without its members. ENOENT (IpsetError) when there is no such set. */
  async header(name: string): Promise<IpsetHeader> {
    checkSetName(name);
    return this.#queue.serial(() => this.#session.headerNow(name));
  }

  /** listNames returns the names of every set in the namespace, whoever made them. */
  async listNames(): Promise<string[]> {
    return this.#queue.serial(() => listNames(this.#session));
  }

  /**
   * entries streams a set's entries with bounded memory, over a socket of its own (other operations go on
   * meanwhile). Breaking out of the loop ends the dump. The iteration rejects with IpsetError `ENOENT` when there
   * is no such set.
   */
  async *entries(name: string, options: { chunk?: number } = {}): AsyncGenerator<IpsetListedEntry, void, undefined> {
    checkSetName(name);
    const chunk = options.chunk === undefined ? 4096 : checkInteger('options.chunk', options.chunk, 1, 1 << 20);
    yield* streamEntries(this.#session, name, chunk);
  }

  /**
   * close is NetlinkClient.close (lib/netlink/client.ts), with `ERR_IPSET_CLOSED`: new calls are refused at once,
   * calls made before it finish, and the sockets and the namespace handle are released once those settled; a
   * stream from entries() whose iteration has begun runs on its own socket to its end. Idempotent.
   */
  close(): void {
    if (this.#session.closed) return;
    this.#session.close(this.#queue.close());
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }
}

/** oneRecord encodes one checked entry for a test request. */
function oneRecord(fields: ReturnType<typeof checkEntry>): Buffer {
  const w = new RecordWriter(128);
  w.push(fields);
  return w.bytes();
}

export { IpsetError };
