/** Builds NftablesError from what the addon reports, and gives kernel errors the context of the caller's call. */
import { NftablesError, registerNativeErrorKind } from '../errors.js';
import { describeObject, withSystemContext } from '../netlink/error-context.js';

function num(value: unknown): number | undefined {
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return undefined;
  return Number(value);
}

registerNativeErrorKind('nftables', (fields) => {
  const errno = typeof fields.errno === 'number' ? fields.errno : 0;
  const operation = typeof fields.command === 'string' ? fields.command : 'nftables';
  return new NftablesError(fields.message, fields.code, errno, {
    operation,
    index: num(fields.index),
    element: num(fields.element),
  });
});

/** The op of a transaction a kernel error names, for the error's message and `object`. */
export interface FailedOp {
  index: number;
  object: unknown;
  /** The op's kind: addElement, addRule, ... */
  operation?: string;
}

/**
 * withContext re-raises a kernel error with what it was about, the original as its `cause`: an NftablesError gains
 * the operation, the op (or the listed object) and the namespace; a system error (ETIMEDOUT, EBADMSG) gains the
 * namespace and the operation. Anything else passes unchanged.
 */
export function withContext(
  err: unknown,
  operation: string,
  object: unknown,
  netns: string | undefined,
  opAt?: (nativeIndex: number) => FailedOp | undefined,
): unknown {
  if (!(err instanceof NftablesError)) return withSystemContext(err, 'nftables', operation, netns);
  const failed = err.index !== undefined && opAt ? opAt(err.index) : undefined;
  const element = err.element === undefined ? '' : ` element ${err.element}`;
  const about = failed
    ? `op ${failed.index}${failed.operation ? ` ${failed.operation}` : ''}${element} ${describeObject(failed.object)}`
    : object === undefined ? '' : describeObject(object);
  const whole = operation === 'run' && err.index === undefined ? ' (the batch as a whole)' : '';
  return new NftablesError(`nftables ${operation}${about ? ` ${about}` : ''}${whole}: ${err.code}`, err.code, err.errno, {
    operation,
    index: failed?.index,
    op: failed?.operation,
    object: failed ? failed.object : object,
    element: err.element,
    netns,
  }, { cause: err });
}
