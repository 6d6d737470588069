// What the fault tests check about this process's children, and a storm of signals aimed at each of its threads.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync } from 'node:fs';
import { constants } from 'node:os';

/** A process's state and parent, from /proc/<pid>/stat (comm may hold spaces and parentheses). */
function stat(pid: string): { state: string; ppid: number; comm: string } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // gone meanwhile
  }
  const close = text.lastIndexOf(')');
  const [state, ppid] = text.slice(close + 2).split(' ');
  return { state: state!, ppid: Number(ppid), comm: text.slice(text.indexOf('(') + 1, close) };
}

/** children lists this process's child processes (zombies too) with their state and command name. */
export function children(): { pid: number; state: string; comm: string }[] {
  const out: { pid: number; state: string; comm: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(name);
    if (s && s.ppid === process.pid) out.push({ pid: Number(name), state: s.state, comm: s.comm });
  }
  return out;
}

/** zombies lists this process's children that exited and were not reaped. */
export function zombies(): number[] {
  return children()
    .filter((c) => c.state === 'Z')
    .map((c) => c.pid);
}

/** What a storm did: signals sent with tgkill, and to how many distinct threads. */
export interface StormReport {
  sent: number;
  threads: number;
}

// tgkill(2) on every thread of the target, over and over, with a pause of 0.2 ms per sweep so that a 2-core machine
// still runs the target. libc.tgkill exists since glibc 2.30; the raw syscall otherwise (x86_64 234, aarch64 131).
const STORM = String.raw`
import ctypes, json, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
pid, sig = int(sys.argv[1]), int(sys.argv[2])
if hasattr(libc, 'tgkill'):
    tgkill = libc.tgkill
else:
    nr = {'x86_64': 234, 'aarch64': 131}[os.uname().machine]
    tgkill = lambda p, t, s: libc.syscall(nr, p, t, s)
running = True
def stop(*_):
    global running
    running = False
signal.signal(signal.SIGTERM, stop)
sent, tids = 0, set()
print('ready', flush=True)
while running:
    try:
        names = os.listdir('/proc/%d/task' % pid)
    except FileNotFoundError:
        break
    for t in names:
        if tgkill(pid, int(t), sig) == 0:
            sent += 1
            tids.add(t)
    time.sleep(0.0002)
print(json.dumps({'sent': sent, 'threads': len(tids)}), flush=True)
`;

/**
 * signalStorm sends `signal` to every thread of this process (tgkill, so the libuv pool threads, the short-lived
 * setns threads and the JS thread all get their share) until stop() is called, which resolves with what was sent.
 * A handler for the signal must be installed first: the default action of SIGUSR2 ends the process.
 */
export async function signalStorm(signal: NodeJS.Signals): Promise<{ stop: () => Promise<StormReport> }> {
  if (process.listenerCount(signal) === 0) throw new Error(`install a ${signal} handler before the storm`);
  const number = String(constants.signals[signal]);
  const child = spawn('python3', ['-c', STORM, String(process.pid), number], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  // 'close': exited and its stdout read to the end.
  const closed = once(child, 'close');
  while (!out.includes('ready\n')) {
    await Promise.race([once(child.stdout, 'data'), closed]);
    if (child.exitCode !== null) throw new Error(`signal storm ended at once (exit ${child.exitCode})`);
  }
  return {
    stop: async () => {
      child.kill('SIGTERM');
      await closed;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line) throw new Error(`signal storm printed no report: ${out}`);
      return JSON.parse(line) as StormReport;
    },
  };
}
