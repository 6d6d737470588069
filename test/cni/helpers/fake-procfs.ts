// Fabricated procfs trees for findPodNetns: per process a `cgroup` text, a `stat` line carrying a start time, and an
// `ns/net` symlink to a real namespace file (a TestNetns under /run/netns), so the scan's logic runs on trees a test
// lays out while every namespace it opens and every address it reads is the kernel's. Entries can also be broken the
// ways a live /proc breaks: missing files (a process that ended), dangling links, garbage.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** FakeProcess is one fabricated /proc/PID entry; a field left out is a file left out. */
export interface FakeProcess {
  pid: number;
  /** The cgroup file's text (see podCgroup). */
  cgroup?: string;
  /** The start time written as field 22 of the stat line. */
  startTime?: number;
  /** The stat file's whole text instead of one made from startTime. */
  stat?: string;
  /** What ns/net links to (a namespace file such as TestNetns.path). */
  netns?: string;
  /** The command name in the stat line (default 'sleep'). */
  comm?: string;
}

/** statLine renders a /proc/PID/stat line with starttime (field 22). */
export function statLine(pid: number, startTime: number, comm = 'sleep'): string {
  const fields = ['S', '1', String(pid), String(pid), '0', '-1', '4194560', '100', '0', '0', '0', '1', '2', '0', '0', '20', '0', '1', '0'];
  return `${pid} (${comm}) ${fields.join(' ')} ${startTime} 2166784 200 18446744073709551615 1 1 0 0\n`;
}

/** How podCgroup writes a pod's cgroup path. */
export interface PodCgroupShape {
  driver?: 'systemd' | 'cgroupfs';
  qos?: 'guaranteed' | 'burstable' | 'besteffort';
  runtime?: 'containerd' | 'crio' | 'docker';
  containerId?: string;
  /** Write a cgroup v2 line (`0::path`) instead of v1 controller lines. */
  v2?: boolean;
}

/** podCgroup renders the cgroup file of a process in pod uid's container, as the kubelet and runtime name it. */
export function podCgroup(uid: string, shape: PodCgroupShape = {}): string {
  const { driver = 'systemd', qos = 'burstable', runtime = 'containerd', v2 = false } = shape;
  const id = shape.containerId ?? 'c0ffee'.padEnd(64, '0');
  let path: string;
  if (driver === 'systemd') {
    const scope = `${runtime === 'containerd' ? 'cri-containerd' : runtime}-${id}.scope`;
    const u = uid.replaceAll('-', '_');
    path = qos === 'guaranteed'
      ? `/kubepods.slice/kubepods-pod${u}.slice/${scope}`
      : `/kubepods.slice/kubepods-${qos}.slice/kubepods-${qos}-pod${u}.slice/${scope}`;
  } else {
    path = qos === 'guaranteed' ? `/kubepods/pod${uid}/${id}` : `/kubepods/${qos}/pod${uid}/${id}`;
  }
  return v2 ? `0::${path}\n` : `12:pids:${path}\n11:memory:${path}\n1:name=systemd:${path}\n0::/\n`;
}

/** A cgroup file of a process outside Kubernetes. */
export const SYSTEM_CGROUP = '12:pids:/system.slice/containerd.service\n1:name=systemd:/system.slice/containerd.service\n0::/\n';

/** FakeProcfs is a fabricated procfs in a temp dir, removed on dispose. */
export class FakeProcfs implements Disposable {
  readonly root: string;
  #dir: string;

  constructor() {
    this.#dir = mkdtempSync(join(tmpdir(), 'podnet-procfs-'));
    this.root = join(this.#dir, 'proc');
    mkdirSync(this.root);
  }

  /** add writes the entries of one or more processes. */
  add(...procs: FakeProcess[]): this {
    for (const p of procs) {
      const dir = join(this.root, String(p.pid));
      mkdirSync(join(dir, 'ns'), { recursive: true });
      if (p.cgroup !== undefined) writeFileSync(join(dir, 'cgroup'), p.cgroup);
      const stat = p.stat ?? (p.startTime === undefined ? undefined : statLine(p.pid, p.startTime, p.comm));
      if (stat !== undefined) writeFileSync(join(dir, 'stat'), stat);
      if (p.netns !== undefined) symlinkSync(p.netns, join(dir, 'ns', 'net'));
    }
    return this;
  }

  /** file writes any other file under the root (a non-process entry such as `self`, `meminfo`). */
  file(name: string, text: string): this {
    writeFileSync(join(this.root, name), text);
    return this;
  }

  /** remove deletes a process's entry, as the kernel does when it ends. */
  remove(pid: number): void {
    rmSync(join(this.root, String(pid)), { recursive: true, force: true });
  }

  [Symbol.dispose](): void {
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
