/**
 * Processes inside a network namespace: `ip`, `conntrack`, `ss`, `iptables-restore` run as a pod would see the
 * network. The child is forked by the addon, joins the namespace with setns before execve, and never goes through a
 * shell; the JS thread never changes namespace.
 */
import { type NetnsSpawnMessage, failure, netnsSpawnChannel, timing } from './diagnostics.js';
import { ProcessOutputLimitError, ProcessTimeoutError, withCallerStack } from './errors.js';
import { native, type RawSpawnResult, type RawStdinFeed } from './native.js';
import { type Netns, resolveNetns } from './netns.js';
import { checkArray, checkInteger, checkOptions, checkString, invalidType, invalidValue } from './validate.js';

/** SAFE_PATH is where a bare program name is looked up; the caller's PATH is never used. */
export const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** RunOptions are the options of runInNetns. */
export interface RunOptions {
  /** Written to the program's stdin, which is then closed. Without it stdin is closed at once. */
  stdin?: string | Buffer;
  /** Variables for the program. It gets only these and `PATH=SAFE_PATH`, never this process's environment. */
  env?: Record<string, string>;
  /**
   * Deadline in ms (default 30000), counted from the call: then the program and its process group are killed and
   * reaped. A descendant that left the group (`setsid`) is not killed.
   */
  timeoutMs?: number;
  /** Limit on stdout and stderr together (default 64 MiB): beyond it the program is killed. */
  maxOutputBytes?: number;
}

/** RunResult is how a program ended and what it wrote (decoded as UTF-8). */
export interface RunResult {
  /** The exit status, or null when a signal ended the program. */
  exitCode: number | null;
  /** The signal that ended the program ("SIGSEGV", ...), or null. */
  signal: string | null;
  stdout: string;
  stderr: string;
  /** The executed binary, after lookup on SAFE_PATH. */
  path: string;
  durationMs: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function checkArgv(argv: unknown): string[] {
  if (Array.isArray(argv) && argv.length === 0) throw invalidValue('argv', 'a non-empty array of strings', argv);
  const args = checkArray('argv', argv, 'an array of strings', (arg, name, i) => checkString(name, arg, 128 * 1024, i === 0 ? 1 : 0));
  const program = args[0]!;
  if (program.includes('/') && !program.startsWith('/')) {
    throw invalidValue('argv[0]', 'a bare program name or an absolute path', program);
  }
  return args;
}

function checkEnv(env: unknown): string[] {
  const vars = checkOptions<Record<string, string>>('env', env);
  const out = [`PATH=${SAFE_PATH}`];
  for (const [name, value] of Object.entries(vars)) {
    if (!ENV_NAME.test(name)) throw invalidValue('env', 'variable names of letters, digits and _', name);
    checkString(`env.${name}`, value, 128 * 1024, 0);
    if (name === 'PATH') out[0] = `PATH=${value}`;
    else out.push(`${name}=${value}`);
  }
  return out;
}

/**
 * StartedProgram is a program startInNetns started, its stdin not yet complete. write and end throw
 * InvalidArgumentError for data that is not a string or a Buffer.
 */
export interface StartedProgram {
  /** write appends to the program's stdin (written as it drains; nothing is written after end). */
  write(data: string | Buffer): void;
  /** end closes the program's stdin, after `data` when given. Until then the program waits for more input. */
  end(data?: string | Buffer): void;
  /** How it ended, as runInNetns resolves it; rejects as runInNetns does. */
  readonly result: Promise<RunResult>;
}

interface Launched {
  pending: Promise<RawSpawnResult>;
  args: string[];
  netnsPath: string | undefined;
  timeoutMs: number;
  maxOutput: number;
  /** performance.now() at the start when `podnet:netns:spawn` has subscribers, else -1. */
  start: number;
}

function toStdin(data: unknown, name = 'stdin'): Buffer {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (Buffer.isBuffer(data)) return data;
  throw invalidType(name, 'a string or a Buffer', data);
}

/** launch checks everything, starts the program and hands back what finish() needs. */
function launch(netns: Netns | string | undefined, argv: readonly string[], options: RunOptions | undefined, feed?: RawStdinFeed): Launched {
  const args = checkArgv(argv).slice();
  const opts = checkOptions<RunOptions>('options', options);
  const env = checkEnv(opts.env);
  const timeoutMs = opts.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : checkInteger('timeoutMs', opts.timeoutMs, 1, 2 ** 31 - 1);
  const maxOutput =
    opts.maxOutputBytes === undefined ? DEFAULT_MAX_OUTPUT : checkInteger('maxOutputBytes', opts.maxOutputBytes, 0, 2 ** 31 - 1);
  if (feed && opts.stdin !== undefined) throw invalidValue('options.stdin', 'no stdin option (write to the started program)', opts.stdin);
  const stdin = opts.stdin === undefined ? null : toStdin(opts.stdin);

  const start = netnsSpawnChannel.hasSubscribers ? performance.now() : -1;
  let resolved;
  try {
    resolved = resolveNetns(netns);
  } catch (err) {
    if (start >= 0) publishSpawn(args, typeof netns === 'string' ? netns : netns?.path, start, undefined, err);
    throw err;
  }
  try {
    // The addon duplicates the fd before returning, so an owned handle can be closed right away.
    const pending = native.spawnInNetns(resolved.netns?.fd ?? -1, args, env, stdin, timeoutMs, maxOutput, feed);
    return { pending, args, netnsPath: resolved.netns?.path, timeoutMs, maxOutput, start };
  } catch (err) {
    if (start >= 0) publishSpawn(args, resolved.netns?.path, start, undefined, err);
    throw err;
  } finally {
    if (resolved.owned) resolved.netns?.close();
  }
}

/** publishSpawn publishes how a run ended on `podnet:netns:spawn`: with its result, or its error. */
function publishSpawn(argv: readonly string[], netns: string | undefined, start: number, result: RunResult | undefined, error?: unknown): void {
  const message: NetnsSpawnMessage = result
    ? { argv, netns, exitCode: result.exitCode, signal: result.signal, ...timing(start, result.exitCode === 0 ? 'ok' : 'ERR_EXIT_STATUS') }
    : { argv, netns, exitCode: undefined, signal: undefined, ...failure(start, error) };
  netnsSpawnChannel.publish(message);
}

async function finish(launched: Launched, caller: Error): Promise<RunResult> {
  if (launched.start < 0) return settle(launched, caller);
  let result: RunResult;
  try {
    result = await settle(launched, caller);
  } catch (err) {
    publishSpawn(launched.args, launched.netnsPath, launched.start, undefined, err);
    throw err;
  }
  publishSpawn(launched.args, launched.netnsPath, launched.start, result);
  return result;
}

async function settle(launched: Launched, caller: Error): Promise<RunResult> {
  const { pending, args, timeoutMs, maxOutput } = launched;
  const raw = await withCallerStack(pending, caller);
  const context = { argv: args, netns: launched.netnsPath, stdout: raw.stdout.toString('utf8'), stderr: raw.stderr.toString('utf8') };
  if (raw.timedOut) throw new ProcessTimeoutError(context, timeoutMs);
  if (raw.outputLimitExceeded) throw new ProcessOutputLimitError(context, maxOutput);
  return {
    exitCode: raw.exitCode,
    signal: raw.signal,
    stdout: context.stdout,
    stderr: context.stderr,
    path: raw.path,
    durationMs: raw.durationMs,
  };
}

/**
 * runInNetns runs argv inside netns (a Netns, a namespace file path, or undefined for this process's namespace) and
 * resolves how it ended, whatever its exit status. Throws InvalidArgumentError for bad arguments; rejects with a
 * PodnetSystemError when the program cannot be started (`ENOENT` with syscall `execve` and the program as `path`,
 * or syscall `setns`), ProcessTimeoutError (`ETIMEDOUT`) after the deadline, ProcessOutputLimitError after the
 * output limit. The run ends on the program's own exit, with the output that came until then: descendants still in
 * its process group are killed then, and a descendant that left the group (`setsid`) keeps running in the namespace.
 * A running program holds no thread (the event loop watches it); only its start runs on a libuv pool thread.
 */
export async function runInNetns(
  netns: Netns | string | undefined,
  argv: readonly string[],
  options?: RunOptions,
): Promise<RunResult> {
  const caller = new Error('runInNetns');
  return finish(launch(netns, argv, options), caller);
}

/**
 * startInNetns starts argv as runInNetns does, but its stdin stays open for write() and end(): the program starts
 * (exec, linking, its own setup) while the caller still works out its input. The deadline runs from the call.
 * Throws InvalidArgumentError for bad arguments (and for an options.stdin). Until end() the program may wait for
 * input (holding no thread): end it on every path, or it runs into its deadline.
 */
export function startInNetns(netns: Netns | string | undefined, argv: readonly string[], options?: Omit<RunOptions, 'stdin'>): StartedProgram {
  const caller = new Error('startInNetns');
  const feed = new native.StdinFeed();
  let launched: Launched;
  try {
    launched = launch(netns, argv, options, feed);
  } catch (err) {
    feed.close(); // refused before any program started: nothing else would release its eventfd until a GC
    throw err;
  }
  const result = finish(launched, caller);
  return {
    write(data) {
      feed.write(toStdin(data, 'data'));
    },
    end(data) {
      if (data !== undefined) feed.write(toStdin(data, 'data'));
      feed.end();
    },
    result,
  };
}
