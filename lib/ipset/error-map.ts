/** Builds IpsetError from what the addon reports, for single operations and for batch entries. */
import { IpsetError, PodnetError, registerNativeErrorKind, type IpsetErrorContext } from '../errors.js';
import { ipsetErrorName } from './codes.js';

function errnoName(error: number): string {
  // The few plain errnos the ipset subsystem answers with.
  const names: Record<number, string> = { 1: 'EPERM', 2: 'ENOENT', 12: 'ENOMEM', 17: 'EEXIST', 22: 'EINVAL', 93: 'EPROTONOSUPPORT', 95: 'EOPNOTSUPP' };
  return names[error] ?? `E${error}`;
}

function describeEntry(entry: unknown): string {
  if (entry && typeof entry === 'object' && 'ip' in entry) return ` entry ${String((entry as { ip: unknown }).ip)}`;
  return '';
}

/** IPSET_ERR_EXIST: the kernel's code for an entry that an add finds present and a delete finds absent. */
const IPSET_ERR_EXIST = 4103;

/**
 * ipsetError builds the error for a positive kernel error code of an operation (`operation`, or the deprecated
 * `command` its callers may still name it by). The kernel's IPSET_ERR_EXIST means "present" on an add and "absent"
 * on a del, so a del's is named IPSET_ERR_ENTRY_MISSING (what isNotFound answers to); `ipsetCode` keeps the kernel's
 * name either way.
 */
export function ipsetError(error: number, context: IpsetErrorContext & { setType?: string; description?: string; cause?: unknown }): IpsetError {
  let [code, description] = ipsetErrorName(error, context.setType);
  if (!code) {
    code = errnoName(error);
    description = context.description ?? '';
  }
  const ipsetCode = code;
  const operation = context.operation ?? context.command;
  if (error === IPSET_ERR_EXIST && operation === 'del') {
    code = 'IPSET_ERR_ENTRY_MISSING';
    description = 'element is not in the set';
  } else if (error === IPSET_ERR_EXIST && operation === 'add') {
    description = 'element is already in the set';
  }
  const about = `${operation ?? 'ipset'}${context.set ? ` '${context.set}'` : ''}${describeEntry(context.entry)}`;
  const message = `ipset ${about}: ${code}${description ? ` (${description})` : ''}`;
  return new IpsetError(message, code, -error, context, ipsetCode, context.cause === undefined ? undefined : { cause: context.cause });
}

/** ipsetClosedError is what a call made after close() fails with. */
export function ipsetClosedError(): PodnetError {
  return new PodnetError('ipset client is closed', 'ERR_IPSET_CLOSED');
}

registerNativeErrorKind('ipset', (fields) => {
  const errno = typeof fields.errno === 'number' ? -fields.errno : 0;
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return ipsetError(errno, {
    operation: str(fields.command),
    set: str(fields.set),
    setType: str(fields.settype),
    description: fields.message.replace(/^[A-Z0-9_]+: /, '').replace(/, .*$/, ''),
  });
});
