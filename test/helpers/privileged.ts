// Privileged tests (root, namespaces) run for real where they can. Without
// privileges they are skipped with the reason in their name; with
// PODNET_REQUIRE_PRIVILEGED=1 (CI) a missing privilege fails instead.
import { execFileSync } from 'node:child_process';
import { describe, it } from 'vitest';

function probe(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces';
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
  } catch {
    return "needs iproute2's `ip` to create test namespaces";
  }
  return undefined;
}

/** Why privileged tests cannot run here, or undefined when they can. */
export const privilegeGap: string | undefined = probe();

/** Other binaries some privileged suites need (ipset, iptables-restore, ...): the reason they are missing, if so. */
export function missingBinary(...names: string[]): string | undefined {
  for (const name of names) {
    try {
      execFileSync(name, ['--version'], { stdio: 'ignore' });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return `needs the \`${name}\` binary`;
    }
  }
  return undefined;
}

/** describePrivileged is describe() for suites that need root and namespaces (and optionally more). */
export function describePrivileged(name: string, fn: () => void, extraGap?: string): void {
  const gap = privilegeGap ?? extraGap;
  if (gap === undefined) {
    describe(name, fn);
  } else if (process.env.PODNET_REQUIRE_PRIVILEGED === '1') {
    describe(name, () => {
      it('runs with the privileges it needs', () => {
        throw new Error(`PODNET_REQUIRE_PRIVILEGED=1 but this suite ${gap}`);
      });
    });
  } else {
    describe.skip(`${name} [skipped: ${gap}]`, fn);
  }
}
