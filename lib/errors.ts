/**
 * Error classes shared by every podnet layer. Native code never builds its own
 * Error: it hands plain fields to {@link errorFromNative}, so a failure from the
 * kernel, from a fake, or from argument checks in TypeScript is always one of
 * these classes with Node's `code` / `errno` / `syscall` shape.
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
  /** The operation (ipset command, ...) that failed. */
  command?: string;
}

/**
 * PodnetSystemError is a failed system call, shaped like Node's own: `code` such as `ENOENT`, negative `errno`,
 * `syscall`, and the path or namespace involved.
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
  /** The operation that failed (an ipset command, ...). */
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
  /** The parameter (or option path, such as `options.timeoutMs`) that was refused. */
  readonly argument: string;

  constructor(message: string, code: 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE', argument: string) {
    super(message, code);
    this.argument = argument;
  }
}

/** NativeErrorFields are the raw fields native code reports for a failure. */
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

/**
 * isNotFound tells whether err means "the thing does not exist": a missing file, namespace, set, chain, route or
 * rule (`ENOENT`, `ESRCH`), or an ipset entry a delete did not find (`IPSET_ERR_ENTRY_MISSING`). Every client answers
 * it alike for a delete or a lookup of something missing; it never throws.
 */
export function isNotFound(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'ENOENT' || code === 'ESRCH' || code === 'IPSET_ERR_ENTRY_MISSING';
}

/**
 * isAlreadyExists tells whether err means "the thing is already there": an exclusive add of something present
 * (`EEXIST`, or `IPSET_ERR_EXIST` from an ipset add). Every client answers it alike; it never throws.
 */
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

/** IpsetErrorContext is what an ipset operation was about, as IpsetError reports it. */
export interface IpsetErrorContext {
  /** The ipset command (`create`, `add`, `del`, `list`, ...). */
  command?: string;
  /** The set's name. */
  set?: string;
  /** The entry the kernel refused, as the caller gave it. */
  entry?: unknown;
  /** The entry's position in the batch (0-based). */
  index?: number;
  /** The namespace of the client, as a path. */
  netns?: string;
}

/**
 * IpsetError is a failure reported by the kernel's ipset subsystem (or the fake kernel): `code` is the kernel's name
 * (`IPSET_ERR_EXIST`, `IPSET_ERR_BUSY`, ... or `ENOENT`/`EEXIST` for plain errnos), read by the operation where the
 * kernel gives one code two meanings: its `IPSET_ERR_EXIST` is `IPSET_ERR_EXIST` on an add (the entry is there,
 * `isAlreadyExists`) and `IPSET_ERR_ENTRY_MISSING` on a delete (the entry is not, `isNotFound`). `ipsetCode` keeps
 * the kernel's own name, `errno` its negative number; with the command, the set, and for entry failures the entry
 * and its index in the batch.
 */
export class IpsetError extends PodnetError {
  /** The kernel's negative errno (ipset's own codes are -4096 and below: `IPSET_ERR_EXIST` is -4103). */
  readonly errno: number;
  /** Always `sendmsg`: the kernel answers ipset requests there. */
  readonly syscall = 'sendmsg';
  /** The ipset command that failed. */
  readonly command: string | undefined;
  /** The set's name. */
  readonly set: string | undefined;
  /** The entry the kernel refused, as the caller gave it. */
  readonly entry: unknown;
  /** The entry's position in the batch (0-based). */
  readonly index: number | undefined;
  /** The namespace of the client, as a path. */
  readonly netns: string | undefined;
  /**
   * The kernel's name for the code it answered with (`IPSET_ERR_EXIST` for a delete's missing entry too, whose `code`
   * is `IPSET_ERR_ENTRY_MISSING`); the same as `code` wherever the kernel's code has one meaning.
   */
  readonly ipsetCode: string;

  constructor(message: string, code: string, errno: number, context: IpsetErrorContext = {}, ipsetCode: string = code) {
    super(message, code);
    this.errno = errno;
    this.ipsetCode = ipsetCode;
    this.command = context.command;
    this.set = context.set;
    this.entry = context.entry;
    this.index = context.index;
    this.netns = context.netns;
  }
}

/** ProcessErrorContext is what a timed-out or cut-off child process had done when it was killed. */
export interface ProcessErrorContext {
  /** The program and its arguments. */
  argv: readonly string[];
  /** The namespace it ran in, as a path (undefined: this process's). */
  netns: string | undefined;
  /** What it wrote to stdout. */
  stdout: string;
  /** What it wrote to stderr. */
  stderr: string;
}

/**
 * ProcessTimeoutError means a child process (runInNetns) passed its deadline and was killed with its process group
 * and reaped; `code` is `ETIMEDOUT`, and the output it wrote before is kept.
 */
export class ProcessTimeoutError extends PodnetError {
  /** The program and its arguments. */
  readonly argv: readonly string[];
  /** The namespace it ran in. */
  readonly netns: string | undefined;
  /** The deadline it passed. */
  readonly timeoutMs: number;
  /** What it wrote to stdout until it was killed. */
  readonly stdout: string;
  /** What it wrote to stderr until it was killed. */
  readonly stderr: string;

  constructor(context: ProcessErrorContext, timeoutMs: number) {
    super(`process '${context.argv[0] ?? ''}' did not finish within ${timeoutMs} ms and was killed`, 'ETIMEDOUT');
    this.argv = context.argv;
    this.netns = context.netns;
    this.timeoutMs = timeoutMs;
    this.stdout = context.stdout;
    this.stderr = context.stderr;
  }
}

/**
 * ProcessOutputLimitError means a child process wrote more than its output limit to stdout and stderr together and
 * was killed; `code` is `ERR_OUTPUT_LIMIT`.
 */
export class ProcessOutputLimitError extends PodnetError {
  /** The program and its arguments. */
  readonly argv: readonly string[];
  /** The namespace it ran in. */
  readonly netns: string | undefined;
  /** The limit it passed (`maxOutputBytes`). */
  readonly limitBytes: number;

  constructor(context: ProcessErrorContext, limitBytes: number) {
    super(`process '${context.argv[0] ?? ''}' wrote more than ${limitBytes} bytes and was killed`, 'ERR_OUTPUT_LIMIT');
    this.argv = context.argv;
    this.netns = context.netns;
    this.limitBytes = limitBytes;
  }
}

/**
 * IptablesFailureReason says why an iptables-restore run failed, as read from its exit code and stderr (both
 * backends, iptables 1.8.9); 'unknown' when the text matches nothing known.
 */
export type IptablesFailureReason =
  | 'lock-timeout'
  | 'bad-argument'
  | 'missing-target'
  | 'missing-chain'
  | 'missing-rule'
  | 'chain-exists'
  | 'chain-busy'
  | 'kernel-rejected'
  | 'commit-expected'
  | 'failed'
  | 'unknown';

/** IptablesRestoreErrorFields are what an IptablesRestoreError reports besides its message. */
export interface IptablesRestoreErrorFields {
  /** The program's exit status (-1 when a signal ended it). */
  exitCode: number;
  /** What it wrote to stderr. */
  stderr: string;
  /** The failure, classified. */
  reason: IptablesFailureReason;
  /** The 1-based line of the restore input iptables-restore blamed, when it named one. */
  line: number | undefined;
  /** The table block that line falls in. */
  table: string | undefined;
  /** The failing line's text, or the whole table block when the line is its COMMIT. */
  rule: string | undefined;
  /** The input that was sent. */
  input: string;
  /** Set when podnet's own rollback of earlier tables failed too. */
  rollbackError?: unknown;
}

/**
 * IptablesRestoreError is a failed iptables-restore run: `code` is `ERR_IPTABLES_RESTORE`, `reason` classifies the
 * failure, and `line`, `table` and `rule` point into the input that was sent.
 */
export class IptablesRestoreError extends PodnetError {
  /** The program's exit status (-1 when a signal ended it). */
  readonly exitCode: number;
  /** What it wrote to stderr. */
  readonly stderr: string;
  /** The failure, classified. */
  readonly reason: IptablesFailureReason;
  /** The 1-based line of the input iptables-restore blamed, when it named one. */
  readonly line: number | undefined;
  /** The table block that line falls in. */
  readonly table: string | undefined;
  /** The failing line's text, or the whole table block when the line is its COMMIT. */
  readonly rule: string | undefined;
  /** The input that was sent. */
  readonly input: string;
  /** The failure of podnet's rollback of earlier tables, when that failed too (the rules may then be half applied). */
  readonly rollbackError: unknown;

  constructor(message: string, fields: IptablesRestoreErrorFields, code = 'ERR_IPTABLES_RESTORE') {
    super(message, code);
    this.exitCode = fields.exitCode;
    this.stderr = fields.stderr;
    this.reason = fields.reason;
    this.line = fields.line;
    this.table = fields.table;
    this.rule = fields.rule;
    this.input = fields.input;
    this.rollbackError = fields.rollbackError;
  }
}

/**
 * IptablesLockTimeoutError is an iptables-restore run that gave up waiting for the xtables lock (legacy backend,
 * `lockWaitSeconds`); `code` is `ERR_IPTABLES_LOCK_TIMEOUT`.
 */
export class IptablesLockTimeoutError extends IptablesRestoreError {
  constructor(message: string, fields: IptablesRestoreErrorFields) {
    super(message, fields, 'ERR_IPTABLES_LOCK_TIMEOUT');
  }
}

/** IptablesCommandError is a failed iptables-save (or other helper) run: `code` is `ERR_IPTABLES_COMMAND`. */
export class IptablesCommandError extends PodnetError {
  /** The program and its arguments. */
  readonly argv: readonly string[];
  /** Its exit status. */
  readonly exitCode: number;
  /** What it wrote to stderr. */
  readonly stderr: string;

  constructor(argv: readonly string[], exitCode: number, stderr: string) {
    const detail = stderr.trim().split('\n').filter((l) => !l.startsWith('#'))[0] ?? '';
    super(`'${argv[0] ?? ''}' exited with status ${exitCode}${detail ? `: ${detail}` : ''}`, 'ERR_IPTABLES_COMMAND');
    this.argv = argv;
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/** RtnetlinkErrorContext is what an rtnetlink operation was about, as RtnetlinkError reports it. */
export interface RtnetlinkErrorContext {
  /** The operation: 'addRoute', 'delRoute', 'addRule', 'delRule', 'link', 'links', 'routes', ... */
  operation: string;
  /** The route, rule or link the operation was about, as the caller gave it. */
  object?: unknown;
  /** The kernel's own text from an extended ACK, when it sent one. */
  kernelMessage?: string;
  /** The namespace of the client, as a path. */
  netns?: string;
}

/**
 * RtnetlinkError is a failure the kernel's rtnetlink (or FakeRtnetlink) answered with: `code` is the errno name
 * (`EEXIST`, `ESRCH`, `ENODEV`, `ENETUNREACH`, ...), `errno` its negative number, plus the operation, the object it
 * was about, the kernel's extended-ACK text and the namespace. `isAlreadyExists` / `isNotFound` work on it.
 */
export class RtnetlinkError extends PodnetError {
  /** The kernel's negative errno. */
  readonly errno: number;
  /** Always `sendmsg`: the kernel answers rtnetlink requests there. */
  readonly syscall = 'sendmsg';
  /** The operation that failed ('addRoute', 'delRule', 'link', ...). */
  readonly operation: string;
  /** The route, rule or link the operation was about, as the caller gave it. */
  readonly object: unknown;
  /** The kernel's own text from an extended ACK, when it sent one. */
  readonly kernelMessage: string | undefined;
  /** The namespace of the client, as a path. */
  readonly netns: string | undefined;
  constructor(message: string, code: string, errno: number, context: RtnetlinkErrorContext, options?: { cause?: unknown }) {
    super(message, code, options);
    this.errno = errno;
    this.operation = context.operation;
    this.object = context.object;
    this.kernelMessage = context.kernelMessage;
    this.netns = context.netns;
  }
}

/** NftablesErrorContext is what an nftables operation was about, as NftablesError reports it. */
export interface NftablesErrorContext {
  /** The operation: 'run', 'tables', 'chains', 'sets', 'elements', 'rules', 'addElement', 'testElement', ... */
  operation: string;
  /** For a transaction: the position of the failing op in it (0-based), when the kernel named one. */
  index?: number;
  /** The failing op (or the object a listing was about), as the caller described it. */
  object?: unknown;
  /** For a transaction: the kind of the failing op ('addElement', 'addRule', ...), when the kernel named one. */
  op?: string;
  /**
   * For element ops: the position within the op's elements of the element the kernel refused (from its extended
   * ACK), or of the first element of the refused message when the kernel did not point at one.
   */
  element?: number;
  /** The namespace of the client, as a path. */
  netns?: string;
}

/**
 * NftablesError is a failure the kernel's nf_tables (or a netlink peer) answered with: `code` is the errno name
 * (`EEXIST`, `ENOENT`, `EBUSY`, `EINVAL`, `EOPNOTSUPP`, ...), `errno` its negative number, plus the operation, for a
 * transaction the index of the op that failed and that op, and the namespace. Nothing of a failed transaction is
 * applied. `isAlreadyExists` / `isNotFound` work on it.
 */
export class NftablesError extends PodnetError {
  /** The kernel's negative errno. */
  readonly errno: number;
  /** Always `sendmsg`: the kernel answers nf_tables batches there. */
  readonly syscall = 'sendmsg';
  /** The operation that failed ('run', 'tables', 'addElement', ...). */
  readonly operation: string;
  /** For a transaction: the position of the failing op in it (0-based), when the kernel named one. */
  readonly index: number | undefined;
  /** The failing op (or the object a listing was about), as the caller described it. */
  readonly object: unknown;
  /** For a transaction: the kind of the failing op ('addElement', 'addRule', ...), when the kernel named one. */
  readonly op: string | undefined;
  /**
   * For element ops: the position within the op's elements of the element the kernel refused (from its extended
   * ACK), or of the first element of the refused message when the kernel did not point at one.
   */
  readonly element: number | undefined;
  /** The namespace of the client, as a path. */
  readonly netns: string | undefined;
  constructor(message: string, code: string, errno: number, context: NftablesErrorContext, options?: { cause?: unknown }) {
    super(message, code, options);
    this.errno = errno;
    this.operation = context.operation;
    this.index = context.index;
    this.object = context.object;
    this.op = context.op;
    this.element = context.element;
    this.netns = context.netns;
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

/**
 * isGenerationChanged tells whether err is nf_tables refusing a batch planned at an older ruleset generation (an
 * NftablesGenerationError, or any ERESTART refusal): nothing was applied, and planning again may succeed.
 */
export function isGenerationChanged(err: unknown): boolean {
  return codeOf(err) === 'ERESTART';
}
