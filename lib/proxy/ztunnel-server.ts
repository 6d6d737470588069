/**
 * ZtunnelServer: the node agent's end of ZDS. The node proxy (ztunnel) connects to it, says hello, gets a snapshot of
 * the enrolled workloads (each pod's netns fd attached), and from then on is told of each pod added and removed.
 */
import { EventEmitter } from 'node:events';

import { Netns } from '../netns.js';
import { toLogger, type Logger } from '../logger.js';
import { SeqpacketServer } from '../unix/server.js';
import type { SeqpacketSocket } from '../unix/socket.js';
import { checkArray, checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { asProxyError, ZdsConnection, type DisconnectReason, type ProxyPeer } from './connection.js';
import { ProxyError } from './errors.js';
import { encodeAs, encodeRequest, ZdsVersion, type ZdsWorkloadInfo } from './zds-messages.js';

/** ZtunnelServerOptions are the options of ZtunnelServer.listen. */
export interface ZtunnelServerOptions {
  /** The socket file (a stale one is replaced), such as `/var/run/ztunnel/ztunnel.sock`. */
  path: string;
  /** Permissions of the socket file (default 0o600: the proxy runs as root). */
  mode?: number;
  /** Deadline in ms of every hello, send and ack (default 5000, ZDS's readWriteDeadline). */
  timeoutMs?: number;
  /**
   * Hold each connection's snapshot until the first replaceWorkloads() (default false). An agent that restarts
   * sets it: a proxy connecting before the agent knows its pods again would otherwise be told to drop them all.
   */
  waitForWorkloads?: boolean;
  logger?: Partial<Logger>;
}

/** NetnsFd is an fd of a network namespace: a Netns, a ReceivedFd, anything with an open `fd`. */
export type NetnsFd = { readonly fd: number };

/** ZtunnelWorkload is one enrolled pod as the snapshot tells it: with a netns an Add, without one a Keep. */
export interface ZtunnelWorkload {
  uid: string;
  workload: ZdsWorkloadInfo;
  /** The pod's network namespace; absent for a pod whose namespace is gone (the proxy keeps what it has). */
  netns?: NetnsFd | undefined;
}

/** EnrolledWorkload is what the server holds for one workload (the netns handle is its own). */
export interface EnrolledWorkload {
  /** The pod's UID. */
  readonly uid: string;
  /** What the pod is: its name, namespace and service account. */
  readonly workload: ZdsWorkloadInfo;
  /** The Netns.id of the workload's namespace, or undefined for a Keep-only one. */
  readonly netnsId: string | undefined;
}

/** SnapshotOutcome counts what one snapshot carried. */
export interface SnapshotOutcome {
  added: number;
  kept: number;
  /** Adds the proxy acked with an error (logged; the proxy retries on its side). */
  failed: string[];
}

/**
 * ZtunnelServerEvents are the events of a ZtunnelServer. They are emitted from inside the server's own work (a connection's start, its end,
 * close()): a listener that throws is logged as an error and does not stop that work.
 */
export interface ZtunnelServerEvents {
  /** A proxy said hello with version V1 (its snapshot follows). */
  connected: [ProxyPeer];
  /** A connection ended (also one whose hello was refused). */
  disconnected: [ProxyPeer, DisconnectReason];
  /** A proxy acked SnapshotSent. */
  snapshotSent: [ProxyPeer, SnapshotOutcome];
}

interface Entry {
  workload: ZdsWorkloadInfo;
  netns: Netns | undefined;
}

const ERRNO_RETRY_MS = 100;
/** The most connections kept while they have not said hello (ztunnel connects once; the reference takes 5 a second). */
const MAX_AWAITING_HELLO = 16;

function checkUid(uid: unknown): string {
  return checkString('uid', uid);
}


/** ownNetns takes a handle of the server's own on netns, refusing anything that is not an open network namespace. */
function ownNetns(name: string, netns: unknown): Netns {
  if (netns instanceof Netns) return netns.reopen();
  if (typeof netns !== 'object' || netns === null || !('fd' in netns)) throw invalidType(name, 'a Netns or an object with an fd', netns);
  let fd: unknown;
  try {
    fd = (netns as NetnsFd).fd;
  } catch {
    throw invalidValue(name, 'an open network namespace', netns);
  }
  checkInteger(`${name}.fd`, fd, 0, 0x7fffffff);
  try {
    return Netns.duplicate(fd as number);
  } catch (err) {
    // Only a closed fd or one of something else is a bad argument; running out of fds (EMFILE, ENFILE, ENOMEM) is
    // the process's trouble, thrown as the system error it is.
    const code = (err as { code?: string }).code;
    if (code !== 'EBADF' && code !== 'ERR_NOT_NETNS') throw err;
    throw invalidValue(name, 'an open network namespace fd', `fd ${fd as number} (${code})`);
  }
}

/**
 * ZtunnelServer listens for node proxies (ztunnel) on a unix SOCK_SEQPACKET socket and speaks ZDS V1 with them. It
 * keeps the table of enrolled workloads, each with a netns handle of its own, and sends it as the snapshot to every
 * proxy that connects. close() it (or `await using` it).
 */
export class ZtunnelServer extends EventEmitter<ZtunnelServerEvents> implements AsyncDisposable {
  /** path is the socket file. */
  readonly path: string;
  readonly #server: SeqpacketServer;
  readonly #timeoutMs: number;
  readonly #log: Logger;
  readonly #table = new Map<string, Entry>();
  readonly #conns: ZdsConnection[] = [];
  readonly #pending = new Set<ZdsConnection>();
  /**
   * The uids addWorkload sent to a connection whose snapshot is still being sent. The snapshot's items were read
   * from the table when it began, and a connection sends in order: an item sent after such an add would undo it.
   */
  readonly #addedDuringSnapshot = new Map<ZdsConnection, Set<string>>();
  /** Connections that have not said hello yet: each holds an fd until its hello deadline, so there are few. */
  readonly #awaitingHello = new Set<ZdsConnection>();
  /**
   * Connections whose snapshot is being sent, with the 'disconnected' event of one that ended meanwhile: it is told
   * after the snapshot's own event, so a connection's events come in order.
   */
  readonly #snapshotting = new Map<ZdsConnection, (() => void) | undefined>();
  #nextId = 1;
  #closed = false;
  #ready: Promise<void>;
  #markReady: () => void = () => undefined;
  #accepting: Promise<void>;

  private constructor(server: SeqpacketServer, timeoutMs: number, waitForWorkloads: boolean, log: Logger) {
    super();
    this.path = server.path;
    this.#server = server;
    this.#timeoutMs = timeoutMs;
    this.#log = log;
    this.#ready = waitForWorkloads ? new Promise((resolve) => (this.#markReady = resolve)) : Promise.resolve();
    this.#accepting = this.#acceptLoop();
  }

  /**
   * ZtunnelServer.listen starts listening at options.path. Rejects with InvalidArgumentError for bad options and a
   * PodnetSystemError naming the path as SeqpacketServer.listen does (`EADDRINUSE` when a server listens there, ...).
   */
  static async listen(options: ZtunnelServerOptions): Promise<ZtunnelServer> {
    const o = checkOptions<ZtunnelServerOptions>('options', options);
    const timeoutMs = o.timeoutMs === undefined ? 5000 : checkInteger('options.timeoutMs', o.timeoutMs, 1, 2 ** 31 - 1);
    if (o.waitForWorkloads !== undefined && typeof o.waitForWorkloads !== 'boolean') {
      throw invalidType('options.waitForWorkloads', 'a boolean', o.waitForWorkloads);
    }
    const log = toLogger(o.logger);
    const server = SeqpacketServer.listen({ path: o.path as string, ...(o.mode === undefined ? {} : { mode: o.mode }) });
    return new ZtunnelServer(server, timeoutMs, o.waitForWorkloads ?? false, log);
  }

  /** connected is the number of live proxy connections that said hello. */
  get connected(): number {
    return this.#conns.length;
  }

  /** proxies are the live connections' peers, oldest first. */
  get proxies(): ProxyPeer[] {
    return this.#conns.map((c) => c.peer);
  }

  /** workloads is the table a connecting proxy gets as its snapshot, in enrolment order. */
  get workloads(): EnrolledWorkload[] {
    return [...this.#table].map(([uid, e]) => ({ uid, workload: { ...e.workload }, netnsId: e.netns?.id }));
  }

  /** closed tells whether close() was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * addWorkload tells the latest connected proxy to take the workload, sending netns's fd with it, and resolves once
   * the proxy acked; the workload then is in every later snapshot. Idempotent: adding a uid again replaces its entry.
   * Throws InvalidArgumentError for a bad uid, workload or netns (not an open network namespace), ZdsError
   * `ERR_ZDS_MESSAGE_TOO_LARGE`; rejects with ProxyError (`ERR_PROXY_NOT_CONNECTED` when no proxy is connected,
   * `ERR_PROXY_DISCONNECTED`, `ETIMEDOUT`, `ERR_PROXY_CLOSED`, ...) or ProxyAckError carrying the proxy's text. A
   * failed add leaves the table as it was.
   */
  async addWorkload(uid: string, workload: ZdsWorkloadInfo, netns: NetnsFd): Promise<void> {
    const bytes = encodeAs('', { kind: 'add', uid: checkUid(uid), workload });
    const info = { name: workload.name, namespace: workload.namespace, serviceAccount: workload.serviceAccount };
    const context = { request: 'add', uid, path: this.path };
    this.#checkOpen(context);
    const own = ownNetns('netns', netns);
    try {
      const conn = this.#conns.at(-1);
      if (!conn) throw new ProxyError(`no node proxy is connected to '${this.path}' to add uid '${uid}'`, 'ERR_PROXY_NOT_CONNECTED', context);
      this.#addedDuringSnapshot.get(conn)?.add(uid);
      await conn.requestAcked(bytes, own.fd, context);
      if (this.#closed) throw closedError(context);
    } catch (err) {
      own.close();
      throw asProxyError(err, context);
    }
    this.#table.get(uid)?.netns?.close();
    this.#table.delete(uid); // re-added at the end: enrolment order
    this.#table.set(uid, { workload: info, netns: own });
    this.#log.info('workload added to the node proxy', { pod: uid, proxy: this.#conns.at(-1)?.peer.id });
  }

  /**
   * delWorkload drops the workload from the table and tells every connected proxy (a draining old one too) to drop
   * it, resolving once each acked; a proxy whose connection is lost meanwhile needs no telling (its next snapshot
   * will not have it). With no proxy connected it only drops the entry. Throws InvalidArgumentError for a bad uid;
   * rejects with ProxyAckError or ProxyError (`ETIMEDOUT`, ...) from the first proxy that failed.
   */
  async delWorkload(uid: string): Promise<void> {
    const bytes = encodeAs('', { kind: 'del', uid: checkUid(uid) });
    const context = { request: 'del', uid, path: this.path };
    this.#checkOpen(context);
    this.#table.get(uid)?.netns?.close();
    this.#table.delete(uid);
    const results = await Promise.allSettled(this.#conns.map((conn) => conn.requestAcked(bytes, undefined, context)));
    for (const r of results) {
      if (r.status === 'rejected' && (r.reason as { code?: unknown }).code !== 'ERR_PROXY_DISCONNECTED') {
        throw asProxyError(r.reason, context);
      }
    }
  }

  /**
   * replaceWorkloads makes workloads the table (taking handles of its own on their namespaces; the caller keeps
   * theirs) without sending anything: the next proxy to connect gets it as its snapshot. It releases connections
   * held by `waitForWorkloads`. Throws InvalidArgumentError naming a bad entry (then nothing changed).
   */
  replaceWorkloads(workloads: readonly ZtunnelWorkload[]): void {
    if (!Array.isArray(workloads)) throw invalidType('workloads', 'an array of workloads', workloads);
    this.#checkOpen({ path: this.path });
    const next = new Map<string, Entry>();
    try {
      checkArray('workloads', workloads, 'an array of workloads', (w, _, i) => {
        const e = checkOptions<ZtunnelWorkload>(`workloads[${i}]`, w);
        const uid = checkString(`workloads[${i}].uid`, e.uid);
        const w0 = e.workload as ZdsWorkloadInfo;
        encodeAs(`workloads[${i}].`, { kind: 'add', uid, workload: w0 });
        if (next.has(uid)) throw invalidValue(`workloads[${i}].uid`, 'a uid named once', uid);
        const workload = { name: w0.name, namespace: w0.namespace, serviceAccount: w0.serviceAccount };
        next.set(uid, { workload, netns: e.netns === undefined ? undefined : ownNetns(`workloads[${i}].netns`, e.netns) });
      });
    } catch (err) {
      for (const e of next.values()) e.netns?.close();
      throw err;
    }
    for (const e of this.#table.values()) e.netns?.close();
    this.#table.clear();
    for (const [uid, e] of next) this.#table.set(uid, e);
    this.#markReady();
  }

  /**
   * close stops listening and ends every connection (waiting requests reject with `ERR_PROXY_DISCONNECTED`), and
   * closes the table's netns handles. Calling it again does nothing.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#server.close();
    for (const conn of [...this.#pending, ...this.#conns]) conn.end({ reason: 'closed' });
    for (const e of this.#table.values()) e.netns?.close();
    this.#table.clear();
    this.#markReady();
    await this.#accepting;
  }

  /** Symbol.asyncDispose is close(), for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** toString names the socket file. */
  override toString(): string {
    return `ZtunnelServer(${this.path})`;
  }

  /**
   * #tell emits an event. A listener's throw would otherwise end the work that emitted it half way: a snapshot
   * never sent (the proxy waiting for it), close() leaving connections open, an unhandled rejection.
   */
  #tell(event: keyof ZtunnelServerEvents, emit: () => void): void {
    try {
      emit();
    } catch (err) {
      this.#log.error(`a '${event}' listener threw: ${err instanceof Error ? err.message : String(err)}`, { error: err });
    }
  }

  #checkOpen(context: { request?: string; uid?: string; path: string }): void {
    if (this.#closed) throw closedError(context);
  }

  async #acceptLoop(): Promise<void> {
    while (!this.#closed) {
      let socket: SeqpacketSocket;
      try {
        socket = await this.#server.accept();
      } catch (err) {
        if (this.#closed) return;
        // EMFILE and the like: the connection waits in the backlog until fds are free again.
        this.#log.error(`accepting a node proxy connection failed: ${(err as Error).message}`, {});
        await new Promise((resolve) => setTimeout(resolve, ERRNO_RETRY_MS));
        continue;
      }
      void this.#serve(new ZdsConnection(socket, this.#nextId++, this.#timeoutMs, this.#log));
    }
  }

  async #serve(conn: ZdsConnection): Promise<void> {
    const oldest = this.#awaitingHello.size >= MAX_AWAITING_HELLO ? this.#awaitingHello.values().next().value : undefined;
    if (oldest !== undefined) {
      // A node has one proxy: this many silent connections are a misbehaving peer. The oldest goes, so that a proxy
      // connecting now is never locked out by them.
      this.#log.warn(`${MAX_AWAITING_HELLO} connections have not said hello; closing the oldest`, { proxy: oldest.peer.id, pid: oldest.peer.pid });
      oldest.end({ reason: 'refused', error: new ProxyError('too many connections without a hello', 'ERR_PROXY_PROTOCOL', { path: this.path }) });
    }
    this.#pending.add(conn);
    this.#awaitingHello.add(conn);
    conn.onEnd((why) => {
      this.#pending.delete(conn);
      this.#awaitingHello.delete(conn);
      const i = this.#conns.indexOf(conn);
      if (i >= 0) this.#conns.splice(i, 1);
      const tell = () => this.#tell('disconnected', () => this.emit('disconnected', conn.peer, why));
      if (this.#snapshotting.has(conn)) this.#snapshotting.set(conn, tell);
      else tell();
    });
    let version: number;
    try {
      version = await conn.hello();
    } catch (err) {
      this.#log.warn(`node proxy sent no valid hello: ${(err as Error).message}`, { proxy: conn.peer.id });
      return;
    } finally {
      this.#awaitingHello.delete(conn);
    }
    if (version !== ZdsVersion.V1) {
      this.#log.error(`node proxy announced ZDS version ${version}; only V1 (1) is spoken`, { proxy: conn.peer.id, pid: conn.peer.pid });
      conn.end({ reason: 'refused', error: new ProxyError(`ZDS version ${version} is not V1`, 'ERR_PROXY_PROTOCOL', { path: this.path }) });
      return;
    }
    await this.#ready;
    if (conn.ended || this.#closed) return;
    this.#pending.delete(conn);
    this.#conns.push(conn);
    this.#addedDuringSnapshot.set(conn, new Set());
    this.#log.info('node proxy connected', { proxy: conn.peer.id, pid: conn.peer.pid });
    this.#tell('connected', () => this.emit('connected', conn.peer));
    await this.#sendSnapshot(conn);
  }

  /** Sends the table as it is now, one acked message after another, then SnapshotSent. */
  async #sendSnapshot(conn: ZdsConnection): Promise<void> {
    this.#snapshotting.set(conn, undefined);
    try {
      await this.#sendSnapshotItems(conn);
    } finally {
      const disconnected = this.#snapshotting.get(conn);
      this.#snapshotting.delete(conn);
      disconnected?.();
    }
  }

  async #sendSnapshotItems(conn: ZdsConnection): Promise<void> {
    const outcome: SnapshotOutcome = { added: 0, kept: 0, failed: [] };
    // Own handles for the snapshot's length: a del meanwhile closes the table's, not these.
    const items = [...this.#table].map(([uid, e]) => ({ uid, workload: e.workload, netns: e.netns?.reopen() }));
    const added = this.#addedDuringSnapshot.get(conn) ?? new Set<string>();
    try {
      for (const item of items) {
        // A del since the snapshot began was queued before this message: sending the add now would undo it. So
        // would an add of the uid to this connection (a 'connected' listener's, or one racing the reconnect): it
        // carries the newer entry, and it is queued ahead of this message.
        if (this.#table.get(item.uid)?.workload !== item.workload || added.has(item.uid)) continue;
        const context = { request: item.netns ? 'add' : 'keep', uid: item.uid, path: this.path };
        const bytes = item.netns
          ? encodeRequest({ kind: 'add', uid: item.uid, workload: item.workload })
          : encodeRequest({ kind: 'keep', uid: item.uid });
        const ackError = await conn.request(bytes, item.netns?.fd, context);
        if (ackError !== '') {
          outcome.failed.push(item.uid);
          this.#log.warn(`node proxy refused the snapshot's ${context.request} of uid '${item.uid}': ${ackError}`, { pod: item.uid, proxy: conn.peer.id });
        } else if (item.netns) outcome.added++;
        else outcome.kept++;
      }
      const ackError = await conn.request(encodeRequest({ kind: 'snapshotSent' }), undefined, { request: 'snapshotSent', path: this.path });
      if (ackError !== '') this.#log.warn(`node proxy refused SnapshotSent: ${ackError}`, { proxy: conn.peer.id });
    } catch {
      return; // the connection ended and said why (disconnected)
    } finally {
      for (const item of items) item.netns?.close();
      this.#addedDuringSnapshot.delete(conn);
    }
    this.#tell('snapshotSent', () => this.emit('snapshotSent', conn.peer, outcome));
  }
}

function closedError(context: { request?: string; uid?: string; path: string }): ProxyError {
  return new ProxyError(`ZtunnelServer '${context.path}' is closed`, 'ERR_PROXY_CLOSED', context);
}
