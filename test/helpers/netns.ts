// The one helper privileged tests use for namespaces: a fresh, uniquely named
// namespace (loopback up) that is deleted when the test ends, passed or failed.
import { execFileSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';

import { Netns } from '../../lib/netns.js';

let counter = 0;

/**
 * The environment for the CLI tools tests run (ip, nft, ipset, iptables-save): without the sanitizer runtime the
 * ASan test run preloads into this process, which would instrument those programs and abort some of them on their
 * own findings (iproute2's print_route has a strncpy-param-overlap), failing tests of podnet for bugs of theirs.
 */
export const CLI_ENV: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD' && k !== 'ASAN_OPTIONS' && k !== 'UBSAN_OPTIONS'),
);

/** A throwaway namespace made with `ip netns add`. */
export class TestNetns implements Disposable {
  readonly name: string;
  readonly path: string;
  #deleted = false;

  constructor(tag = 'ns') {
    const run = process.env.PODNET_TEST_RUN ?? 'x';
    this.name = `podnet-t-${run}-${process.pid}-${tag}${++counter}`;
    this.path = `/run/netns/${this.name}`;
    execFileSync('ip', ['netns', 'add', this.name], { stdio: 'pipe', env: CLI_ENV });
    try {
      execFileSync('ip', ['-n', this.name, 'link', 'set', 'lo', 'up'], { stdio: 'pipe', env: CLI_ENV });
    } catch (err) {
      this.delete();
      throw err;
    }
  }

  /** open returns a new handle on the namespace (the caller closes it). */
  open(): Netns {
    return Netns.open(this.path);
  }

  /** ip runs `ip -n NAME ...args` and returns its stdout. */
  ip(...args: string[]): string {
    return execFileSync('ip', ['-n', this.name, ...args], { encoding: 'utf8', env: CLI_ENV });
  }

  /** exec runs argv inside the namespace with `ip netns exec` and returns stdout. */
  exec(argv: string[], input?: string): string {
    return execFileSync('ip', ['netns', 'exec', this.name, ...argv], { encoding: 'utf8', input, stdio: 'pipe', env: CLI_ENV });
  }

  delete(): void {
    if (this.#deleted) return;
    this.#deleted = true;
    execFileSync('ip', ['netns', 'delete', this.name], { stdio: 'ignore', env: CLI_ENV });
  }

  [Symbol.dispose](): void {
    this.delete();
  }
}

/** withNetns runs fn with fresh namespaces and deletes them afterwards, also when fn throws. */
export async function withNetns<T>(fn: (...ns: TestNetns[]) => Promise<T> | T, count = 1): Promise<T> {
  const made: TestNetns[] = [];
  try {
    for (let i = 0; i < count; i++) made.push(new TestNetns());
    return await fn(...made);
  } finally {
    for (const ns of made) ns.delete();
  }
}

/** threadNamespaces maps each thread of this process to the network namespace it is in (`net:[inode]`). */
export function threadNamespaces(): Map<string, string> {
  const seen = new Map<string, string>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      seen.set(tid, readlinkSync(`/proc/self/task/${tid}/ns/net`));
    } catch {
      // the thread ended between readdir and readlink
    }
  }
  return seen;
}
