// What a podman run leaves outside its temp dirs, and taking back exactly what this test made: podman 4.3 with the
// CNI backend writes libpod's CNI cache (/var/lib/cni), the image blob info cache (/var/lib/containers/cache), runc's
// state dir (/run/runc), the shm lock file when file locks are not in use, a /run/netns/netns-<uuid> per container
// (removed again on rm, unless its teardown fails), and with the cgroupfs manager a cgroup named by --cgroup-parent
// under every hierarchy (with conmon's below it). Paths that existed before are never removed.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { CLI_ENV } from '../../helpers/netns.js';

const run = promisify(execFile);

/** The paths outside its temp dir podman may create, removed afterwards only when the test created them. */
export const PODMAN_HOST_PATHS = ['/var/lib/cni', '/var/lib/containers/cache', '/var/lib/containers', '/run/runc', '/dev/shm/libpod_lock'] as const;

const NETNS_DIR = '/run/netns';
const CGROUP_ROOT = '/sys/fs/cgroup';

/** HostSnapshot is what existed before the test ran. */
export interface HostSnapshot {
  /** Which of PODMAN_HOST_PATHS existed. */
  existing: Set<string>;
  /** The runtime-made netns files (`netns-*`) in /run/netns. */
  netnsFiles: Set<string>;
}

/** runtimeNetnsFiles lists the netns files a runtime made in /run/netns (`netns-<uuid>` under podman). */
export function runtimeNetnsFiles(): Set<string> {
  return new Set(readdirSync(NETNS_DIR).filter((n) => n.startsWith('netns-')));
}

/** snapshotHost records which of the paths podman may create exist now. */
export function snapshotHost(): HostSnapshot {
  return { existing: new Set(PODMAN_HOST_PATHS.filter((p) => existsSync(p))), netnsFiles: runtimeNetnsFiles() };
}

/**
 * cgroupDirs lists the cgroup directories named `parent` at the top of each hierarchy (cgroup v1 controllers, the
 * v2 `unified` mount of a hybrid layout, or the v2 root itself) and everything below them, deepest first, so rmdir
 * can take them in order.
 */
export function cgroupDirs(parent: string): string[] {
  const tops = [join(CGROUP_ROOT, parent)];
  for (const entry of readdirSync(CGROUP_ROOT, { withFileTypes: true })) {
    if (entry.isDirectory()) tops.push(join(CGROUP_ROOT, entry.name, parent));
  }
  const out: string[] = [];
  const walk = (dir: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) walk(join(dir, e.name));
    out.push(dir);
  };
  for (const top of tops) if (existsSync(top) && statSync(top).isDirectory()) walk(top);
  return out;
}

/** attempter returns a runner of cleanup steps that records each failure in problems and goes on with the next. */
export function attempter(problems: string[]): (what: string, step: () => unknown) => Promise<void> {
  return async (what, step) => {
    try {
      await step();
    } catch (err) {
      problems.push(`${what}: ${(err as Error)?.message ?? String(err)}`);
    }
  };
}

/** mountsUnder lists the mount points below dir (deepest first), as /proc/self/mountinfo shows them. */
function mountsUnder(dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

/**
 * restoreHost removes what podman added since `before`: the paths of PODMAN_HOST_PATHS that did not exist (deepest
 * first), new `netns-*` files in /run/netns (`ip netns delete` unmounts and removes them), every cgroup named
 * `cgroupParent`, and mounts left under `tempDir` (storage of a container that was not removed). It tries every
 * step and returns what failed; an empty list means the host is as it was.
 */
export async function restoreHost(before: HostSnapshot, cgroupParent: string, tempDir: string): Promise<string[]> {
  const problems: string[] = [];
  const attempt = attempter(problems);
  for (const point of mountsUnder(tempDir)) {
    await attempt(`unmounting ${point}`, () => run('umount', ['-l', point], { env: CLI_ENV, timeout: 10_000 }));
  }
  for (const name of runtimeNetnsFiles()) {
    if (before.netnsFiles.has(name)) continue;
    await attempt(`deleting ${NETNS_DIR}/${name}`, () => run('ip', ['netns', 'delete', name], { env: CLI_ENV, timeout: 10_000 }));
  }
  for (const dir of cgroupDirs(cgroupParent)) await attempt(`removing cgroup ${dir}`, () => rmdirSync(dir));
  // Deepest first: /var/lib/containers/cache before /var/lib/containers.
  const made = PODMAN_HOST_PATHS.filter((p) => !before.existing.has(p)).sort((a, b) => b.length - a.length);
  for (const path of made) await attempt(`removing ${path}`, () => rmSync(path, { recursive: true, force: true }));
  return problems;
}

/** leftovers lists what restoreHost should have removed and is still there (empty when the host is as it was). */
export function leftovers(before: HostSnapshot, cgroupParent: string): string[] {
  const left = PODMAN_HOST_PATHS.filter((p) => !before.existing.has(p) && existsSync(p)) as string[];
  for (const name of runtimeNetnsFiles()) if (!before.netnsFiles.has(name)) left.push(join(NETNS_DIR, name));
  left.push(...cgroupDirs(cgroupParent));
  return left;
}
