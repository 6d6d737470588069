/**
 * Error classes shared by every podnet layer, one file per job under errors/. Native code never builds its own
 * Error: it hands plain fields to {@link errorFromNative}, so a failure from the kernel, from a fake, or from argument
 * checks in TypeScript is always one of these classes with Node's `code` / `errno` / `syscall` shape.
 */
export { PodnetError, PodnetSystemError, InvalidArgumentError, type SystemErrorContext } from './errors/base.js';
export { errorFromNative, registerNativeErrorKind, type NativeErrorFields } from './errors/native.js';
export { isAlreadyExists, isGenerationChanged, isNotFound } from './errors/predicates.js';
export { withCallerStack } from './errors/caller-stack.js';
export {
  KernelError,
  IpsetError,
  RtnetlinkError,
  NftablesError,
  NftablesGenerationError,
  type KernelErrorContext,
  type IpsetErrorContext,
  type RtnetlinkErrorContext,
  type NftablesErrorContext,
} from './errors/kernel.js';
export { ProcessTimeoutError, ProcessOutputLimitError, type ProcessErrorContext } from './errors/process.js';
export {
  IptablesRestoreError,
  IptablesLockTimeoutError,
  IptablesCommandError,
  type IptablesFailureReason,
  type IptablesRestoreErrorFields,
} from './errors/iptables.js';
