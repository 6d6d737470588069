/**
 * ZdsConnection: one node proxy's connection to the ZtunnelServer. Requests go out one at a time, each waiting for
 * its ack before the next is sent (the proxy answers in order and nothing in an ack says what it answers). One read
 * is always pending, so a proxy that goes away is seen at once (EOF) and a proxy that speaks unasked is a protocol
 * error, without polling.
 */
import { PodnetSystemError } from '../errors.js';
import type { Logger } from '../logger.js';
import { receivePrepared, sendPrepared, type SeqpacketSocket } from '../unix/socket.js';
import { ProxyAckError, ProxyError, type ProxyErrorContext } from './errors.js';
import { decodeHello, decodeResponse, ZDS_READ_BUFFER_BYTES } from './zds-messages.js';

/** ProxyPeer is who is on the other end of a connection: a number of the server's own and SO_PEERCRED's ids. */
export interface ProxyPeer {
  /** Counts up from 1 per server, in accept order. */
  readonly id: number;
  readonly pid: number;
  readonly uid: number;
  readonly gid: number;
}

/**
 * DisconnectReason says why a connection ended: the proxy closed it (`eof`), a socket error (`error`), bytes that are
 * not ZDS (`protocol`), a deadline (`timeout`), a hello the server refused (`refused`), or the server closing
 * (`closed`).
 */
export interface DisconnectReason {
  /** What ended the connection. */
  reason: 'eof' | 'error' | 'protocol' | 'timeout' | 'refused' | 'closed';
  /** The error behind it, for every reason but `eof` and `closed`. */
  error?: Error;
}

interface Waiter {
  resolve: (ackError: string) => void;
  reject: (err: Error) => void;
  context: ProxyErrorContext;
}

const ETIMEDOUT = -110;

/** asProxyError turns what a socket call threw into a ProxyError about context, keeping it as the cause. */
export function asProxyError(err: unknown, context: ProxyErrorContext): Error {
  if (err instanceof ProxyError) return err;
  if (err instanceof PodnetSystemError) {
    return new ProxyError(err.message, err.code, { ...context, errno: err.errno, syscall: err.syscall }, { cause: err });
  }
  return err instanceof Error ? err : new Error(String(err));
}

export class ZdsConnection {
  readonly peer: ProxyPeer;
  readonly #socket: SeqpacketSocket;
  readonly #timeoutMs: number;
  readonly #log: Logger;
  #tail: Promise<unknown> = Promise.resolve();
  /** Requests made and not yet settled: with none, a request goes out at once instead of a tick later. */
  #inFlight = 0;
  #waiter: Waiter | undefined;
  #ended: DisconnectReason | undefined;
  readonly #endListeners: ((why: DisconnectReason) => void)[] = [];

  constructor(socket: SeqpacketSocket, id: number, timeoutMs: number, log: Logger) {
    this.#socket = socket;
    this.#timeoutMs = timeoutMs;
    this.#log = log;
    this.peer = Object.freeze({ id, ...socket.peerCredentials });
  }

  /** ended tells whether the connection is gone (and why). */
  get ended(): DisconnectReason | undefined {
    return this.#ended;
  }

  /** onEnd registers fn to be called once when the connection ends (at once if it has). */
  onEnd(fn: (why: DisconnectReason) => void): void {
    if (this.#ended) fn(this.#ended);
    else this.#endListeners.push(fn);
  }

  /**
   * hello reads the proxy's ZdsHello within the deadline and resolves its version; then starts the reader. Rejects
   * (and ends the connection) when none comes in time, the proxy closes, or the bytes are not a hello.
   */
  async hello(): Promise<number> {
    try {
      const msg = await this.#socket.receive({ timeoutMs: this.#timeoutMs, maxBytes: ZDS_READ_BUFFER_BYTES, maxFds: 0 });
      if (msg === null) throw new ProxyError('node proxy closed the connection before its hello', 'ERR_PROXY_DISCONNECTED', this.#context());
      const { version } = decodeHello(msg.data);
      void this.#read();
      return version;
    } catch (err) {
      const timedOut = (err as { code?: unknown }).code === 'ETIMEDOUT';
      this.end({ reason: timedOut ? 'timeout' : 'protocol', error: err as Error });
      throw err;
    }
  }

  /**
   * request sends bytes (with fd attached, if given) once every earlier request got its ack, and resolves the ack's
   * error text ('' for success). Rejects with ProxyError: `ERR_PROXY_DISCONNECTED` when the connection is or gets
   * lost, `ETIMEDOUT` when the send or the ack misses the deadline (the connection is then dropped: a late ack would
   * answer the next request), `EPIPE`/`ECONNRESET`, `ERR_PROXY_PROTOCOL`.
   */
  request(bytes: Uint8Array, fd: number | undefined, context: ProxyErrorContext): Promise<string> {
    // With nothing ahead of it the request goes out now, without the queue's bookkeeping: a ZDS round trip is two
    // wake-ups across processes and little else, so every promise and timer on its way shows in it.
    if (this.#inFlight === 0) {
      this.#inFlight++;
      const run = this.#exchange(bytes, fd, context, this.#timeoutMs);
      this.#tail = run;
      return run;
    }
    // The deadline covers the whole call, its wait behind earlier requests included.
    const deadline = performance.now() + this.#timeoutMs;
    const ticket = { started: false, abandoned: false };
    const start = (): Promise<string> => {
      if (ticket.abandoned) {
        this.#inFlight--;
        return Promise.resolve('');
      }
      ticket.started = true;
      // What the call has left of its deadline (at least 1 ms: a request that reached the front is sent).
      return this.#exchange(bytes, fd, context, Math.max(1, Math.ceil(deadline - performance.now())));
    };
    // The request ahead may fail or succeed: this one goes next either way.
    const run = this.#tail.then(start, start);
    this.#inFlight++;
    this.#tail = run;
    return new Promise<string>((resolve, reject) => {
      // Still queued at the deadline: the request is never sent, so the connection is not at fault and stays.
      const timer = setTimeout(() => {
        if (ticket.started) return;
        ticket.abandoned = true;
        const ctx = { ...context, path: this.#socket.path };
        reject(new ProxyError(`${describe(ctx)} waited ${this.#timeoutMs} ms behind earlier requests and was not sent`, 'ETIMEDOUT', { ...ctx, errno: ETIMEDOUT, syscall: 'sendmsg' }));
      }, this.#timeoutMs);
      run.then(
        (value) => {
          clearTimeout(timer);
          if (!ticket.abandoned) resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          if (!ticket.abandoned) reject(err);
        },
      );
    });
  }

  /** requestAcked is request() that turns an ack error into a ProxyAckError. */
  async requestAcked(bytes: Uint8Array, fd: number | undefined, context: ProxyErrorContext): Promise<void> {
    const ackError = await this.request(bytes, fd, context);
    if (ackError !== '') throw new ProxyAckError(ackError, { ...context, path: this.#socket.path });
  }

  /**
   * exchange sends one request (counted in #inFlight by the caller) and settles with its ack, within leftMs. The
   * request leaves the count when it settles, so the next one finds it gone.
   */
  #exchange(bytes: Uint8Array, fd: number | undefined, context: ProxyErrorContext, leftMs: number): Promise<string> {
    const ctx = { ...context, path: this.#socket.path };
    if (this.#ended) {
      this.#inFlight--;
      return Promise.reject(this.#lost(ctx));
    }
    return new Promise<string>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let done = false;
      const settled = (): void => {
        done = true;
        clearTimeout(timer);
        this.#waiter = undefined;
        this.#inFlight--;
      };
      // The waiter is in place before the send: an ack may be read before send() resolves.
      this.#waiter = {
        resolve: (ackError) => {
          settled();
          resolve(ackError);
        },
        reject: (err) => {
          settled();
          reject(err);
        },
        context: ctx,
      };
      // bytes come from encodeRequest and fd from a Netns handle of the server's own: nothing to check again. A
      // failed send ends the connection, which rejects the waiter with it.
      sendPrepared(this.#socket, bytes, fd === undefined ? [] : [fd], leftMs).catch((err: unknown) => {
        const failure = asProxyError(err, ctx);
        this.end({ reason: (err as { code?: unknown }).code === 'ETIMEDOUT' ? 'timeout' : 'error', error: failure });
      });
      // Armed after the send, while the proxy reads the request (and only if nothing settled the request yet).
      if (done) return;
      timer = setTimeout(() => {
        const err = new ProxyError(`node proxy sent no ack for ${describe(ctx)} within ${this.#timeoutMs} ms`, 'ETIMEDOUT', {
          ...ctx,
          errno: ETIMEDOUT,
          syscall: 'recvmsg',
        });
        this.end({ reason: 'timeout', error: err });
      }, leftMs);
    });
  }

  async #read(): Promise<void> {
    for (;;) {
      let msg;
      try {
        msg = await receivePrepared(this.#socket, ZDS_READ_BUFFER_BYTES, 0, -1);
      } catch (err) {
        if (this.#ended) return;
        const code = (err as { code?: unknown }).code;
        const protocol = code === 'ERR_UNIX_TRUNCATED' || code === 'ERR_UNIX_CTRUNC';
        this.end({ reason: protocol ? 'protocol' : 'error', error: err as Error });
        return;
      }
      if (msg === null) {
        this.end({ reason: 'eof' });
        return;
      }
      const waiter = this.#waiter;
      if (!waiter) {
        const err = new ProxyError('node proxy sent a message nobody asked for', 'ERR_PROXY_PROTOCOL', this.#context());
        this.end({ reason: 'protocol', error: err });
        return;
      }
      this.#waiter = undefined;
      try {
        waiter.resolve(decodeResponse(msg.data).ack.error);
      } catch (err) {
        const failure = new ProxyError(`node proxy answered ${describe(waiter.context)} with ${(err as Error).message}`, 'ERR_PROXY_PROTOCOL', waiter.context, {
          cause: err,
        });
        waiter.reject(failure);
        this.end({ reason: 'protocol', error: failure });
        return;
      }
    }
  }

  /** end closes the connection; the request waiting for an ack, if any, rejects with the reason's error. */
  end(why: DisconnectReason): void {
    if (this.#ended) return;
    this.#ended = why;
    this.#socket.close();
    const waiter = this.#waiter;
    this.#waiter = undefined;
    // A timeout or failed send is already about the waiting request; anything else lost it.
    if (waiter) waiter.reject(why.error instanceof ProxyError && why.error.request !== undefined ? why.error : this.#lost(waiter.context, why.error));
    if (why.reason !== 'closed' && why.reason !== 'eof') {
      this.#log.warn(`node proxy connection dropped: ${why.error?.message ?? why.reason}`, { proxy: this.peer.id, reason: why.reason });
    }
    for (const fn of this.#endListeners.splice(0)) fn(why);
  }

  #context(): ProxyErrorContext {
    return { path: this.#socket.path };
  }

  #lost(ctx: ProxyErrorContext, cause?: Error): ProxyError {
    return new ProxyError(`node proxy connection was lost before the ack of ${describe(ctx)}`, 'ERR_PROXY_DISCONNECTED', ctx, {
      cause: cause ?? this.#ended?.error,
    });
  }
}

function describe(ctx: ProxyErrorContext): string {
  return `${ctx.request ?? 'a request'}${ctx.uid === undefined ? '' : ` of uid '${ctx.uid}'`}`;
}
