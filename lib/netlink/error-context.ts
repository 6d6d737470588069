/**
 * What every netlink client adds to a failure of one of its operations before the caller sees it: the text of what
 * the operation was about, and for a system error (a lost or malformed answer) the client's namespace and the
 * operation, the original kept as the `cause`.
 */
import { PodnetSystemError } from '../errors.js';

/** describeObject renders what an operation was about for an error message: its JSON, cut at 200 characters. */
export function describeObject(object: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(object) ?? String(object);
  } catch {
    text = String(object);
  }
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/**
 * withSystemContext re-raises a PodnetSystemError of a client's operation (ETIMEDOUT, EBADMSG) that names no
 * namespace with the client's namespace and the operation, keeping the original as its `cause`; anything else
 * passes unchanged.
 */
export function withSystemContext(err: unknown, client: string, operation: string, netns: string | undefined): unknown {
  if (!(err instanceof PodnetSystemError) || err.netns !== undefined) return err;
  return new PodnetSystemError(`${err.message} (${client} ${operation})`, err.code, err.errno, {
    syscall: err.syscall,
    netns,
    operation,
  }, { cause: err });
}
