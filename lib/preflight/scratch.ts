/**
 * Throwaway network namespaces for the preflight's probes: each an anonymous namespace (Netns.create: loopback up,
 * no name, nothing in /run/netns), with the caller's sysctls set, and gone when the probe ends, however it ends. The
 * probes never touch the namespace this process runs in.
 */
import { PodnetError } from '../errors.js';
import { Netns } from '../netns.js';
import { runInNetns } from '../spawn.js';

const SYSCTL_KEY = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$/;
const SYSCTL_VALUE = /^[A-Za-z0-9_ .:/-]{1,256}$/;

/** isSysctlKey tells whether key can name a sysctl (dotted, no path characters). */
export function isSysctlKey(key: string): boolean {
  return SYSCTL_KEY.test(key);
}

/** isSysctlValue tells whether value can be written to a sysctl as given. */
export function isSysctlValue(value: string): boolean {
  return SYSCTL_VALUE.test(value);
}

function setupFailed(what: string, said: string, cause?: unknown): PodnetError {
  return new PodnetError(`${what} failed: ${said}`, 'ERR_PREFLIGHT_NETNS', cause === undefined ? undefined : { cause });
}

/**
 * withScratchNetns runs fn with a fresh namespace and lets it go afterwards, also when fn rejects: closing the only
 * handle frees it once the programs fn started in it have exited. Rejects with a PodnetError `ERR_PREFLIGHT_NETNS`
 * when the namespace cannot be made (naming the system call and its error, the cause kept) or a sysctl cannot be set
 * (with what `sysctl` said).
 */
export async function withScratchNetns<T>(sysctls: readonly [string, string][], fn: (netns: Netns) => Promise<T>): Promise<T> {
  let netns: Netns;
  try {
    netns = await Netns.create();
  } catch (err) {
    throw setupFailed('creating a namespace', (err as Error).message, err);
  }
  try {
    // sysctl(8) writes /proc/sys as the namespace sees it, so it runs inside; only when asked, since it is a process.
    for (const [key, value] of sysctls) {
      const result = await runInNetns(netns, ['sysctl', '-q', '-w', `${key}=${value}`], { timeoutMs: 30_000 });
      if (result.exitCode !== 0) {
        throw setupFailed(`setting ${key}`, result.stderr.trim() || `exit status ${String(result.exitCode ?? result.signal)}`);
      }
    }
    return await fn(netns);
  } finally {
    netns.close();
  }
}
