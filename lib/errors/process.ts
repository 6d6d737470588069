/** Errors of child processes run in a namespace (runInNetns): killed past their deadline or output limit. */
import { PodnetError } from './base.js';

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

