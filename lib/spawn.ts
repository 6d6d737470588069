/**
 * Processes inside a network namespace: `ip`, `conntrack`, `ss`, `iptables-restore` run as a pod would see the
 * network. The child is forked by the addon, joins the namespace with setns before execve, and never goes through a
 * shell; the JS thread never changes namespace.
 */
import { ProcessOutputLimitError, ProcessTimeoutError, withCallerStack } from './errors.js';
import { native } from './native.js';
import { type Netns, resolveNetns } from './netns.js';
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from './validate.js';

/** SAFE_PATH is where a bare program name is looked up; the caller's PATH is never used. */
export const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** RunOptions are the options of runInNetns. */
export interface RunOptions {
  /** Written to the program's stdin, which is then closed. Without it stdin is closed at once. */
  stdin?: string | Buffer;
  /** Variables for the program. It gets only these and `PATH=SAFE_PATH`, never this process's environment. */
  env?: Record<string, string>;
  /** Deadline in ms (default 30000): then the program and its process group are killed and reaped. */
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
  if (!Array.isArray(argv)) throw invalidType('argv', 'an array of strings', argv);
  if (argv.length === 0) throw invalidValue('argv', 'a non-empty array of strings', argv);
  argv.forEach((arg, i) => checkString(`argv[${i}]`, arg, 128 * 1024, i === 0 ? 1 : 0));
  const program = argv[0] as string;
  if (program.includes('/') && !program.startsWith('/')) {
    throw invalidValue('argv[0]', 'a bare program name or an absolute path', program);
  }
  return argv as string[];
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
 * runInNetns runs argv inside netns (a Netns, a namespace file path, or undefined for this process's namespace) and
 * resolves how it ended, whatever its exit status. Throws InvalidArgumentError for bad arguments; rejects with a
 * PodnetSystemError when the program cannot be started (`ENOENT` with syscall `execve` and the program as `path`,
 * or syscall `setns`), ProcessTimeoutError (`ETIMEDOUT`) after the deadline, ProcessOutputLimitError after the
 * output limit. Each call occupies a libuv pool thread until the program ends.
 */
export async function runInNetns(
  netns: Netns | string | undefined,
  argv: readonly string[],
  options?: RunOptions,
): Promise<RunResult> {
  const caller = new Error('runInNetns');
  const args = checkArgv(argv).slice();
  const opts = checkOptions<RunOptions>('options', options);
  const env = checkEnv(opts.env);
  const timeoutMs = opts.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : checkInteger('timeoutMs', opts.timeoutMs, 1, 2 ** 31 - 1);
  const maxOutput =
    opts.maxOutputBytes === undefined ? DEFAULT_MAX_OUTPUT : checkInteger('maxOutputBytes', opts.maxOutputBytes, 0, 2 ** 31 - 1);
  let stdin: Buffer | null = null;
  if (opts.stdin !== undefined) {
    if (typeof opts.stdin === 'string') stdin = Buffer.from(opts.stdin, 'utf8');
    else if (Buffer.isBuffer(opts.stdin)) stdin = opts.stdin;
    else throw invalidType('stdin', 'a string or a Buffer', opts.stdin);
  }

  const resolved = resolveNetns(netns);
  let pending: ReturnType<typeof native.spawnInNetns>;
  try {
    // The addon duplicates the fd before returning, so an owned handle can be closed right away.
    pending = native.spawnInNetns(resolved.netns?.fd ?? -1, args, env, stdin, timeoutMs, maxOutput);
  } finally {
    if (resolved.owned) resolved.netns?.close();
  }
  const raw = await withCallerStack(pending, caller);
  const context = { argv: args, netns: resolved.netns?.path, stdout: raw.stdout.toString('utf8'), stderr: raw.stderr.toString('utf8') };
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
