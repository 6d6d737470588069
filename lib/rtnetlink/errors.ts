/** Builds RtnetlinkError from what the addon reports, and gives kernel errors the context of the caller's call. */
import { RtnetlinkError, registerNativeErrorKind } from '../errors.js';
import { describeObject, withSystemContext } from '../netlink/error-context.js';

registerNativeErrorKind('rtnetlink', (fields) => {
  const errno = typeof fields.errno === 'number' ? fields.errno : 0;
  const kernelMessage = typeof fields.kernelMessage === 'string' ? fields.kernelMessage : undefined;
  const operation = typeof fields.command === 'string' ? fields.command : 'rtnetlink';
  return new RtnetlinkError(fields.message, fields.code, errno, { operation, kernelMessage });
});

/**
 * withContext re-raises a kernel error of an operation with what it was about, the original as its `cause`: an
 * RtnetlinkError gains the operation, the object and the namespace; a system error (ETIMEDOUT, EBADMSG) gains the
 * namespace and the operation. Anything else passes unchanged.
 */
export function withContext(err: unknown, operation: string, object: unknown, netns: string | undefined): unknown {
  if (!(err instanceof RtnetlinkError)) return withSystemContext(err, 'rtnetlink', operation, netns);
  const about = object === undefined ? operation : `${operation} ${describeObject(object)}`;
  const text = err.kernelMessage ? `: ${err.kernelMessage}` : '';
  return new RtnetlinkError(`rtnetlink ${about}: ${err.code}${text}`, err.code, err.errno, {
    operation,
    object,
    kernelMessage: err.kernelMessage,
    netns,
  }, { cause: err });
}
