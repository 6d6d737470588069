// What this process has open, read from /proc/self: for tests that prove an fd was
// closed, not leaked, or opened close-on-exec.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

import { native } from '../../lib/native.js';

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

/** netnsFds lists what this process's fds on network namespaces refer to ("net:[inode]"), sorted. */
export function netnsFds(): string[] {
  return [...openFds().values()].filter((target) => target.startsWith('net:[')).sort();
}

// O_CLOEXEC as /proc/self/fdinfo prints flags (octal).
const O_CLOEXEC = 0o2000000;

/** isCloexec tells whether fd is close-on-exec. */
export function isCloexec(fd: number): boolean {
  const line = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').find((l) => l.startsWith('flags:'));
  return (parseInt(line!.split(/\s+/)[1]!, 8) & O_CLOEXEC) === O_CLOEXEC;
}

/** socketFds lists this process's socket fds. */
export function socketFds(): number[] {
  return [...openFds()].filter(([, target]) => target.startsWith('socket:[')).map(([fd]) => fd);
}

/**
 * closesDone waits until the addon's closer thread has closed every netfilter socket handed to it (a client's release
 * hands its socket over and returns: native/util/close_later.h), so that fds counted next are the settled ones. Throws
 * when that takes past deadlineMs (the kernel holds a release for an RCU grace period, milliseconds).
 */
export async function closesDone(deadlineMs = 10_000): Promise<void> {
  // A client releases its socket in a continuation of its settled queue: let pending continuations run first.
  await new Promise((resolve) => setImmediate(resolve));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${native.pendingCloses()} netfilter socket(s) still not closed after ${deadlineMs} ms`)), deadlineMs);
  });
  try {
    await Promise.race([native.closesSettled(), late]);
  } finally {
    clearTimeout(timer);
  }
}
