// Whether podnet's handles keep a process alive, seen from outside in a child process (loop_alive.mjs): an idle
// server and connection do not; an awaited accept and an awaited receive do.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { SeqpacketSocket } from '../../lib/unix/index.js';
import { checkFdsPerTest, socketDir } from './helpers/fds.js';
import { bytes } from './helpers/pair.js';

const nextPath = socketDir();
const script = fileURLToPath(new URL('./helpers/loop_alive.mjs', import.meta.url));

function start(mode: string, path: string) {
  const child = spawn(process.execPath, [script, mode, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  // A child the loop wrongly keeps alive is killed, so that the test fails instead of hanging.
  const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const exit = (once(child, 'close') as Promise<[number | null, string | null]>).finally(() => clearTimeout(guard));
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return { exit, next: async () => (await lines.next()).value as string | undefined };
}

describe('the event loop (any user)', () => {
  checkFdsPerTest();

  it('lets a process with an idle server and idle connections exit', async () => {
    const child = start('idle', nextPath());
    expect(await child.next()).toBe('idle ping');
    expect(await child.exit).toEqual([0, null]);
  });

  it('keeps a process alive while it awaits accept and then receive', async () => {
    const path = nextPath();
    const child = start('accept', path);
    expect(await child.next()).toBe('listening');
    using client = await SeqpacketSocket.connect(path, { timeoutMs: 20_000 });
    expect(await child.next()).toBe('accepted');
    await client.send(bytes('wake'));
    expect(await child.next()).toBe('received wake');
    expect(await child.exit).toEqual([0, null]);
  });
});
