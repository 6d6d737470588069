/**
 * The base classes of every podnet error: PodnetError (a stable `code`), PodnetSystemError (a failed system call,
 * shaped as Node's own) and InvalidArgumentError (an argument refused before anything is sent).
 */

/** PodnetError is the base of every error podnet throws; `code` is a stable string to branch on. */
export class PodnetError extends Error {
  /** The stable code to branch on (`ENOENT`, `ERR_INVALID_ARG_VALUE`, `IPSET_ERR_EXIST`, ...); never the message. */
  readonly code: string;

  constructor(message: string, code: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** SystemErrorContext holds the fields a system error may carry besides the errno (what the operation was about). */
export interface SystemErrorContext {
  /** The system call that failed (`open`, `setns`, `socket`, ...). */
  syscall?: string;
  /** The file the call was about. */
  path?: string;
  /** The namespace the call worked in, as a path. */
  netns?: string;
  /** The ipset set an operation was about. */
  set?: string;
  /** The operation (a client's method or ipset command: `add`, `addRoute`, `run`, ...) that failed. */
  operation?: string;
  /** @deprecated use operation */
  command?: string;
}

/**
 * PodnetSystemError is a failed system call, shaped like Node's own: `code` such as `ENOENT`, negative `errno`,
 * `syscall`, and the path or namespace involved, with the operation that made the call.
 */
export class PodnetSystemError extends PodnetError {
  /** The negative errno (`-2` for `ENOENT`), as Node's system errors have it; 0 for podnet's own codes. */
  readonly errno: number;
  /** The system call that failed. */
  readonly syscall: string | undefined;
  /** The file the call was about. */
  readonly path: string | undefined;
  /** The namespace the call worked in. */
  readonly netns: string | undefined;
  /** The ipset set the call was about. */
  readonly set: string | undefined;
  /** The operation that failed (a client's method or ipset command). */
  readonly operation: string | undefined;

  constructor(message: string, code: string, errno: number, context: SystemErrorContext = {}, options?: { cause?: unknown }) {
    super(message, code, options);
    this.errno = errno;
    this.syscall = context.syscall;
    this.path = context.path;
    this.netns = context.netns;
    this.set = context.set;
    this.operation = context.operation ?? context.command;
  }

  /** command is operation's old name. @deprecated use operation */
  get command(): string | undefined {
    return this.operation;
  }
}

/**
 * InvalidArgumentError is thrown before anything reaches the kernel or a subprocess: `code` is
 * `ERR_INVALID_ARG_TYPE` or `ERR_INVALID_ARG_VALUE` as in Node, and `argument` names the parameter.
 */
export class InvalidArgumentError extends PodnetError {
  /** The parameter (or option path, such as `options.timeoutMs`) that was refused. */
  readonly argument: string;

  constructor(message: string, code: 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE', argument: string) {
    super(message, code);
    this.argument = argument;
  }
}
