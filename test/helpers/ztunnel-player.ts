// Runs test/fixtures/ztunnel-player.py, a stand-in for ztunnel written apart from podnet, as a child process and
// collects the JSON events it prints (one per line). Tests stop() it in afterEach: stop() always reaps the child.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** The player program's path. */
export const ZTUNNEL_PLAYER_SCRIPT = fileURLToPath(new URL('../fixtures/ztunnel-player.py', import.meta.url));

/** One event the player printed; see the script's docstring for each event's fields. */
export interface PlayerEvent {
  event: string;
  uid?: string | null;
  [field: string]: unknown;
}

export interface ZtunnelPlayerOptions {
  /** The agent's ZDS socket to connect to. */
  socketPath: string;
  /** The ZdsHello version to send (default 1, V1). */
  version?: number;
  /** The port each workload's listener binds in the workload's netns (default 15006; 0 picks one). */
  port?: number;
  /** Ack every Add with this error. */
  failAdd?: string;
  /** Seconds to retry connecting (default 10). */
  connectTimeoutSeconds?: number;
  /** Connect again after the agent closed the connection, keeping the workloads (default: exit 0 after eof). */
  reconnect?: boolean;
  /**
   * Run the player inside this named netns (`ip netns exec NAME`) instead of the test's own: what it does in its
   * own namespace then stays in a throwaway one.
   */
  netns?: string;
}

/** How the child ended: its exit code, or the signal that killed it. */
export interface PlayerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ZtunnelPlayer {
  /** The child's pid. */
  readonly pid: number;
  /** Every event so far, in order. */
  readonly events: PlayerEvent[];
  /** Everything the child wrote to stderr so far. */
  readonly stderr: () => string;
  /**
   * waitFor resolves the first event (from the start, or from index `from` on) that matches predicate, waiting up to
   * timeoutMs (default 20000). Rejects at the deadline, or when the child exits first, with the events seen and the
   * stderr in the message.
   */
  waitFor(predicate: (e: PlayerEvent) => boolean, timeoutMs?: number, from?: number): Promise<PlayerEvent>;
  /** kill sends signal to the child (no waiting). */
  kill(signal: NodeJS.Signals): void;
  /** exited resolves once the child has exited and its output is read. */
  readonly exited: Promise<PlayerExit>;
  /** stop sends SIGTERM, then SIGKILL after timeoutMs (default 5000), and resolves once the child is reaped. */
  stop(timeoutMs?: number): Promise<PlayerExit>;
}

/** startZtunnelPlayer spawns the player (argv, no shell) with its stdout parsed into events. */
export function startZtunnelPlayer(options: ZtunnelPlayerOptions): ZtunnelPlayer {
  const argv = [ZTUNNEL_PLAYER_SCRIPT, '--socket', options.socketPath];
  if (options.version !== undefined) argv.push('--version', String(options.version));
  if (options.port !== undefined) argv.push('--port', String(options.port));
  if (options.failAdd !== undefined) argv.push('--fail-add', options.failAdd);
  if (options.connectTimeoutSeconds !== undefined) argv.push('--connect-timeout', String(options.connectTimeoutSeconds));
  if (options.reconnect) argv.push('--reconnect');
  // `ip netns exec` execs python3 in place: the pid, and the signals sent to it, are the player's.
  const [command, args] =
    options.netns === undefined ? ['python3', argv] : ['ip', ['netns', 'exec', options.netns, 'python3', ...argv]];
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });

  const events: PlayerEvent[] = [];
  const listeners = new Set<() => void>();
  let stderr = '';
  let ended: PlayerExit | undefined;
  let spawnError: Error | undefined;
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };

  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (stderr += chunk));
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let event: PlayerEvent;
    try {
      event = JSON.parse(line) as PlayerEvent;
    } catch {
      event = { event: 'unparsed', line };
    }
    events.push(event);
    notify();
  });
  const exited = new Promise<PlayerExit>((resolve) => {
    child.on('error', (err) => {
      spawnError = err;
      if (child.pid === undefined) {
        ended = { code: null, signal: null };
        resolve(ended);
        notify();
      }
    });
    // 'close': the process exited and its stdout and stderr are drained, so every event is in.
    child.on('close', (code, signal) => {
      ended = { code, signal };
      resolve(ended);
      notify();
    });
  });

  const describe = (): string =>
    `events so far:\n${events.map((e) => `  ${JSON.stringify(e)}`).join('\n') || '  (none)'}\n` +
    `stderr:\n${stderr || '  (empty)'}${spawnError ? `\nspawn error: ${spawnError.message}` : ''}`;

  const waitFor = (predicate: (e: PlayerEvent) => boolean, timeoutMs = 20_000, from = 0): Promise<PlayerEvent> =>
    new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const check = (): void => {
        const found = events.slice(from).find(predicate);
        if (found !== undefined) {
          finish();
          resolve(found);
        } else if (ended !== undefined) {
          finish();
          reject(new Error(`ztunnel-player exited (${JSON.stringify(ended)}) before the awaited event\n${describe()}`));
        }
      };
      const finish = (): void => {
        listeners.delete(check);
        clearTimeout(timer);
      };
      timer = setTimeout(() => {
        finish();
        reject(new Error(`ztunnel-player: no awaited event within ${timeoutMs} ms\n${describe()}`));
      }, timeoutMs);
      listeners.add(check);
      check();
    });

  const kill = (signal: NodeJS.Signals): void => {
    if (ended === undefined && child.exitCode === null && child.signalCode === null) child.kill(signal);
  };

  const stop = async (timeoutMs = 5000): Promise<PlayerExit> => {
    kill('SIGTERM');
    const timer = setTimeout(() => kill('SIGKILL'), timeoutMs);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  };

  return {
    pid: child.pid ?? -1,
    events,
    stderr: () => stderr,
    waitFor,
    kill,
    exited,
    stop,
  };
}
