/**
 * The kubelet's uid for the host SNAT rule's `meta skuid` (nftables has no `-m owner --socket-exists`, so the
 * reference matches the kubelet's sockets by their owner). Detected as the real uid of the processes whose comm is
 * 'kubelet' in /proc, when NodeNetwork is not given one.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { PodnetError } from '../errors.js';
import { checkString } from '../validate.js';

/**
 * KubeletUidError (`ERR_KUBELET_UID`) means the kubelet's uid could not be told from /proc: no process named
 * 'kubelet', or several with different uids. `option` names what to set instead.
 */
export class KubeletUidError extends PodnetError {
  /** The NodeNetwork option that gives the uid instead. */
  readonly option = 'kubeletUid';
  /** The uids found (empty when no kubelet runs). */
  readonly uids: readonly number[];
  /** The procfs folder that was read. */
  readonly procRoot: string;

  constructor(message: string, uids: readonly number[], procRoot: string, options: { cause?: unknown } = {}) {
    super(message, 'ERR_KUBELET_UID', options);
    this.uids = uids;
    this.procRoot = procRoot;
  }
}

/** The real uid of a /proc/<pid>/status, or undefined when the process is gone or the file unreadable. */
function realUid(status: string): number | undefined {
  const line = /^Uid:\s+(\d+)/m.exec(status);
  return line ? Number(line[1]) : undefined;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    // Processes come and go while /proc is read: a vanished one is simply not a kubelet any more.
    return undefined;
  }
}

/**
 * detectKubeletUid returns the real uid of the processes named 'kubelet' (their comm) under procRoot (default
 * '/proc'). Throws KubeletUidError naming the `kubeletUid` option when none runs or their uids differ, and
 * InvalidArgumentError for a bad procRoot.
 */
export function detectKubeletUid(procRoot: string = '/proc'): number {
  checkString('procRoot', procRoot);
  let pids: string[];
  try {
    pids = readdirSync(procRoot).filter((name) => /^\d+$/.test(name));
  } catch (err) {
    throw new KubeletUidError(`cannot read '${procRoot}' to find the kubelet's uid: set the 'kubeletUid' option`, [], procRoot, { cause: err });
  }
  const uids = new Set<number>();
  for (const pid of pids) {
    if (read(join(procRoot, pid, 'comm'))?.trimEnd() !== 'kubelet') continue;
    const status = read(join(procRoot, pid, 'status'));
    const uid = status === undefined ? undefined : realUid(status);
    if (uid !== undefined) uids.add(uid);
  }
  const found = [...uids].sort((a, b) => a - b);
  if (found.length === 1) return found[0]!;
  const why = found.length === 0 ? 'no process named \'kubelet\' runs' : `processes named 'kubelet' run as uids ${found.join(', ')}`;
  throw new KubeletUidError(`cannot tell the kubelet's uid from '${procRoot}' (${why}): set the 'kubeletUid' option`, found, procRoot);
}
