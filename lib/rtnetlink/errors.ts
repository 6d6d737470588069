/** Builds RtnetlinkError from what the addon reports, and describes the objects errors are about. */
import { PodnetSystemError, RtnetlinkError, registerNativeErrorKind } from '../errors.js';

registerNativeErrorKind('rtnetlink', (fields) => {
  const errno = typeof fields.errno === 'number' ? fields.errno : 0;
  const kernelMessage = typeof fields.kernelMessage === 'string' ? fields.kernelMessage : undefined;
  const operation = typeof fields.command === 'string' ? fields.command : 'rtnetlink';
  return new RtnetlinkError(fields.message, fields.code, errno, { operation, kernelMessage });
});

/** describe renders the object an operation was about for an error message ("route {...}"). */
export function describe(what: string, object: unknown): string {
  if (object === undefined) return what;
  let text: string;
  try {
    text = JSON.stringify(object);
  } catch {
    text = String(object);
  }
  return `${what} ${text.length > 200 ? `${text.slice(0, 200)}...` : text}`;
}

/**
 * withContext re-raises a kernel error of an operation with what it was about: an RtnetlinkError gains the
 * operation, the object and the namespace; a system error (ETIMEDOUT, EBADMSG) gains the namespace and the
 * operation as its command. Anything else passes unchanged.
 */
export function withContext(err: unknown, operation: string, object: unknown, netns: string | undefined): unknown {
  if (err instanceof RtnetlinkError) {
    const about = describe(operation, object);
    const text = err.kernelMessage ? `: ${err.kernelMessage}` : '';
    return new RtnetlinkError(`rtnetlink ${about}: ${err.code}${text}`, err.code, err.errno, {
      operation,
      object,
      kernelMessage: err.kernelMessage,
      netns,
    });
  }
  if (err instanceof PodnetSystemError && err.netns === undefined) {
    return new PodnetSystemError(`${err.message} (rtnetlink ${operation})`, err.code, err.errno, {
      syscall: err.syscall,
      netns,
      command: operation,
    }, { cause: err });
  }
  return err;
}
