/**
 * Throwaway network namespaces for the preflight's probes: each made with `ip netns add` (argv, no shell) under a
 * unique name, its loopback up and the caller's sysctls set, and deleted when the probe ends, however it ends. The
 * probes never touch the namespace this process runs in.
 */
import { randomBytes } from 'node:crypto';

import { PodnetError } from '../errors.js';
import { Netns } from '../netns.js';
import { runInNetns, type RunResult } from '../spawn.js';

const SYSCTL_KEY = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/;
const SYSCTL_VALUE = /^[A-Za-z0-9_ .:/-]{1,256}$/;
let counter = 0;

/** scratchName is a namespace name no other process or earlier run uses. */
function scratchName(): string {
  return `podnet-pf-${process.pid}-${++counter}-${randomBytes(4).toString('hex')}`;
}

function mustSucceed(what: string, result: RunResult): void {
  if (result.exitCode === 0) return;
  const said = result.stderr.trim() || `exit status ${String(result.exitCode ?? result.signal)}`;
  throw new PodnetError(`${what} failed: ${said}`, 'ERR_PREFLIGHT_NETNS');
}

/** isSysctlKey tells whether key can name a sysctl (dotted, no path characters). */
export function isSysctlKey(key: string): boolean {
  return SYSCTL_KEY.test(key);
}

/** isSysctlValue tells whether value can be written to a sysctl as given. */
export function isSysctlValue(value: string): boolean {
  return SYSCTL_VALUE.test(value);
}

/**
 * withScratchNetns runs fn with a fresh namespace and deletes it afterwards, also when fn rejects. Rejects with a
 * PodnetError `ERR_PREFLIGHT_NETNS` (with what `ip` or `sysctl` said) when the namespace cannot be made or set up.
 */
export async function withScratchNetns<T>(sysctls: readonly [string, string][], fn: (netns: Netns) => Promise<T>): Promise<T> {
  const name = scratchName();
  mustSucceed(`creating namespace '${name}'`, await runInNetns(undefined, ['ip', 'netns', 'add', name], { timeoutMs: 30_000 }));
  let netns: Netns | undefined;
  try {
    netns = Netns.named(name);
    mustSucceed('bringing up loopback', await runInNetns(netns, ['ip', 'link', 'set', 'lo', 'up'], { timeoutMs: 30_000 }));
    for (const [key, value] of sysctls) {
      mustSucceed(`setting ${key}`, await runInNetns(netns, ['sysctl', '-q', '-w', `${key}=${value}`], { timeoutMs: 30_000 }));
    }
    return await fn(netns);
  } finally {
    netns?.close();
    // The bind mount goes with the name; programs still inside keep the namespace alive until they exit.
    await runInNetns(undefined, ['ip', 'netns', 'delete', name], { timeoutMs: 30_000 }).catch(() => undefined);
  }
}
