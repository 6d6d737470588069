/** Errors of iptables-restore and iptables-save runs, with the failure classified and located in the input. */
import { PodnetError } from './base.js';

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
