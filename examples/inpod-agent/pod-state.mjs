// The pods the agent enrolled, by CNI container ID, and the state file that keeps them across a restart.
//
// The file holds what a restarted agent needs to find each pod again and nothing it can read back from the kernel:
// the container ID (the key DEL and GC use), the pod's UID (the probe set owner and the cgroup findPodNetns reads),
// its IPs (the probe set entries and findPodNetns' IP check), the interface and the workload (for the node proxy).
// Netns handles are never written: a restarted agent finds them again from /proc.
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

const STATE_VERSION = 1;

/**
 * PodTable maps each CNI container ID to its pod ({ uid, ips, ifName, workload, netns }) and writes the table to
 * `file` (when given) after every change, atomically (a temp file renamed over the old one), so a crash mid-write
 * leaves the previous table, never half of one.
 */
export class PodTable {
  #pods = new Map();
  #file;

  constructor(file) {
    this.#file = file;
  }

  /** load reads the table written by an earlier run: [] when there is no file (a first start). */
  load() {
    if (this.#file === undefined) return [];
    let text;
    try {
      text = readFileSync(this.#file, 'utf8');
    } catch (err) {
      if (err.code === 'ENOENT') return [];
      throw err;
    }
    const parsed = JSON.parse(text);
    if (parsed?.version !== STATE_VERSION || !Array.isArray(parsed.pods)) {
      throw new Error(`state file '${this.#file}' is not a version ${STATE_VERSION} pod table`);
    }
    return parsed.pods;
  }

  get size() {
    return this.#pods.size;
  }

  get(containerId) {
    return this.#pods.get(containerId);
  }

  /** entries lists [containerId, pod] pairs in enrolment order. */
  entries() {
    return [...this.#pods.entries()];
  }

  /** pods lists the enrolled pods in enrolment order. */
  pods() {
    return [...this.#pods.values()];
  }

  set(containerId, pod) {
    this.#release(this.#pods.get(containerId), pod);
    this.#pods.set(containerId, pod);
    this.save();
  }

  delete(containerId) {
    const pod = this.#pods.get(containerId);
    if (pod === undefined) return;
    this.#release(pod);
    this.#pods.delete(containerId);
    this.save();
  }

  /** close closes the netns handles the table holds (pods found after a restart hold one; CNI pods a path). */
  close() {
    for (const pod of this.#pods.values()) this.#release(pod);
  }

  #release(old, replacement) {
    if (typeof old?.netns === 'object' && old.netns !== replacement?.netns) old.netns.close();
  }

  /** save writes the table to the state file (when there is one). */
  save() {
    if (this.#file === undefined) return;
    const pods = this.entries().map(([containerId, p]) => ({ containerId, uid: p.uid, ips: p.ips, ifName: p.ifName, workload: p.workload }));
    const temp = `${this.#file}.${process.pid}.tmp`;
    try {
      writeFileSync(temp, `${JSON.stringify({ version: STATE_VERSION, pods }, null, 2)}\n`, { mode: 0o600 });
      renameSync(temp, this.#file);
    } catch (err) {
      rmSync(temp, { force: true });
      throw err;
    }
  }
}
