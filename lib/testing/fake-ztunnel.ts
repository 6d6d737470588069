/**
 * FakeZtunnel: the node proxy's end of ZDS (Istio's ztunnel discovery protocol), for unit tests of the node agent's
 * end without root. It connects to the agent's SOCK_SEQPACKET socket, says hello, then only answers: every request
 * is checked as ztunnel checks it (one network namespace fd on an add, none on anything else, a decodable message
 * that fits ztunnel's 1024-byte buffer), applied to a table of workloads as ztunnel applies it, and acked. Faults
 * (ack errors, slow acks, a dropped connection) are scripted by the test.
 */
import { PodnetError } from '../errors.js';
import { ZDS_READ_BUFFER_BYTES, ZdsVersion, encodeAck } from '../proxy/zds-messages.js';
import { SeqpacketMessageError } from '../unix/errors.js';
import { SeqpacketSocket, type ReceivedMessage } from '../unix/socket.js';
import { checkInteger, checkOptions, invalidType, invalidValue } from '../validate.js';
import { WorkloadTable } from './fake-ztunnel/table.js';
import type {
  FakeZtunnelDisconnect,
  FakeZtunnelMessage,
  FakeZtunnelOptions,
  FakeZtunnelProtocolError,
  FakeZtunnelWaitOptions,
  FakeZtunnelWorkload,
} from './fake-ztunnel/types.js';
import { Waiters } from './fake-ztunnel/waiters.js';
import {
  CountedQueue,
  DEFAULT_TIMEOUT_MS,
  MAX_COUNT,
  MAX_FDS,
  MAX_TIMEOUT_MS,
  ackBytes,
  closeFds,
  helloBytes,
  label,
} from './fake-ztunnel/wire.js';

export type {
  FakeZtunnelDisconnect,
  FakeZtunnelMessage,
  FakeZtunnelOptions,
  FakeZtunnelProtocolError,
  FakeZtunnelProtocolErrorKind,
  FakeZtunnelWaitOptions,
  FakeZtunnelWorkload,
} from './fake-ztunnel/types.js';

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
  readonly #table = new WorkloadTable();
  readonly #delays = new CountedQueue<number>();
  readonly #waiters = new Waiters();
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
    return this.#table.workloads;
  }

  /** received lists every request that decoded, in order, over all connections (applied or refused). */
  get received(): readonly FakeZtunnelMessage[] {
    return this.#table.received;
  }

  /** snapshots counts the SnapshotSent requests received (applied or refused), over all connections. */
  get snapshots(): number {
    return this.#table.snapshots;
  }

  /** protocolErrors lists what the agent did wrong, in order; each was answered with an ack error. */
  get protocolErrors(): readonly FakeZtunnelProtocolError[] {
    return this.#table.protocolErrors;
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
    return this.#waiters.wait(timeoutMs, (resolve) => {
      while (next < this.#table.received.length) {
        const message = this.#table.received[next++]!;
        if (predicate(message)) {
          resolve(message);
          return true;
        }
      }
      return false;
    }, () => {
      const seen = this.#table.received.slice(after ?? 0).map(label).join(', ') || 'none';
      return this.#timeoutError(`no matching message (received from index ${after ?? 0}: ${seen})`, timeoutMs);
    }, () => this.#closedOrNot());
  }

  /**
   * waitForSnapshot resolves with the snapshot count once more than options.after SnapshotSent were received
   * (default `snapshots` at the call: the next one), once that snapshot was applied and before its ack is sent.
   * Throws InvalidArgumentError for bad options; rejects with `ERR_FAKE_ZTUNNEL_TIMEOUT` at the deadline and
   * `ERR_FAKE_ZTUNNEL_CLOSED` when the fake is or gets closed first.
   */
  waitForSnapshot(options?: FakeZtunnelWaitOptions): Promise<number> {
    const { timeoutMs, after } = this.#waitOptions(options);
    const target = (after ?? this.#table.snapshots) + 1;
    return this.#waiters.wait(timeoutMs, (resolve) => {
      if (this.#table.snapshots < target) return false;
      resolve(this.#table.snapshots);
      return true;
    }, () => this.#timeoutError(`no SnapshotSent number ${target} (${this.#table.snapshots} received)`, timeoutMs), () => this.#closedOrNot());
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
    this.#table.failures.push(error, checkInteger('count', count, 1, MAX_COUNT));
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
    this.#table.clear();
    this.#delays.clear();
    this.#waiters.failAll(this.#closedError());
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** toString names the socket path, the workload count and whether the fake is connected. */
  toString(): string {
    return `FakeZtunnel(${this.path}, ${this.#table.workloads.size} workloads, ${this.connected ? 'connected' : 'disconnected'})`;
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
          ? this.#table.protocolError('tooLarge', `message of ${err.size} bytes is over the ${ZDS_READ_BUFFER_BYTES}-byte buffer`)
          : this.#table.protocolError('extraFds', `message carries more than ${MAX_FDS} fds`);
        this.#waiters.notify();
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
      error = this.#table.apply(conn.named, message);
      this.#waiters.notify();
      if (!(await this.#answer(conn, error))) return;
    }
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

  #waitOptions(options: FakeZtunnelWaitOptions | undefined): { timeoutMs: number; after: number | undefined } {
    const opts = checkOptions<FakeZtunnelWaitOptions>('options', options);
    const timeoutMs =
      opts.timeoutMs === undefined ? this.#timeoutMs : checkInteger('options.timeoutMs', opts.timeoutMs, 0, MAX_TIMEOUT_MS);
    const after = opts.after === undefined ? undefined : checkInteger('options.after', opts.after, 0, Number.MAX_SAFE_INTEGER);
    return { timeoutMs, after };
  }

  #timeoutError(missing: string, timeoutMs: number): PodnetError {
    return new PodnetError(`FakeZtunnel for '${this.path}': ${missing} within ${timeoutMs} ms`, 'ERR_FAKE_ZTUNNEL_TIMEOUT');
  }

  #closedOrNot(): PodnetError | undefined {
    return this.#closed ? this.#closedError() : undefined;
  }

  #closedError(): PodnetError {
    return new PodnetError(`FakeZtunnel for '${this.path}' is closed`, 'ERR_FAKE_ZTUNNEL_CLOSED');
  }
}
