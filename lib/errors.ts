/**
 * Error classes shared by every podnet layer. Native code never builds its own
 * Error: it hands plain fields to {@link errorFromNative}, so a failure from the
 * kernel, from a fake, or from argument checks in TypeScript is always one of
 * these classes with Node's `code` / `errno` / `syscall` shape.
 */

/** PodnetError is the base of every error podnet throws; `code` is a stable string to branch on. */
export class PodnetError extends Error {
  readonly code: string;

  constructor(message: string, code: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Fields a system error may carry besides the errno (what the operation was about). */
export interface SystemErrorContext {
  syscall?: string;
  path?: string;
  netns?: string;
  /** The ipset set an operation was about. */
  set?: string;
  /** The operation (ipset command, ...) that failed. */
  command?: string;
}

/**
 * PodnetSystemError is a failed system call, shaped like Node's own: `code` such as `ENOENT`, negative `errno`,
 * `syscall`, and the path or namespace involved.
 */
export class PodnetSystemError extends PodnetError {
  readonly errno: number;
  readonly syscall: string | undefined;
  readonly path: string | undefined;
  readonly netns: string | undefined;
  readonly set: string | undefined;
  readonly command: string | undefined;

  constructor(message: string, code: string, errno: number, context: SystemErrorContext = {}, options?: { cause?: unknown }) {
    super(message, code, options);
    this.errno = errno;
    this.syscall = context.syscall;
    this.path = context.path;
    this.netns = context.netns;
    this.set = context.set;
    this.command = context.command;
  }
}

/**
 * InvalidArgumentError is thrown before anything reaches the kernel or a subprocess: `code` is
 * `ERR_INVALID_ARG_TYPE` or `ERR_INVALID_ARG_VALUE` as in Node, and `argument` names the parameter.
 */
export class InvalidArgumentError extends PodnetError {
  readonly argument: string;

  constructor(message: string, code: 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE', argument: string) {
    super(message, code);
    this.argument = argument;
  }
}

/** The raw fields native code reports for a failure. */
export interface NativeErrorFields {
  kind: string;
  message: string;
  code: string;
  errno?: number;
  syscall?: string;
  [field: string]: unknown;
}

type NativeErrorBuilder = (fields: NativeErrorFields) => Error;
const builders = new Map<string, NativeErrorBuilder>();

/** registerNativeErrorKind lets a layer (ipset, spawn, ...) build its own class for errors of its kind. */
export function registerNativeErrorKind(kind: string, build: NativeErrorBuilder): void {
  builders.set(kind, build);
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** errorFromNative turns the fields reported by the addon into a podnet error; it never throws. */
export function errorFromNative(fields: NativeErrorFields): Error {
  const build = builders.get(fields.kind);
  if (build) return build(fields);
  return new PodnetSystemError(fields.message, fields.code, fields.errno ?? 0, {
    syscall: str(fields.syscall),
    path: str(fields.path),
    netns: str(fields.netns),
    set: str(fields.set),
    command: str(fields.command),
  });
}

function codeOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
}

/** isNotFound tells whether err means "the thing does not exist" (a missing file, set, entry or chain). */
export function isNotFound(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'ENOENT' || code === 'ESRCH';
}

/** isAlreadyExists tells whether err means "the thing is already there". */
export function isAlreadyExists(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'EEXIST' || code === 'IPSET_ERR_EXIST';
}

/**
 * withCallerStack appends the caller's stack to an error that was created on a later tick (native async work), so
 * async failures point at the line that started the operation.
 */
export function withCallerStack<T>(promise: Promise<T>, caller: Error): Promise<T> {
  return promise.catch((err: unknown) => {
    if (err instanceof Error && caller.stack) {
      const frames = caller.stack.split('\n').slice(1).join('\n');
      err.stack = `${err.stack ?? String(err)}\n    --- async call site ---\n${frames}`;
    }
    throw err;
  });
}

/** What an ipset operation was about, as IpsetError reports it. */
export interface IpsetErrorContext {
  command?: string;
  set?: string;
  entry?: unknown;
  index?: number;
  netns?: string;
}

/**
 * IpsetError is a failure reported by the kernel's ipset subsystem (or the fake kernel): `code` is the kernel's name
 * (`IPSET_ERR_EXIST`, `IPSET_ERR_BUSY`, ... or `ENOENT`/`EEXIST` for plain errnos), `errno` its negative number, plus
 * the command, the set, and for entry failures the entry and its index in the batch.
 */
export class IpsetError extends PodnetError {
  readonly errno: number;
  readonly syscall = 'sendmsg';
  readonly command: string | undefined;
  readonly set: string | undefined;
  readonly entry: unknown;
  readonly index: number | undefined;
  readonly netns: string | undefined;

  constructor(message: string, code: string, errno: number, context: IpsetErrorContext = {}) {
    super(message, code);
    this.errno = errno;
    this.command = context.command;
    this.set = context.set;
    this.entry = context.entry;
    this.index = context.index;
    this.netns = context.netns;
  }
}
