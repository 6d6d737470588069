/**
 * Errors of unix SOCK_SEQPACKET sockets that are not a failed system call: a closed socket or server
 * (`ERR_UNIX_CLOSED`) and a message that could not be taken whole (SeqpacketMessageError). Built from what the addon
 * reports (kind "unix"); system call failures stay PodnetSystemError.
 */
import { PodnetError, registerNativeErrorKind } from '../errors.js';

/** SeqpacketMessageErrorCode is a code of SeqpacketMessageError. */
export type SeqpacketMessageErrorCode = 'ERR_UNIX_TRUNCATED' | 'ERR_UNIX_CTRUNC';

/**
 * SeqpacketMessageError is a message that arrived but could not be taken whole, and was discarded: `code` is
 * `ERR_UNIX_TRUNCATED` when its data was longer than `maxBytes` (`size` is its real length), `ERR_UNIX_CTRUNC` when
 * it carried more fds than `maxFds`. The `receivedFds` that did arrive with it were closed. The socket stays usable.
 */
export class SeqpacketMessageError extends PodnetError {
  declare readonly code: SeqpacketMessageErrorCode;
  readonly syscall = 'recvmsg';
  /** The socket file of the connection. */
  readonly path: string | undefined;
  /** The message's data length in bytes. */
  readonly size: number;
  /** The receive's maxBytes (ERR_UNIX_TRUNCATED). */
  readonly maxBytes: number | undefined;
  /** The receive's maxFds (ERR_UNIX_CTRUNC). */
  readonly maxFds: number | undefined;
  /** How many fds arrived (and were closed); with ERR_UNIX_CTRUNC the kernel may have dropped more. */
  readonly receivedFds: number;

  constructor(
    message: string,
    code: SeqpacketMessageErrorCode,
    fields: { path?: string; size: number; maxBytes?: number; maxFds?: number; receivedFds: number },
  ) {
    super(message, code);
    this.path = fields.path;
    this.size = fields.size;
    this.maxBytes = fields.maxBytes;
    this.maxFds = fields.maxFds;
    this.receivedFds = fields.receivedFds;
  }
}

/** unixClosedError is the `ERR_UNIX_CLOSED` PodnetError for a socket or server used after close(). */
export function unixClosedError(what: string, path: string): PodnetError {
  return new PodnetError(`${what} '${path}' is closed`, 'ERR_UNIX_CLOSED');
}

function count(value: unknown): number | undefined {
  return typeof value === 'string' && value !== '' ? Number(value) : undefined;
}

registerNativeErrorKind('unix', (fields) => {
  if (fields.code === 'ERR_UNIX_TRUNCATED' || fields.code === 'ERR_UNIX_CTRUNC') {
    return new SeqpacketMessageError(fields.message, fields.code, {
      path: typeof fields.path === 'string' ? fields.path : undefined,
      size: count(fields.size) ?? 0,
      maxBytes: count(fields.maxBytes),
      maxFds: count(fields.maxFds),
      receivedFds: count(fields.receivedFds) ?? 0,
    });
  }
  return new PodnetError(fields.message, fields.code);
});
