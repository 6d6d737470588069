// Fd accounting for the unix socket tests: every scenario, error paths
// included, must leave this process with exactly the fds it started with.
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, expect } from 'vitest';

/** openFds maps each open fd of this process to what it refers to. */
export function openFds(): Map<number, string> {
  const fds = new Map<number, string>();
  for (const name of readdirSync('/proc/self/fd')) {
    try {
      fds.set(Number(name), readlinkSync(`/proc/self/fd/${name}`));
    } catch {
      // the directory fd readdirSync itself used, closed by now
    }
  }
  return fds;
}

/** fdsTo lists the open fds that refer to target (a file path, or "net:[inode]"). */
export function fdsTo(target: string): number[] {
  return [...openFds()].filter(([, t]) => t === target).map(([fd]) => fd);
}

// O_CLOEXEC as /proc/self/fdinfo prints flags (octal).
const O_CLOEXEC = 0o2000000;

/** isCloexec tells whether fd is close-on-exec. */
export function isCloexec(fd: number): boolean {
  const line = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').find((l) => l.startsWith('flags:'));
  return (parseInt(line!.split(/\s+/)[1]!, 8) & O_CLOEXEC) === O_CLOEXEC;
}

function describeFds(fds: Map<number, string>, numbers: number[]): string[] {
  return numbers.map((fd) => `${fd} -> ${fds.get(fd)}`);
}

/**
 * checkFdsPerTest registers hooks that snapshot the fds before each test of the enclosing describe and fail the test
 * when it ends with a different count (naming the fds that appeared or went away).
 */
export function checkFdsPerTest(): void {
  let before = new Map<number, string>();
  beforeEach(() => {
    before = openFds();
  });
  afterEach(async () => {
    // Child processes' pipes close on their 'close' event; give closes done in callbacks a turn to happen.
    await new Promise((resolve) => setImmediate(resolve));
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
