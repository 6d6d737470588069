/** SeqpacketSocket: one connection of a unix SOCK_SEQPACKET socket, with fds passed as SCM_RIGHTS. */
import { withCallerStack } from '../errors.js';
import { native, type RawSeqpacketSocketHandle } from '../native.js';
import { checkInteger, checkOptions } from '../validate.js';
import { UnixEndpoint } from './endpoint.js';
import {
  checkData,
  checkFds,
  checkSocketPath,
  checkTimeout,
  SEQPACKET_MAX_BYTES,
  type SeqpacketConnectOptions,
  type SeqpacketReceiveOptions,
  type SeqpacketSendOptions,
} from './options.js';
import { adoptReceivedFd, type ReceivedFd } from './received-fd.js';

/** PeerCredentials are the peer's process, user and group (SO_PEERCRED), read when the connection was made. */
export interface PeerCredentials {
  /** pid is the peer's process id, in this process's pid namespace (0 when the peer's is not visible from it). */
  readonly pid: number;
  /** uid is the peer's effective user id. */
  readonly uid: number;
  /** gid is the peer's effective group id. */
  readonly gid: number;
}

/** ReceivedMessage is one message: its bytes and the fds that came with it (owned by the receiver). */
export interface ReceivedMessage {
  data: Buffer;
  fds: ReceivedFd[];
}

const DEFAULT_MAX_BYTES = 1024;
const DEFAULT_MAX_FDS = 1;

let wrap: (handle: RawSeqpacketSocketHandle, path: string) => SeqpacketSocket;
let live: (socket: SeqpacketSocket) => RawSeqpacketSocketHandle;

/**
 * SeqpacketSocket is a connected unix SOCK_SEQPACKET socket: each send() is one message, each receive() takes one,
 * boundaries kept. Sends go out in call order and receives are served in call order, each with its own deadline.
 * Waiting is event-driven on the libuv loop (no threads); a pending operation keeps the process alive, an idle
 * socket does not. close() it (or `using` it); one dropped unclosed is closed when collected.
 */
export class SeqpacketSocket extends UnixEndpoint<RawSeqpacketSocketHandle> {
  /** peerCredentials are the peer's pid, uid and gid (SO_PEERCRED), read when the connection was made. */
  readonly peerCredentials: PeerCredentials;
  /** Set once receive() resolved the end of the stream: later calls resolve null without reading. */
  #ended = false;

  static {
    wrap = (handle, path) => new SeqpacketSocket(handle, path);
    live = (socket) => socket.liveHandle();
  }

  private constructor(handle: RawSeqpacketSocketHandle, path: string) {
    // path is the socket file: the one connected to, or for an accepted connection the server's.
    super(handle, path, 'seqpacket socket');
    // Read by the addon at connect and accept, before any handle reaches here.
    this.peerCredentials = Object.freeze(handle.peerCredentials()!);
  }

  /**
   * SeqpacketSocket.connect connects to a SeqpacketServer (or any SOCK_SEQPACKET listener) at path. Rejects with
   * InvalidArgumentError for bad arguments, a PodnetSystemError naming the path (`ENOENT`, `ECONNREFUSED`,
   * `EACCES`, `EPROTOTYPE` for a listener of another type, ...), `ETIMEDOUT` when the server's backlog stayed full
   * until the deadline.
   */
  static async connect(path: string, options?: SeqpacketConnectOptions): Promise<SeqpacketSocket> {
    const caller = new Error('connect');
    checkSocketPath('path', path);
    const opts = checkOptions<SeqpacketConnectOptions>('options', options);
    const timeoutMs = checkTimeout('options.timeoutMs', opts.timeoutMs);
    const handle = new native.SeqpacketSocketHandle();
    try {
      await withCallerStack(handle.connect(path, timeoutMs), caller);
    } catch (err) {
      handle.close();
      throw err;
    }
    return wrap(handle, path);
  }

  /**
   * send sends data (1..65536 bytes) as one message with options.fds attached. The fds stay the caller's (they are
   * duplicated if the message has to wait, so they may be closed once send() returned). Rejects with
   * InvalidArgumentError for bad arguments (a closed or non-integer fd, ...), a PodnetSystemError with syscall
   * `sendmsg`: `EPIPE` / `ECONNRESET` when the peer is gone, `ETIMEDOUT` at the deadline, `EMSGSIZE` for a message
   * larger than the socket buffer; `ERR_UNIX_CLOSED` when the socket is or gets closed first.
   */
  async send(data: Uint8Array, options?: SeqpacketSendOptions): Promise<void> {
    const caller = new Error('send');
    const bytes = checkData('data', data);
    const opts = checkOptions<SeqpacketSendOptions>('options', options);
    const fds = checkFds('options.fds', opts.fds);
    const timeoutMs = checkTimeout('options.timeoutMs', opts.timeoutMs);
    return withCallerStack(this.liveHandle().send(bytes, fds, timeoutMs), caller);
  }

  /**
   * receive takes the next message, or resolves null at the end of the stream (the peer closed; later calls resolve
   * null too). Its fds are the caller's to close. Rejects with InvalidArgumentError for bad options,
   * SeqpacketMessageError (`ERR_UNIX_TRUNCATED`, `ERR_UNIX_CTRUNC`) for a message over maxBytes or maxFds (discarded,
   * its fds closed), a PodnetSystemError with syscall `recvmsg` (`ETIMEDOUT` at the deadline, `ECONNRESET`), and
   * `ERR_UNIX_CLOSED` when the socket is or gets closed first.
   */
  async receive(options?: SeqpacketReceiveOptions): Promise<ReceivedMessage | null> {
    const caller = new Error('receive');
    const opts = checkOptions<SeqpacketReceiveOptions>('options', options);
    const timeoutMs = checkTimeout('options.timeoutMs', opts.timeoutMs);
    const maxBytes = opts.maxBytes === undefined ? DEFAULT_MAX_BYTES : checkInteger('options.maxBytes', opts.maxBytes, 1, SEQPACKET_MAX_BYTES);
    const maxFds = opts.maxFds === undefined ? DEFAULT_MAX_FDS : checkInteger('options.maxFds', opts.maxFds, 0, native.unixConstants.maxFds);
    if (this.#ended) return null;
    const raw = await withCallerStack(this.liveHandle().receive(maxBytes, maxFds, timeoutMs), caller);
    if (raw === null) {
      // The end is final: nothing read after it could be told apart from a new stream's.
      this.#ended = true;
      return null;
    }
    return { data: raw.data, fds: raw.fds.map(adoptReceivedFd) };
  }
}

/**
 * sendPrepared is send() for podnet's own callers (the ZDS connection), whose bytes and fds it made and checked
 * itself: no option checks and no caller stack, which cost a new Error and an fcntl per message on the path of a
 * ZDS round trip. It rejects as send() does.
 */
export function sendPrepared(socket: SeqpacketSocket, bytes: Uint8Array, fds: number[], timeoutMs: number): Promise<void> {
  try {
    return live(socket).send(bytes, fds, timeoutMs);
  } catch (err) {
    return Promise.reject(err); // a closed socket: a rejection, as from send()
  }
}

/**
 * receivePrepared is receive() for podnet's own callers, with checked limits and no caller stack (see sendPrepared).
 * A message without fds is the addon's own object, passed on as it came: the ZDS reader takes every ack this way,
 * and a wrapping async step cost each one a promise and a turn of the microtask queue.
 */
export function receivePrepared(socket: SeqpacketSocket, maxBytes: number, maxFds: number, timeoutMs: number): Promise<ReceivedMessage | null> {
  let raw: ReturnType<RawSeqpacketSocketHandle['receive']>;
  try {
    raw = live(socket).receive(maxBytes, maxFds, timeoutMs);
  } catch (err) {
    return Promise.reject(err); // a closed socket: a rejection, as from receive()
  }
  // With maxFds 0 the kernel's fds are refused (ERR_UNIX_CTRUNC), so the addon's fds array is always empty.
  if (maxFds === 0) return raw as unknown as Promise<ReceivedMessage | null>;
  return raw.then((m) => (m === null ? null : { data: m.data, fds: m.fds.map(adoptReceivedFd) }));
}

/** socketFromHandle wraps a connected handle (an accepted connection); the socket owns it from then on. */
export function socketFromHandle(handle: RawSeqpacketSocketHandle, path: string): SeqpacketSocket {
  return wrap(handle, path);
}
