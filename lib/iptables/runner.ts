/**
 * How the Iptables client runs iptables-restore and iptables-save: a small interface, implemented for real by
 * NetnsRunner (runInNetns: setns in the forked child, no shell) and in memory by FakeIptables (podnet/testing).
 */
import type { Netns } from '../netns.js';
import { runInNetns } from '../spawn.js';

/** IptablesRunResult is how one run ended. */
export interface IptablesRunResult {
  /** Exit status; -1 when a signal ended the program. */
  exitCode: number;
  stdout: string;
  stderr: string;
}

/**
 * IptablesRunner runs one iptables program: argv[0] is e.g. `iptables-nft-restore`, stdin the restore input.
 * It rejects when the program cannot be started (PodnetSystemError `ENOENT`) or passes its deadline
 * (ProcessTimeoutError); a program that fails resolves with its exit code.
 */
export interface IptablesRunner {
  run(argv: readonly string[], stdin?: string): Promise<IptablesRunResult>;
}

/** NetnsRunnerOptions are the options of NetnsRunner. */
export interface NetnsRunnerOptions {
  /** Deadline of each run in ms; the program is killed with its process group after it. */
  timeoutMs: number;
  /** Extra environment (XTABLES_LOCKFILE, ...); the program otherwise gets only PATH. */
  env?: Record<string, string>;
}

/** NetnsRunner runs iptables programs inside a network namespace (or this process's own when undefined). */
export class NetnsRunner implements IptablesRunner {
  readonly #netns: Netns | string | undefined;
  readonly #options: NetnsRunnerOptions;

  constructor(netns: Netns | string | undefined, options: NetnsRunnerOptions) {
    this.#netns = netns;
    this.#options = options;
  }

  async run(argv: readonly string[], stdin?: string): Promise<IptablesRunResult> {
    const result = await runInNetns(this.#netns, argv, {
      ...(stdin === undefined ? {} : { stdin }),
      env: { LC_ALL: 'C', ...this.#options.env },
      timeoutMs: this.#options.timeoutMs,
    });
    const killed = result.signal === null ? '' : `\n${argv[0] ?? ''}: killed by ${result.signal}\n`;
    return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr + killed };
  }
}
