/**
 * How the Iptables client runs iptables-restore and iptables-save: a small interface, implemented for real by
 * NetnsRunner (runInNetns: setns in the forked child, no shell) and in memory by FakeIptables (podnet/testing).
 */
import { failure, iptablesRunChannel, timing, type IptablesRunKind, type IptablesRunMessage } from '../diagnostics.js';
import { native } from '../native.js';
import type { Netns } from '../netns.js';
import { type RunResult, runInNetns, startInNetns } from '../spawn.js';

/** IptablesRunResult is how one run ended. */
export interface IptablesRunResult {
  /** Exit status; -1 when a signal ended the program. */
  exitCode: number;
  /** What the program wrote to stdout. */
  stdout: string;
  /** What it wrote to stderr (and, when a signal ended it, a line naming the signal). */
  stderr: string;
}

/**
 * IptablesRunner runs one iptables program: argv[0] is e.g. `iptables-nft-restore`, stdin the restore input.
 * It rejects when the program cannot be started (PodnetSystemError `ENOENT`) or passes its deadline
 * (ProcessTimeoutError); a program that fails resolves with its exit code.
 */
export interface IptablesRunner {
  /** run runs argv with stdin (if any) and resolves how it ended; rejects as the interface says. */
  run(argv: readonly string[], stdin?: string): Promise<IptablesRunResult>;
  /**
   * start, when implemented, starts a program whose stdin is given later by end(), or returns undefined when it
   * cannot now (the caller then uses run). Iptables.apply starts iptables-restore this way while iptables-save runs.
   */
  start?(argv: readonly string[]): IptablesStartedRun | undefined;
}

/** IptablesStartedRun is a program started by IptablesRunner.start. */
export interface IptablesStartedRun {
  /** write gives the program the next part of its stdin. */
  write(stdin: string): void;
  /** end gives the program the rest of its stdin and closes it. Call it on every path. */
  end(stdin: string): void;
  /** How the program ended; rejects as IptablesRunner.run does. */
  readonly result: Promise<IptablesRunResult>;
}

// A started program waiting for its input holds a libuv pool thread, and what it waits for (an iptables-save) needs
// another. One at a time in the process, and none when the pool has a single thread, so that waiting programs can
// never take every thread while the runs they wait for queue behind them.
const POOL_SIZE = Number(process.env.UV_THREADPOOL_SIZE ?? 4) || 4;
let startedWaiting = 0;

/** NetnsRunnerOptions are the options of NetnsRunner. */
export interface NetnsRunnerOptions {
  /** Deadline of each run in ms; the program is killed with its process group after it. */
  timeoutMs: number;
  /** Extra environment (XTABLES_LOCKFILE, ...); the program otherwise gets only PATH. */
  env?: Record<string, string>;
  /**
   * The xtables lock file, when a legacy restore must not wait for it: the runner takes the lock itself without
   * waiting and runs the restore under it with a private lock file of its own (iptables-legacy-restore has no form
   * that does not wait: `--wait=0` and no `--wait` both wait forever). A held lock ends the run at once as the
   * program ends a timed-out wait: exit status 4 and its "Another app is currently holding the xtables lock".
   */
  noWaitLockFile?: string;
}

const LEGACY_RESTORE = new Set(['iptables-legacy-restore', 'ip6tables-legacy-restore']);

/** A lock the runner holds for one run, with the environment that points the program at the private lock file. */
interface LockHold {
  env: Record<string, string>;
  release(): void;
}

/** lockBusy is how iptables-legacy-restore ends when the lock is held and it waits no longer. */
function lockBusy(file: string): IptablesRunResult {
  return {
    exitCode: 4,
    stdout: '',
    stderr: `Can't lock ${file}: Resource temporarily unavailable\nAnother app is currently holding the xtables lock.\n`,
  };
}

/** NetnsRunner runs iptables programs inside a network namespace (or this process's own when undefined). */
export class NetnsRunner implements IptablesRunner {
  readonly #netns: Netns | string | undefined;
  readonly #options: NetnsRunnerOptions;

  constructor(netns: Netns | string | undefined, options: NetnsRunnerOptions) {
    this.#netns = netns;
    this.#options = options;
  }

  /**
   * run runs argv in the runner's namespace with `LC_ALL=C` (iptables' messages are parsed). Rejects as runInNetns
   * does: PodnetSystemError (`ENOENT` for a program that is not installed or a namespace that is gone), or
   * ProcessTimeoutError after timeoutMs.
   */
  async run(argv: readonly string[], stdin?: string): Promise<IptablesRunResult> {
    const hold = this.#lock(argv);
    if (hold === 'busy') return lockBusy(this.#options.noWaitLockFile!);
    try {
      const result = await runInNetns(this.#netns, argv, {
        ...(stdin === undefined ? {} : { stdin }),
        env: { LC_ALL: 'C', ...this.#options.env, ...hold?.env },
        timeoutMs: this.#options.timeoutMs,
      });
      return toRunResult(argv, result);
    } finally {
      hold?.release();
    }
  }

  /**
   * #lock takes the xtables lock for a legacy restore when the runner must not wait for it: undefined when the run
   * needs no lock of the runner's, 'busy' when another holds it. Throws PodnetSystemError when the lock file cannot
   * be opened.
   */
  #lock(argv: readonly string[]): LockHold | 'busy' | undefined {
    const file = this.#options.noWaitLockFile;
    if (file === undefined || !LEGACY_RESTORE.has(argv[0] ?? '')) return undefined;
    let fd: number;
    try {
      fd = native.xtablesTryLock(file);
    } catch (err) {
      if ((err as { code?: unknown }).code === 'EWOULDBLOCK' || (err as { code?: unknown }).code === 'EAGAIN') return 'busy';
      throw err;
    }
    let held = true;
    return {
      env: { XTABLES_LOCKFILE: native.xtablesPrivateLockPath() },
      release() {
        if (!held) return;
        held = false;
        native.xtablesUnlock(fd);
      },
    };
  }

  /**
   * start starts argv with its stdin to come, or returns undefined while another started program waits for its input
   * (or when the libuv pool has a single thread). Throws as startInNetns does; its result rejects as run does.
   */
  start(argv: readonly string[]): IptablesStartedRun | undefined {
    if (POOL_SIZE < 2 || startedWaiting > 0) return undefined;
    const hold = this.#lock(argv);
    if (hold === 'busy') {
      const busy = lockBusy(this.#options.noWaitLockFile!);
      return { write() {}, end() {}, result: Promise.resolve(busy) };
    }
    let program: ReturnType<typeof startInNetns>;
    try {
      program = startInNetns(this.#netns, argv, { env: { LC_ALL: 'C', ...this.#options.env, ...hold?.env }, timeoutMs: this.#options.timeoutMs });
    } catch (err) {
      hold?.release();
      throw err;
    }
    startedWaiting++;
    let ended = false;
    const release = () => {
      if (ended) return;
      ended = true;
      startedWaiting--;
    };
    // The slot is the waiting; a program that ends before its input came (it could not start) frees it too. The
    // lock, when the runner holds one, is the program's whole life.
    const result = program.result.then(
      (r) => (release(), hold?.release(), toRunResult(argv, r)),
      (err: unknown) => {
        release();
        hold?.release();
        throw err;
      },
    );
    return {
      write(stdin: string) {
        program.write(stdin);
      },
      end(stdin: string) {
        program.end(stdin);
        release();
      },
      result,
    };
  }
}

function toRunResult(argv: readonly string[], result: RunResult): IptablesRunResult {
  const killed = result.signal === null ? '' : `\n${argv[0] ?? ''}: killed by ${result.signal}\n`;
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr + killed };
}

/**
 * observedRunner is runner with each run published on `podnet:iptables:run` (lib/diagnostics.ts) while that channel
 * has subscribers; it has a start() exactly when runner has one. Iptables wraps whatever runner it is given, so the
 * real programs, FakeIptables and a caller's own runner publish alike.
 */
export function observedRunner(runner: IptablesRunner): IptablesRunner {
  const observed: IptablesRunner = {
    run(argv, stdin) {
      if (!iptablesRunChannel.hasSubscribers) return runner.run(argv, stdin);
      const start = performance.now();
      const bytes = stdin === undefined ? 0 : Buffer.byteLength(stdin);
      return published(argv, start, () => bytes, runner.run(argv, stdin));
    },
  };
  const startRun = runner.start?.bind(runner);
  if (startRun) {
    observed.start = (argv) => {
      const started = startRun(argv);
      if (!started || !iptablesRunChannel.hasSubscribers) return started;
      const start = performance.now();
      let bytes = 0;
      return {
        write(stdin) {
          bytes += Buffer.byteLength(stdin);
          started.write(stdin);
        },
        end(stdin) {
          bytes += Buffer.byteLength(stdin);
          started.end(stdin);
        },
        result: published(argv, start, () => bytes, started.result),
      };
    };
  }
  return observed;
}

function runKind(argv: readonly string[]): IptablesRunKind {
  const program = argv[0] ?? '';
  if (argv.includes('--version')) return 'other';
  return program.endsWith('-restore') ? 'restore' : program.endsWith('-save') ? 'save' : 'other';
}

/** published passes result through, publishing how the run ended. */
function published(argv: readonly string[], start: number, bytes: () => number, result: Promise<IptablesRunResult>): Promise<IptablesRunResult> {
  const about = { kind: runKind(argv), argv: [...argv] };
  return result.then(
    (r) => {
      const message: IptablesRunMessage = {
        ...about,
        inputBytes: bytes(),
        exitCode: r.exitCode,
        ...timing(start, r.exitCode === 0 ? 'ok' : 'ERR_EXIT_STATUS'),
      };
      iptablesRunChannel.publish(message);
      return r;
    },
    (err: unknown) => {
      const message: IptablesRunMessage = { ...about, inputBytes: bytes(), exitCode: undefined, ...failure(start, err) };
      iptablesRunChannel.publish(message);
      throw err;
    },
  );
}
