// An IptablesRunner for fault tests: the real programs in a namespace (NetnsRunner), except that the next
// iptables-restore given input can be intercepted: it is started for real, and a hook decides what of its input it
// gets and what happens to it (killed mid-transaction, left waiting into its deadline).
import { readFileSync } from 'node:fs';

import { NetnsRunner, type IptablesRunResult, type IptablesRunner, type IptablesStartedRun } from '../../../lib/index.js';
import { children } from './process.js';

/** What a hook gets: the input the client meant to send, and the started program (write, end, result). */
export type RestoreHook = (input: string, program: IptablesStartedRun) => Promise<void>;

export class InterceptingRunner implements IptablesRunner {
  readonly #inner: NetnsRunner;
  /** Runs the intercepted restores: with their own deadline when interceptTimeoutMs is given. */
  readonly #intercepting: NetnsRunner;
  #hook: RestoreHook | undefined;
  #when: (input: string) => boolean = () => true;
  /** Restores that went through a hook. */
  intercepted = 0;

  constructor(netns: string, options: { timeoutMs: number; env?: Record<string, string>; interceptTimeoutMs?: number }) {
    const { interceptTimeoutMs, ...inner } = options;
    this.#inner = new NetnsRunner(netns, inner);
    this.#intercepting = new NetnsRunner(netns, { ...inner, timeoutMs: interceptTimeoutMs ?? inner.timeoutMs });
  }

  /**
   * interceptNextRestore routes the next iptables-restore run with input through hook; with `when`, the next one
   * whose input it accepts (the others run as usual).
   */
  interceptNextRestore(hook: RestoreHook, when: (input: string) => boolean = () => true): void {
    this.#hook = hook;
    this.#when = when;
  }

  async run(argv: readonly string[], stdin?: string): Promise<IptablesRunResult> {
    const hook = this.#hook;
    if (!hook || stdin === undefined || !argv[0]!.endsWith('-restore') || !this.#when(stdin)) return this.#inner.run(argv, stdin);
    this.#hook = undefined;
    this.intercepted++;
    const program = this.#intercepting.start(argv);
    if (!program) throw new Error('NetnsRunner.start refused to start the restore');
    try {
      await hook(stdin, program);
    } finally {
      program.end('');
    }
    return program.result;
  }
}

/** withoutCommit is restore input up to (not including) its last COMMIT: a transaction left open. */
export function withoutCommit(input: string): string {
  const at = input.lastIndexOf('COMMIT\n');
  if (at < 0) throw new Error(`no COMMIT in restore input:\n${input}`);
  return input.slice(0, at);
}

/** The one iptables child process of this process (the intercepted restore), once it has exec'd. */
export async function restoreProcess(): Promise<number> {
  for (let i = 0; i < 4000; i++) {
    const found = children().filter((c) => c.comm.startsWith('iptables') && c.state !== 'Z');
    if (found.length > 1) throw new Error(`more than one iptables child: ${JSON.stringify(found)}`);
    if (found.length === 1) return found[0]!.pid;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error('the restore never appeared as a child process');
}

/** How a process waits, and how much it has read: /proc/<pid>/{stat,wchan,io}. */
export function readState(pid: number): { state: string; wchan: string; rchar: number } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
    const wchan = readFileSync(`/proc/${pid}/wchan`, 'utf8');
    const rchar = Number(/^rchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
    return { state, wchan, rchar };
  } catch {
    return undefined;
  }
}

/**
 * waitingForInput resolves once pid sleeps in a pipe read (its stdin is empty: it wants more) having read at least
 * `bytes`, three looks in a row. Polls by count, failing after about 20 s of never seeing it.
 */
export async function waitingForInput(pid: number, bytes: number): Promise<void> {
  let inARow = 0;
  for (let i = 0; i < 4000 && inARow < 3; i++) {
    const s = readState(pid);
    if (!s) throw new Error(`restore ${pid} ended before it was killed`);
    inARow = s.state === 'S' && /pipe/.test(s.wchan) && s.rchar >= bytes ? inARow + 1 : 0;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (inARow < 3) throw new Error(`restore ${pid} never waited for input: ${JSON.stringify(readState(pid))}`);
}

/** rawSave runs the backend's iptables-save in the namespace: its rules, without the comment lines (timestamps). */
export async function rawSave(run: IptablesRunner, backend: 'nft' | 'legacy'): Promise<string> {
  const result = await run.run([`iptables-${backend}-save`]);
  if (result.exitCode !== 0) throw new Error(`iptables-${backend}-save failed: ${result.stderr}`);
  return result.stdout
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join('\n');
}
