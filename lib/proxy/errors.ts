/**
 * Errors of the node proxy protocol (ZDS): bytes from a peer that are not the message they should be, and messages
 * too large for the peer's read buffer.
 */
import { PodnetError } from '../errors.js';

/** The codes a ZdsError carries. */
export type ZdsErrorCode = 'ERR_ZDS_PROTOCOL' | 'ERR_ZDS_MESSAGE_TOO_LARGE';

/** What a ZdsError reports besides its message. */
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
  readonly messageType: string;
  readonly size: number | undefined;
  readonly limit: number | undefined;
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
