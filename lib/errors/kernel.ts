/**
 * Errors the kernel's netlink subsystems (or the fakes that speak their bytes) answer with: one base, KernelError,
 * holds what every one carries (Node's `errno` and `syscall`, the namespace, the operation and what it was about);
 * IpsetError, RtnetlinkError and NftablesError add what their subsystem names besides.
 */
import { PodnetError } from './base.js';

/** KernelErrorContext is what a kernel operation was about: the one context shape of every netlink client's errors. */
export interface KernelErrorContext {
  /** The operation that failed: the client's method or command (`add`, `addRoute`, `run`, `elements`, ...). */
  operation?: string;
  /** What the operation was about (the entry, route, rule, op or listed object), as the caller gave it. */
  object?: unknown;
  /** The namespace of the client, as a path. */
  netns?: string;
}

/**
 * KernelError is a refusal from a kernel netlink subsystem (or a fake): `code` is the kernel's name for it, `errno`
 * its negative number, `syscall` `sendmsg` (the kernel answers requests there), with the operation, what it was about
 * and the namespace. A wrapped error keeps its `cause`. `isAlreadyExists` / `isNotFound` work on every subclass.
 */
export class KernelError extends PodnetError {
  /** The kernel's negative errno (ipset's own codes are -4096 and below). */
  readonly errno: number;
  /** Always `sendmsg`: the kernel answers netlink requests there. */
  readonly syscall = 'sendmsg';
  /** The operation that failed: the client's method or command. */
  readonly operation: string | undefined;
  /** What the operation was about, as the caller gave it. */
  readonly object: unknown;
  /** The namespace of the client, as a path. */
  readonly netns: string | undefined;

  constructor(message: string, code: string, errno: number, context: KernelErrorContext = {}, options?: { cause?: unknown }) {
    super(message, code, options);
    this.errno = errno;
    this.operation = context.operation;
    this.object = context.object;
    this.netns = context.netns;
  }
}

/** IpsetErrorContext is what an ipset operation was about, as IpsetError reports it. */
export interface IpsetErrorContext extends KernelErrorContext {
  /** @deprecated use operation */
  command?: string;
  /** The set's name. */
  set?: string;
  /** The entry the kernel refused, as the caller gave it (the error's `object` too). */
  entry?: unknown;
  /** The entry's position in the batch (0-based). */
  index?: number;
}

/**
 * IpsetError is a failure reported by the kernel's ipset subsystem (or the fake kernel): `code` is the kernel's name
 * (`IPSET_ERR_EXIST`, `IPSET_ERR_BUSY`, ... or `ENOENT`/`EEXIST` for plain errnos), read by the operation where the
 * kernel gives one code two meanings: its `IPSET_ERR_EXIST` is `IPSET_ERR_EXIST` on an add (the entry is there,
 * `isAlreadyExists`) and `IPSET_ERR_ENTRY_MISSING` on a delete (the entry is not, `isNotFound`). `ipsetCode` keeps
 * the kernel's own name, `errno` its negative number (`IPSET_ERR_EXIST` is -4103); `operation` is the ipset command,
 * with the set, and for entry failures the entry (also its `object`) and its index in the batch.
 */
export class IpsetError extends KernelError {
  /** The set's name. */
  readonly set: string | undefined;
  /** The entry the kernel refused, as the caller gave it. */
  readonly entry: unknown;
  /** The entry's position in the batch (0-based). */
  readonly index: number | undefined;
  /**
   * The kernel's name for the code it answered with (`IPSET_ERR_EXIST` for a delete's missing entry too, whose `code`
   * is `IPSET_ERR_ENTRY_MISSING`); the same as `code` wherever the kernel's code has one meaning.
   */
  readonly ipsetCode: string;

  constructor(message: string, code: string, errno: number, context: IpsetErrorContext = {}, ipsetCode: string = code, options?: { cause?: unknown }) {
    const { command, set, entry, index, ...kernel } = context;
    super(message, code, errno, { ...kernel, operation: kernel.operation ?? command, object: kernel.object ?? entry }, options);
    this.ipsetCode = ipsetCode;
    this.set = set;
    this.entry = entry;
    this.index = index;
  }

  /** command is operation's old name. @deprecated use operation */
  get command(): string | undefined {
    return this.operation;
  }
}

/** RtnetlinkErrorContext is what an rtnetlink operation was about, as RtnetlinkError reports it. */
export interface RtnetlinkErrorContext extends KernelErrorContext {
  /** The operation: 'addRoute', 'delRoute', 'addRule', 'delRule', 'link', 'links', 'routes', ... */
  operation: string;
  /** The kernel's own text from an extended ACK, when it sent one. */
  kernelMessage?: string;
}

/**
 * RtnetlinkError is a failure the kernel's rtnetlink (or FakeRtnetlink) answered with: `code` is the errno name
 * (`EEXIST`, `ESRCH`, `ENODEV`, `ENETUNREACH`, ...), `errno` its negative number, plus the operation, the route, rule
 * or link it was about (`object`), the kernel's extended-ACK text and the namespace.
 */
export class RtnetlinkError extends KernelError {
  /** The operation that failed ('addRoute', 'delRule', 'link', ...). */
  declare readonly operation: string;
  /** The kernel's own text from an extended ACK, when it sent one. */
  readonly kernelMessage: string | undefined;

  constructor(message: string, code: string, errno: number, context: RtnetlinkErrorContext, options?: { cause?: unknown }) {
    super(message, code, errno, context, options);
    this.kernelMessage = context.kernelMessage;
  }
}

/** NftablesErrorContext is what an nftables operation was about, as NftablesError reports it. */
export interface NftablesErrorContext extends KernelErrorContext {
  /** The operation: 'run', 'tables', 'chains', 'sets', 'elements', 'rules', 'addElement', 'testElement', ... */
  operation: string;
  /** For a transaction: the position of the failing op in it (0-based), when the kernel named one. */
  index?: number;
  /** For a transaction: the kind of the failing op ('addElement', 'addRule', ...), when the kernel named one. */
  op?: string;
  /**
   * For element ops: the position within the op's elements of the element the kernel refused (from its extended
   * ACK), or of the first element of the refused message when the kernel did not point at one.
   */
  element?: number;
}

/**
 * NftablesError is a failure the kernel's nf_tables (or a netlink peer) answered with: `code` is the errno name
 * (`EEXIST`, `ENOENT`, `EBUSY`, `EINVAL`, `EOPNOTSUPP`, ...), `errno` its negative number, plus the operation, for a
 * transaction the index of the op that failed and that op (`object`; for a listing the object listed), and the
 * namespace. Nothing of a failed transaction is applied.
 */
export class NftablesError extends KernelError {
  /** The operation that failed ('run', 'tables', 'addElement', ...). */
  declare readonly operation: string;
  /** For a transaction: the position of the failing op in it (0-based), when the kernel named one. */
  readonly index: number | undefined;
  /** For a transaction: the kind of the failing op ('addElement', 'addRule', ...), when the kernel named one. */
  readonly op: string | undefined;
  /**
   * For element ops: the position within the op's elements of the element the kernel refused (from its extended
   * ACK), or of the first element of the refused message when the kernel did not point at one.
   */
  readonly element: number | undefined;

  constructor(message: string, code: string, errno: number, context: NftablesErrorContext, options?: { cause?: unknown }) {
    super(message, code, errno, context, options);
    this.index = context.index;
    this.op = context.op;
    this.element = context.element;
  }
}

/**
 * NftablesGenerationError means the ruleset moved on under a change planned at an older generation: the kernel refused
 * the batch, which carried the generation its plan was read at (NFNL_BATCH_GENID), with ERESTART (`code` 'ERESTART',
 * errno -85), as many times as it was planned again (`attempts`). Nothing of a refused batch is applied, so no one's
 * write is lost; the error is retryable: read and plan again (reconcile does) once the namespace is quieter.
 */
export class NftablesGenerationError extends NftablesError {
  /** Always true: the refused change can be planned again from a fresh listing. */
  readonly retryable = true;
  /** How many times the change was planned and refused. */
  readonly attempts: number;
  /** The generation the last refused batch carried. */
  readonly generation: number;

  constructor(message: string, context: NftablesErrorContext & { attempts: number; generation: number }, options?: { cause?: unknown }) {
    super(message, 'ERESTART', -85, context, options);
    this.attempts = context.attempts;
    this.generation = context.generation;
  }
}
