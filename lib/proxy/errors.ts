/**
 * Errors of the node proxy protocol (ZDS): bytes from a peer that are not the message they should be, and messages
 * too large for the peer's read buffer.
 */
import { PodnetError } from '../errors.js';

/** ZdsErrorCode is a code a ZdsError carries. */
export type ZdsErrorCode = 'ERR_ZDS_PROTOCOL' | 'ERR_ZDS_MESSAGE_TOO_LARGE';

/** ZdsErrorContext is what a ZdsError reports besides its message. */
export interface ZdsErrorContext {
  /** The protobuf message the bytes were meant to be, such as `istio.workload.zds.WorkloadResponse`. */
  messageType: string;
  /** ERR_ZDS_MESSAGE_TOO_LARGE: the encoded size in bytes. */
  size?: number;
  /** ERR_ZDS_MESSAGE_TOO_LARGE: the largest size allowed. */
  limit?: number;
  /** ERR_ZDS_MESSAGE_TOO_LARGE: the request's longest string field, such as `workload.name`. */
  field?: string;
}

/**
 * ZdsError is a ZDS message that cannot be used: `code` is `ERR_ZDS_PROTOCOL` for bytes from a peer that do not
 * decode as the expected message (the protobuf decoder's error is the `cause`), or `ERR_ZDS_MESSAGE_TOO_LARGE` for
 * a message that would not fit the 1024-byte buffer both sides read into, with its `size` and the `limit`.
 */
export class ZdsError extends PodnetError {
  declare readonly code: ZdsErrorCode;
  /** The protobuf message the bytes were meant to be. */
  readonly messageType: string;
  /** ERR_ZDS_MESSAGE_TOO_LARGE: the encoded size in bytes. */
  readonly size: number | undefined;
  /** ERR_ZDS_MESSAGE_TOO_LARGE: the largest size allowed. */
  readonly limit: number | undefined;
  /** ERR_ZDS_MESSAGE_TOO_LARGE: the request's longest string field. */
  readonly field: string | undefined;

  constructor(message: string, code: ZdsErrorCode, context: ZdsErrorContext, options?: { cause?: unknown }) {
    super(message, code, options);
    this.messageType = context.messageType;
    this.size = context.size;
    this.limit = context.limit;
    this.field = context.field;
  }
}

/** isZdsProtocolError tells whether err means a peer sent bytes that are not the expected ZDS message. */
export function isZdsProtocolError(err: unknown): boolean {
  return err instanceof ZdsError && err.code === 'ERR_ZDS_PROTOCOL';
}

/** ProxyErrorContext is what a ProxyError is about besides its code. */
export interface ProxyErrorContext {
  /** The request that failed: `add`, `del`, `keep` or `snapshotSent`. */
  request?: string;
  /** The workload's uid (add, del, keep). */
  uid?: string;
  /** The server's socket file. */
  path?: string;
  /** The failed system call's errno (negative, as in Node), when a system call failed. */
  errno?: number;
  /** The failed system call (`sendmsg`, `recvmsg`), when one failed. */
  syscall?: string;
}

/**
 * ProxyError is a request to the node proxy that did not get through: `code` is `ERR_PROXY_NOT_CONNECTED` (no proxy
 * has connected and said hello), `ERR_PROXY_DISCONNECTED` (the connection was lost before the ack),
 * `ERR_PROXY_PROTOCOL` (the proxy answered with bytes that are not an ack; the connection was dropped),
 * `ERR_PROXY_CLOSED` (the server was closed), or a system error code (`ETIMEDOUT` when no ack came before the
 * deadline, `EPIPE`, `ECONNRESET`) with its `errno` and `syscall`. Every one is worth retrying: a proxy that connects
 * (again) gets a fresh snapshot.
 */
export class ProxyError extends PodnetError {
  /** The request that failed: `add`, `del`, `keep` or `snapshotSent`. */
  readonly request: string | undefined;
  /** The workload's uid (add, del, keep). */
  readonly uid: string | undefined;
  /** The server's socket file. */
  readonly path: string | undefined;
  /** The failed system call's errno (negative), when a system call failed. */
  readonly errno: number | undefined;
  /** The failed system call, when one failed. */
  readonly syscall: string | undefined;

  constructor(message: string, code: string, context: ProxyErrorContext = {}, options?: { cause?: unknown }) {
    super(message, code, options);
    this.request = context.request;
    this.uid = context.uid;
    this.path = context.path;
    this.errno = context.errno;
    this.syscall = context.syscall;
  }
}

/**
 * ProxyAckError is a request the node proxy answered with an error in its Ack (for an add: it could not start its
 * listeners in the pod); `proxyError` is the proxy's text. `code` is `ERR_PROXY_ACK`. The proxy retries on its side;
 * the caller may retry the request.
 */
export class ProxyAckError extends ProxyError {
  declare readonly code: 'ERR_PROXY_ACK';
  /** The proxy's own error text from its Ack. */
  readonly proxyError: string;

  constructor(proxyError: string, context: ProxyErrorContext) {
    const about = context.uid === undefined ? '' : ` for uid '${context.uid}'`;
    super(`node proxy refused ${context.request ?? 'the request'}${about}: ${proxyError}`, 'ERR_PROXY_ACK', context);
    this.proxyError = proxyError;
  }
}
