/**
 * FakeZtunnel: the node proxy's end of ZDS (Istio's ztunnel discovery protocol), for unit tests of the node agent's
 * end without root. It connects to the agent's SOCK_SEQPACKET socket, says hello, then only answers: every request
 * is checked as ztunnel checks it (one network namespace fd on an add, none on anything else, a decodable message
 * that fits ztunnel's 1024-byte buffer), applied to a table of workloads as ztunnel applies it, and acked. Faults
 * (ack errors, slow acks, a dropped connection) are scripted by the test.
 */
import { PodnetError } from '../errors.js';
import type { Netns } from '../netns.js';
import {
  decodeRequest,
  encodeAck,
  encodeHello,
  ZDS_READ_BUFFER_BYTES,
  ZdsVersion,
  type ZdsRequest,
  type ZdsWorkloadInfo,
} from '../proxy/zds-messages.js';
import { SeqpacketMessageError } from '../unix/errors.js';
import type { ReceivedFd } from '../unix/received-fd.js';
import { SeqpacketSocket, type ReceivedMessage } from '../unix/socket.js';
import { checkInteger, checkOptions, invalidType, invalidValue } from '../validate.js';

/** FakeZtunnelOptions are the options of FakeZtunnel.connect. */
export interface FakeZtunnelOptions {
  /**
   * The version its hello announces: any int32, so a test can announce a wrong one (NOT_USED too, although proto3
   * would encode it as an empty message). Default ZdsVersion.V1.
   */
  version?: number;
  /**
   * Deadline in ms for connecting, for each send (hello, acks), and the default deadline of waitFor and
   * waitForSnapshot. Default 5000, ztunnel's own read/write deadline.
   */
  timeoutMs?: number;
}

/** FakeZtunnelWorkload is a workload the fake holds: added and not deleted or dropped since. */
export interface FakeZtunnelWorkload {
  /** The pod's UID, as the add named it. */
  readonly uid: string;
  /** What the add said the pod is. */
  readonly workload: ZdsWorkloadInfo;
  /** Netns.id ("<dev>:<ino>") of the namespace fd the add carried; the fake holds that fd open. */
  readonly netnsId: string;
}

/**
 * FakeZtunnelMessage is one request as received, whether it was applied or refused. An add's netnsId is undefined
 * when it did not carry exactly one network namespace fd.
 */
export type FakeZtunnelMessage =
  | { readonly kind: 'add'; readonly uid: string; readonly workload: ZdsWorkloadInfo; readonly netnsId: string | undefined }
  | { readonly kind: 'keep'; readonly uid: string }
  | { readonly kind: 'del'; readonly uid: string }
  | { readonly kind: 'snapshotSent' };

/**
 * FakeZtunnelProtocolErrorKind says what the agent did wrong: an add without an fd (`missingFd`), with more than one
 * or any message with more than two (`extraFds`), an fd on a keep, del or snapshotSent (`unexpectedFd`), an fd that
 * is not a network namespace (`notNetns`), bytes that are not a WorkloadRequest (`undecodable`), a message over
 * 1024 bytes (`tooLarge`).
 */
export type FakeZtunnelProtocolErrorKind = 'missingFd' | 'extraFds' | 'unexpectedFd' | 'notNetns' | 'undecodable' | 'tooLarge';

/** FakeZtunnelProtocolError is one thing the agent did wrong; `message` is also the error text of the ack it got. */
export interface FakeZtunnelProtocolError {
  /** What was wrong. */
  readonly kind: FakeZtunnelProtocolErrorKind;
  /** What the fake answered, as the ack's error text. */
  readonly message: string;
  /** The request's kind and uid, when the message decoded. */
  readonly request: ZdsRequest['kind'] | undefined;
  /** The request's uid, when the message decoded. */
  readonly uid: string | undefined;
}

/**
 * FakeZtunnelDisconnect says why a connection ended: the agent closed it (`eof`), disconnect() (`disconnect`),
 * close() (`close`), or a receive or send failed (`error`, such as ECONNRESET or EPIPE, with the error).
 */
export interface FakeZtunnelDisconnect {
  /** Who ended the connection. */
  readonly reason: 'eof' | 'disconnect' | 'close' | 'error';
  /** The receive or send failure, for reason `error`. */
  readonly error?: Error;
}

/** FakeZtunnelWaitOptions are the options of waitFor and waitForSnapshot. */
export interface FakeZtunnelWaitOptions {
  /** Deadline in ms (0..2^31-1). Default the fake's timeoutMs. */
  timeoutMs?: number;
  /**
   * How many to skip. waitFor: messages, by index into `received` (default 0: already received ones count, so none
   * is missed; pass `received.length` taken before the action to see only later ones). waitForSnapshot: snapshots,
   * compared with `snapshots` (default its value at the call: the next one).
   */
  after?: number;
}

const DEFAULT_TIMEOUT_MS = 5000;
// One more than ztunnel accepts, so that an add with two fds is told apart from one with one (a third is CTRUNC).
const MAX_FDS = 2;
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
const MAX_COUNT = 2 ** 31 - 1;

/** One connection: what it names for the snapshot, and how it ends. */
interface Connection {
  readonly socket: SeqpacketSocket;
  /** Uids added or kept on this connection: what its SnapshotSent keeps. */
  readonly named: Set<string>;
  open: boolean;
  readonly ended: Promise<FakeZtunnelDisconnect>;
  readonly end: (how: FakeZtunnelDisconnect) => void;
  /** Cuts a delayed ack's wait short when the connection ends. */
  cancelDelay: (() => void) | undefined;
}

/** CountedQueue hands out each pushed value count times, in push order (a count is not expanded into copies). */
class CountedQueue<T> {
  readonly #items: { value: T; left: number }[] = [];

  push(value: T, count: number): void {
    this.#items.push({ value, left: count });
  }

  shift(): T | undefined {
    const head = this.#items[0];
    if (!head) return undefined;
    if (--head.left === 0) this.#items.shift();
    return head.value;
  }

  clear(): void {
    this.#items.length = 0;
  }
}

interface Waiter {
  /** settle resolves the waiter and returns true when it is satisfied now. */
  readonly settle: () => boolean;
  readonly fail: (err: Error) => void;
}

/** short cuts text to max code points (never half a surrogate pair: an ack may not carry one). */
function short(text: string, max = 64): string {
  if (text.length <= max) return text;
  const points = [...text];
  return points.length > max ? `${points.slice(0, max).join('')}...` : text;
}

function closeFds(fds: readonly ReceivedFd[]): void {
  for (const fd of fds) fd.close();
}

function label(m: FakeZtunnelMessage): string {
  return m.kind === 'snapshotSent' ? 'snapshotSent' : `${m.kind} '${short(m.uid, 32)}'`;
}

/**
 * FakeZtunnel is a fake node proxy connected to a node agent's ZDS socket. It holds the network namespace fds of the
 * workloads it was given, as ztunnel does, and closes each when the workload goes and all of them on close().
 * While connected, its pending receive keeps the process alive: close() it (or `using` it) at the end of a test.
 */
export class FakeZtunnel implements Disposable {
  /** path is the agent's socket file. */
  readonly path: string;
  /** version is what its hello announces. */
  readonly version: number;
  readonly #timeoutMs: number;
  readonly #hello: Uint8Array;
  /** The namespace handle of each workload in #workloads. */
  readonly #table = new Map<string, Netns>();
  readonly #workloads = new Map<string, FakeZtunnelWorkload>();
  readonly #received: FakeZtunnelMessage[] = [];
  readonly #protocolErrors: FakeZtunnelProtocolError[] = [];
  readonly #failures = new CountedQueue<string>();
  readonly #delays = new CountedQueue<number>();
  readonly #waiters = new Set<Waiter>();
  #snapshots = 0;
  #conn: Connection | undefined;
  #connecting = false;
  #closed = false;

  private constructor(path: string, version: number, timeoutMs: number, hello: Uint8Array) {
    this.path = path;
    this.version = version;
    this.#timeoutMs = timeoutMs;
    this.#hello = hello;
  }

  /**
   * FakeZtunnel.connect connects to the agent listening at path and sends its hello, then answers requests in the
   * background. Throws InvalidArgumentError for bad options (a version that is not an int32, ...); rejects as
   * SeqpacketSocket.connect does (`ENOENT`, `ECONNREFUSED`, ...) or with the hello's send error (`EPIPE`,
   * `ETIMEDOUT`).
   */
  static async connect(path: string, options?: FakeZtunnelOptions): Promise<FakeZtunnel> {
    const opts = checkOptions<FakeZtunnelOptions>('options', options);
    const version = opts.version ?? ZdsVersion.V1;
    const hello = helloBytes(version);
    const timeoutMs =
      opts.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : checkInteger('options.timeoutMs', opts.timeoutMs, 0, MAX_TIMEOUT_MS);
    const fake = new FakeZtunnel(path, version, timeoutMs, hello);
    await fake.#connect();
    return fake;
  }

  /** workloads are what the fake holds now, by uid: what ztunnel would run listeners for. */
  get workloads(): ReadonlyMap<string, FakeZtunnelWorkload> {
    return this.#workloads;
  }

  /** received lists every request that decoded, in order, over all connections (applied or refused). */
  get received(): readonly FakeZtunnelMessage[] {
    return this.#received;
  }

  /** snapshots counts the SnapshotSent requests received (applied or refused), over all connections. */
  get snapshots(): number {
    return this.#snapshots;
  }

  /** protocolErrors lists what the agent did wrong, in order; each was answered with an ack error. */
  get protocolErrors(): readonly FakeZtunnelProtocolError[] {
    return this.#protocolErrors;
  }

  /** connected tells whether the fake has a connection (connect or reconnect done, not ended since). */
  get connected(): boolean {
    return this.#conn?.open === true;
  }

  /**
   * disconnected resolves when the current (or last) connection ends, with why; already resolved when it has. It
   * never rejects. After reconnect() it is the new connection's.
   */
  get disconnected(): Promise<FakeZtunnelDisconnect> {
    // #conn is set before connect() resolves and only replaced by a later connection.
    return this.#conn!.ended;
  }

  /** closed tells whether close() was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * waitFor resolves with the first received message from index options.after on (default 0: messages already
   * received count) that predicate accepts. predicate sees each message once it was applied and before its ack is
   * sent, so `workloads` already shows the change when the wait resolves. Throws InvalidArgumentError for bad
   * arguments; rejects with `ERR_FAKE_ZTUNNEL_TIMEOUT` at the deadline (naming what was received),
   * `ERR_FAKE_ZTUNNEL_CLOSED` when the fake is or gets closed first, and with what predicate throws.
   */
  waitFor(predicate: (message: FakeZtunnelMessage) => boolean, options?: FakeZtunnelWaitOptions): Promise<FakeZtunnelMessage> {
    if (typeof predicate !== 'function') throw invalidType('predicate', 'a function', predicate);
    const { timeoutMs, after } = this.#waitOptions(options);
    let next = after ?? 0;
    return this.#wait(timeoutMs, (resolve) => {
      while (next < this.#received.length) {
        const message = this.#received[next++]!;
        if (predicate(message)) {
          resolve(message);
          return true;
        }
      }
      return false;
    }, () => {
      const seen = this.#received.slice(after ?? 0).map(label).join(', ') || 'none';
      return `no matching message (received from index ${after ?? 0}: ${seen})`;
    });
  }

  /**
   * waitForSnapshot resolves with the snapshot count once more than options.after SnapshotSent were received
   * (default `snapshots` at the call: the next one), once that snapshot was applied and before its ack is sent.
   * Throws InvalidArgumentError for bad options; rejects with `ERR_FAKE_ZTUNNEL_TIMEOUT` at the deadline and
   * `ERR_FAKE_ZTUNNEL_CLOSED` when the fake is or gets closed first.
   */
  waitForSnapshot(options?: FakeZtunnelWaitOptions): Promise<number> {
    const { timeoutMs, after } = this.#waitOptions(options);
    const target = (after ?? this.#snapshots) + 1;
    return this.#wait(timeoutMs, (resolve) => {
      if (this.#snapshots < target) return false;
      resolve(this.#snapshots);
      return true;
    }, () => `no SnapshotSent number ${target} (${this.#snapshots} received)`);
  }

  /**
   * failNext makes the acks of the next count valid requests carry error, as ztunnel's do when it cannot start a
   * workload's listeners; a refused request changes nothing (a refused add's fd is closed). Requests with a protocol
   * error get their own error and do not use one up. Calls queue up. Throws InvalidArgumentError for an empty or
   * non-string error or a bad count, ZdsError `ERR_ZDS_MESSAGE_TOO_LARGE` for an error too long for an ack.
   */
  failNext(error: string, count = 1): void {
    if (typeof error !== 'string') throw invalidType('error', 'a string', error);
    if (error === '') throw invalidValue('error', 'a non-empty error (an empty one means success)', error);
    encodeAck(error);
    this.#failures.push(error, checkInteger('count', count, 1, MAX_COUNT));
  }

  /**
   * delayNextAck holds each of the next count acks (of any request) back by ms after the request was applied. The
   * fake reads nothing meanwhile, as ztunnel answers one request at a time. Calls queue up. Throws
   * InvalidArgumentError for bad arguments.
   */
  delayNextAck(ms: number, count = 1): void {
    checkInteger('ms', ms, 0, MAX_TIMEOUT_MS);
    this.#delays.push(ms, checkInteger('count', count, 1, MAX_COUNT));
  }

  /**
   * disconnect drops the connection as a crashed proxy would: the agent reads EOF, a delayed ack is never sent. The
   * table and its fds are kept for reconnect(). Does nothing when not connected.
   */
  disconnect(): void {
    if (this.#conn) this.#end(this.#conn, { reason: 'disconnect' });
  }

  /**
   * reconnect connects to the same path again and says hello again, keeping the table: the agent sends a fresh
   * snapshot, whose SnapshotSent drops what it does not name. Rejects with `ERR_FAKE_ZTUNNEL_CONNECTED` while
   * connected or connecting, `ERR_FAKE_ZTUNNEL_CLOSED` after close(), and as connect() does.
   */
  async reconnect(): Promise<void> {
    await this.#connect();
  }

  /**
   * close ends the connection, closes every namespace fd the fake holds (the table is emptied; received,
   * protocolErrors and snapshots stay) and rejects pending waits with `ERR_FAKE_ZTUNNEL_CLOSED`. Calling it again
   * does nothing.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#conn) this.#end(this.#conn, { reason: 'close' });
    for (const netns of this.#table.values()) netns.close();
    this.#table.clear();
    this.#workloads.clear();
    this.#failures.clear();
    this.#delays.clear();
    const err = this.#closedError();
    for (const waiter of [...this.#waiters]) waiter.fail(err);
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** toString names the socket path, the workload count and whether the fake is connected. */
  toString(): string {
    return `FakeZtunnel(${this.path}, ${this.#workloads.size} workloads, ${this.connected ? 'connected' : 'disconnected'})`;
  }

  async #connect(): Promise<void> {
    if (this.#closed) throw this.#closedError();
    if (this.#connecting || this.connected) {
      throw new PodnetError(`FakeZtunnel for '${this.path}' is already connected`, 'ERR_FAKE_ZTUNNEL_CONNECTED');
    }
    this.#connecting = true;
    try {
      const socket = await SeqpacketSocket.connect(this.path, { timeoutMs: this.#timeoutMs });
      if (this.#closed) {
        socket.close();
        throw this.#closedError();
      }
      try {
        await socket.send(this.#hello, { timeoutMs: this.#timeoutMs });
      } catch (err) {
        socket.close();
        throw err;
      }
      if (this.#closed) {
        socket.close();
        throw this.#closedError();
      }
      let end!: (how: FakeZtunnelDisconnect) => void;
      const ended = new Promise<FakeZtunnelDisconnect>((resolve) => (end = resolve));
      const conn: Connection = { socket, named: new Set(), open: true, ended, end, cancelDelay: undefined };
      this.#conn = conn;
      void this.#serve(conn);
    } finally {
      this.#connecting = false;
    }
  }

  #end(conn: Connection, how: FakeZtunnelDisconnect): void {
    if (!conn.open) return;
    conn.open = false;
    conn.socket.close();
    conn.cancelDelay?.();
    conn.end(Object.freeze(how));
  }

  /** serve answers conn's requests one at a time until it ends; it never rejects. */
  async #serve(conn: Connection): Promise<void> {
    for (;;) {
      let message: ReceivedMessage | null;
      let error: string;
      try {
        message = await conn.socket.receive({ maxBytes: ZDS_READ_BUFFER_BYTES, maxFds: MAX_FDS });
      } catch (err) {
        if (!conn.open) return;
        if (!(err instanceof SeqpacketMessageError)) {
          this.#end(conn, { reason: 'error', error: err instanceof Error ? err : new Error(String(err)) });
          return;
        }
        // The message was discarded and its fds closed: only its size or fd count is known.
        error = err.code === 'ERR_UNIX_TRUNCATED'
          ? this.#protocolError('tooLarge', `message of ${err.size} bytes is over the ${ZDS_READ_BUFFER_BYTES}-byte buffer`)
          : this.#protocolError('extraFds', `message carries more than ${MAX_FDS} fds`);
        this.#notify();
        if (!(await this.#answer(conn, error))) return;
        continue;
      }
      if (!conn.open) {
        // Taken just before disconnect() or close(): nobody will answer it.
        if (message) closeFds(message.fds);
        return;
      }
      if (message === null) {
        this.#end(conn, { reason: 'eof' });
        return;
      }
      error = this.#apply(conn, message);
      this.#notify();
      if (!(await this.#answer(conn, error))) return;
    }
  }

  /** apply checks one message, records it and applies it to the table; returns its ack's error ('' for success). */
  #apply(conn: Connection, message: ReceivedMessage): string {
    const { data, fds } = message;
    let req: ZdsRequest;
    try {
      req = decodeRequest(data);
    } catch (err) {
      closeFds(fds);
      const reason = err instanceof Error ? err.message : String(err);
      return this.#protocolError('undecodable', `undecodable request: ${short(reason, 200)}`);
    }
    if (req.kind === 'add') return this.#add(conn, req, fds);
    this.#record(req.kind === 'snapshotSent' ? { kind: 'snapshotSent' } : { kind: req.kind, uid: req.uid });
    if (req.kind === 'snapshotSent') this.#snapshots++;
    const uid = req.kind === 'snapshotSent' ? undefined : req.uid;
    if (fds.length > 0) {
      closeFds(fds);
      return this.#protocolError('unexpectedFd', `${req.kind} carries ${fds.length} fd(s); only an add carries one`, req.kind, uid);
    }
    const failure = this.#failures.shift();
    if (failure !== undefined) return failure;
    switch (req.kind) {
      case 'keep':
        // ztunnel keeps what it has; a keep of a uid it never had gives it nothing to keep.
        if (this.#table.has(req.uid)) conn.named.add(req.uid);
        break;
      case 'del':
        this.#drop(req.uid);
        conn.named.delete(req.uid);
        break;
      case 'snapshotSent':
        for (const known of [...this.#table.keys()]) if (!conn.named.has(known)) this.#drop(known);
        break;
    }
    return '';
  }

  #add(conn: Connection, req: Extract<ZdsRequest, { kind: 'add' }>, fds: ReceivedFd[]): string {
    const { uid, workload } = req;
    if (fds.length !== 1) {
      closeFds(fds);
      this.#record({ kind: 'add', uid, workload, netnsId: undefined });
      return fds.length === 0
        ? this.#protocolError('missingFd', 'add carries no netns fd', 'add', uid)
        : this.#protocolError('extraFds', `add carries ${fds.length} fds; it must carry exactly one`, 'add', uid);
    }
    const fd = fds[0]!;
    let netns: Netns;
    try {
      netns = fd.toNetns(`zds add ${short(uid)}`);
    } catch (err) {
      fd.close();
      this.#record({ kind: 'add', uid, workload, netnsId: undefined });
      const reason = err instanceof Error ? err.message : String(err);
      return this.#protocolError('notNetns', `add's fd is not a network namespace: ${short(reason, 200)}`, 'add', uid);
    }
    this.#record({ kind: 'add', uid, workload, netnsId: netns.id });
    const failure = this.#failures.shift();
    if (failure !== undefined) {
      netns.close();
      return failure;
    }
    this.#table.get(uid)?.close();
    this.#table.set(uid, netns);
    this.#workloads.set(uid, Object.freeze({ uid, workload, netnsId: netns.id }));
    conn.named.add(uid);
    return '';
  }

  #drop(uid: string): void {
    const netns = this.#table.get(uid);
    if (!netns) return;
    netns.close();
    this.#table.delete(uid);
    this.#workloads.delete(uid);
  }

  #record(message: FakeZtunnelMessage): void {
    if (message.kind === 'add') Object.freeze(message.workload);
    this.#received.push(Object.freeze(message));
  }

  #protocolError(kind: FakeZtunnelProtocolErrorKind, message: string, request?: ZdsRequest['kind'], uid?: string): string {
    const text = uid === undefined ? message : `${message} (uid '${short(uid)}')`;
    this.#protocolErrors.push(Object.freeze({ kind, message: text, request, uid }));
    return text;
  }

  /** answer sends the ack, after a scripted delay; false when the connection ended first or the send failed. */
  async #answer(conn: Connection, error: string): Promise<boolean> {
    if (!conn.open) return false;
    const delay = this.#delays.shift();
    if (delay !== undefined) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        conn.cancelDelay = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      conn.cancelDelay = undefined;
    }
    if (!conn.open) return false;
    try {
      await conn.socket.send(ackBytes(error), { timeoutMs: this.#timeoutMs });
      return true;
    } catch (err) {
      this.#end(conn, { reason: 'error', error: err instanceof Error ? err : new Error(String(err)) });
      return false;
    }
  }

  #notify(): void {
    for (const waiter of [...this.#waiters]) waiter.settle();
  }

  #waitOptions(options: FakeZtunnelWaitOptions | undefined): { timeoutMs: number; after: number | undefined } {
    const opts = checkOptions<FakeZtunnelWaitOptions>('options', options);
    const timeoutMs =
      opts.timeoutMs === undefined ? this.#timeoutMs : checkInteger('options.timeoutMs', opts.timeoutMs, 0, MAX_TIMEOUT_MS);
    const after = opts.after === undefined ? undefined : checkInteger('options.after', opts.after, 0, Number.MAX_SAFE_INTEGER);
    return { timeoutMs, after };
  }

  /**
   * wait settles at once when check is satisfied now, and otherwise after each applied message until it is, the
   * deadline passes or the fake is closed.
   */
  #wait<T>(timeoutMs: number, check: (resolve: (value: T) => void) => boolean, missing: () => string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        settle: () => {
          let done: boolean;
          try {
            done = check((value) => {
              finish();
              resolve(value);
            });
          } catch (err) {
            finish();
            reject(err);
            return true;
          }
          return done;
        },
        fail: (err) => {
          finish();
          reject(err);
        },
      };
      const finish = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(waiter);
      };
      if (waiter.settle()) return;
      if (this.#closed) {
        reject(this.#closedError());
        return;
      }
      this.#waiters.add(waiter);
      timer = setTimeout(() => {
        finish();
        reject(new PodnetError(`FakeZtunnel for '${this.path}': ${missing()} within ${timeoutMs} ms`, 'ERR_FAKE_ZTUNNEL_TIMEOUT'));
      }, timeoutMs);
    });
  }

  #closedError(): PodnetError {
    return new PodnetError(`FakeZtunnel for '${this.path}' is closed`, 'ERR_FAKE_ZTUNNEL_CLOSED');
  }
}

/**
 * helloBytes encodes the hello. proto3 leaves a zero version out, and an empty message is what a SOCK_SEQPACKET
 * reader takes for EOF: NOT_USED is sent with its field written out (tag 1 varint, value 0), which decodes the same.
 */
function helloBytes(version: number): Uint8Array {
  const bytes = encodeHello(version);
  return bytes.length > 0 ? bytes : Uint8Array.of(0x08, 0x00);
}

/** ackBytes encodes an ack; an error text too long for one (a uid near the limit in it) is cut to fit. */
function ackBytes(error: string): Uint8Array {
  try {
    return encodeAck(error);
  } catch {
    return encodeAck(short(error, 200));
  }
}
