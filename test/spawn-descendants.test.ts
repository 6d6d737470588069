// What a run does with the processes its program starts: it ends on the program's own exit, kills what is left in
// the program's process group, and leaves alone (as documented) a descendant that left the group with setsid.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { ProcessTimeoutError, runInNetns } from '../lib/index.js';
import { rejection } from './helpers/rejection.js';
import { alive, until } from './helpers/processes.js';

// Far beyond what the test waits for: a run that needs it shows it waited for a descendant.
const DEADLINE_MS = 20_000;

const dir = mkdtempSync(join(tmpdir(), 'podnet-spawn-desc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));


function killIfAlive(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** A shell line that starts `sleep 60` in a session of its own and prints its pid once it is there. */
const SETSID_CHILD = `setsid -f sh -c 'echo $$; exec sleep 60' | head -n 1`;

describe('runInNetns and the program\'s descendants', () => {
  it('resolves on the program\'s exit though a background child keeps stdout open, and kills that child', async () => {
    // sleep outlives the deadline, so a run that waits for stdout to close rejects instead.
    const result = await runInNetns(undefined, ['sh', '-c', 'sleep 60 & echo $!'], { timeoutMs: DEADLINE_MS });
    expect(result).toMatchObject({ exitCode: 0, signal: null, stderr: '' });
    const pid = Number(result.stdout.trim());
    expect(pid).toBeGreaterThan(0);
    try {
      expect(await until(() => !alive(pid), 10_000)).toBe(true);
    } finally {
      killIfAlive(pid);
    }
  });

  it('keeps all the output the program wrote before it exited', async () => {
    const script = 'sleep 60 & i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done; echo done >&2';
    const result = await runInNetns(undefined, ['sh', '-c', script], { timeoutMs: DEADLINE_MS });
    const lines = result.stdout.trim().split('\n');
    expect(lines.length).toBe(2000);
    expect(lines[1999]).toBe('line 1999');
    expect(result.stderr).toBe('done\n');
  });

  it('leaves a setsid descendant running after the program exits (documented), without waiting for it', async () => {
    // The descendant prints its pid only once it is in its own session (setsid -f forks, then the shell it runs
    // echoes): a pid printed before its setsid() would race the kill of the program's group.
    const result = await runInNetns(undefined, ['sh', '-c', SETSID_CHILD], { timeoutMs: DEADLINE_MS });
    const pid = Number(result.stdout.trim());
    try {
      expect(result.exitCode).toBe(0);
      expect(alive(pid)).toBe(true);
    } finally {
      killIfAlive(pid);
    }
  });

  it('kills the process group at the deadline but not a setsid descendant (documented)', async () => {
    const err = await rejection(
      runInNetns(undefined, ['sh', '-c', `${SETSID_CHILD}; sleep 5 & wait`], { timeoutMs: 2000 }),
    );
    expect(err).toBeInstanceOf(ProcessTimeoutError);
    const pid = Number((err as ProcessTimeoutError).stdout.trim());
    expect(pid).toBeGreaterThan(0);
    try {
      expect(alive(pid)).toBe(true);
    } finally {
      killIfAlive(pid);
    }
  });

  it('keeps what the program wrote before the deadline though the event loop was busy when it passed', async () => {
    const marker = join(dir, 'written');
    const started = performance.now();
    const run = rejection(runInNetns(undefined, ['sh', '-c', `echo started; : > ${marker}; sleep 30`], { timeoutMs: 200 }));
    // Busy until the output is in the pipe and the deadline has passed: the deadline and the output become due in
    // the same turn of the loop.
    const bound = started + 30_000;
    while ((!existsSync(marker) || performance.now() < started + 300) && performance.now() < bound) {
      // spin
    }
    const err = await run;
    expect(err).toBeInstanceOf(ProcessTimeoutError);
    expect((err as ProcessTimeoutError).stdout).toBe('started\n');
  });
});
