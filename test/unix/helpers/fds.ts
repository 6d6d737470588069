// Fd accounting for the unix socket tests: every scenario, error paths
// included, must leave this process with exactly the fds it started with.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, expect } from 'vitest';

import { closesDone, openFds } from '../../helpers/fds.js';

export { fdsTo, isCloexec, openFds } from '../../helpers/fds.js';

function describeFds(fds: Map<number, string>, numbers: number[]): string[] {
  return numbers.map((fd) => `${fd} -> ${fds.get(fd)}`);
}

/**
 * checkFdsPerTest registers hooks that snapshot the fds before each test of the enclosing describe and fail the test
 * when it ends with a different count (naming the fds that appeared or went away).
 */
export function checkFdsPerTest(): void {
  let before = new Map<number, string>();
  beforeEach(async () => {
    // A netfilter client released by an earlier test may still have its socket with the closer thread.
    await closesDone();
    before = openFds();
  });
  afterEach(async () => {
    // Child processes' pipes close on their 'close' event; give closes done in callbacks a turn to happen.
    await new Promise((resolve) => setImmediate(resolve));
    await closesDone();
    const after = openFds();
    const added = [...after.keys()].filter((fd) => before.get(fd) !== after.get(fd));
    const removed = [...before.keys()].filter((fd) => before.get(fd) !== after.get(fd));
    expect({ count: after.size, added: describeFds(after, added), removed: describeFds(before, removed) }).toEqual({
      count: before.size,
      added: [],
      removed: [],
    });
  });
}

/** socketDir makes a fresh temp folder for the describe's socket files, removed after it. */
export function socketDir(): () => string {
  const dir = mkdtempSync(join(tmpdir(), 'podnet-unix-'));
  let n = 0;
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return () => join(dir, `s${++n}.sock`);
}
