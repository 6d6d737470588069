/**
 * The kubelet's uid for the host SNAT rule's `meta skuid` (nftables has no `-m owner --socket-exists`, so the
 * reference matches the kubelet's sockets by their owner). Detected from a procfs, when NodeNetwork is not given one,
 * as the reference does (istio cni/pkg/nftables kubeletuid_linux.go): the real uid of the process that hosts the
 * kubelet, found by its comm and command line. In a container that is the host's /proc mounted in (the reference
 * reads `/host/proc`): NodeNetwork's `hostProcRoot`.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { PodnetError } from '../errors.js';
import { checkString, invalidValue } from '../validate.js';

/**
 * KubeletUidError (`ERR_KUBELET_UID`) means the kubelet's uid could not be told from a procfs: no process hosts the
 * kubelet, several do with different uids, or the folder cannot be read. `option` names what to set instead.
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

const namesKubelet = (args: readonly string[]): boolean => args.some((a) => a.toLowerCase().includes('kubelet'));

/**
 * The subcommand of a k3s command line: argv ['k3s', 'server', ...], or the one-argument title k3s gives itself
 * ('/usr/local/bin/k3s server').
 */
const k3sSubcommand = (args: readonly string[]): string | undefined => args.slice(0, 2).join(' ').split(/\s+/)[1];

/**
 * How each platform's kubelet-hosting process is told, by its comm and then its command line, as the reference
 * decides: kubelet (plain Kubernetes) and kubelite (MicroK8s, all components in one process) must also name
 * 'kubelet' in an argument, so another program that happens to be called so is not taken. k3s embeds the kubelet and
 * names it nowhere in argv; the reference takes its comm alone. podnet also asks for the `server` or `agent`
 * subcommand (the only two that run a kubelet, and what k3s's own tools look for): a `k3s kubectl` or `k3s ctr` has
 * the same comm, and one run by another user would otherwise make the uid ambiguous.
 */
const HOSTS: readonly { comm: string; matches: (args: readonly string[]) => boolean }[] = [
  { comm: 'kubelet', matches: namesKubelet },
  { comm: 'kubelite', matches: namesKubelet },
  { comm: 'k3s', matches: (args) => ['server', 'agent'].includes(k3sSubcommand(args) ?? '') },
];

const KUBELET_COMMS = HOSTS.map((h) => h.comm);

/** The real uid of a /proc/<pid>/status, or undefined when the file has no Uid line. */
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

/** checkProcRoot returns value if it can be a procfs folder: an absolute path. Throws InvalidArgumentError naming name. */
export function checkProcRoot(name: string, value: unknown): string {
  const path = checkString(name, value, 4096);
  if (!path.startsWith('/') || path.includes('\0')) throw invalidValue(name, 'an absolute path of a procfs (e.g. /proc or /host/proc)', value);
  return path;
}

/**
 * detectKubeletUid returns the real uid of the processes under procRoot (default '/proc') that host the kubelet: comm
 * 'kubelet' or 'kubelite' with 'kubelet' in an argument, or comm 'k3s' running `k3s server` or `k3s agent`. Throws
 * KubeletUidError naming the `kubeletUid` option when none runs, their uids differ or procRoot cannot be read, and
 * InvalidArgumentError for a procRoot that is not an absolute path.
 */
export function detectKubeletUid(procRoot: string = '/proc'): number {
  checkProcRoot('procRoot', procRoot);
  let pids: string[];
  try {
    pids = readdirSync(procRoot).filter((name) => /^\d+$/.test(name));
  } catch (err) {
    throw new KubeletUidError(`cannot read '${procRoot}' to find the kubelet's uid: set the 'kubeletUid' option`, [], procRoot, { cause: err });
  }
  const uids = new Set<number>();
  for (const pid of pids) {
    const comm = read(join(procRoot, pid, 'comm'))?.trimEnd();
    const host = HOSTS.find((h) => h.comm === comm);
    if (!host) continue;
    const cmdline = read(join(procRoot, pid, 'cmdline'));
    if (cmdline === undefined || !host.matches(cmdline.split('\0').filter((a) => a !== ''))) continue;
    const status = read(join(procRoot, pid, 'status'));
    const uid = status === undefined ? undefined : realUid(status);
    if (uid !== undefined) uids.add(uid);
  }
  const found = [...uids].sort((a, b) => a - b);
  if (found.length === 1) return found[0]!;
  const names = KUBELET_COMMS.map((c) => `'${c}'`).join(', ');
  const why = found.length === 0 ? `no kubelet (${names}) runs` : `kubelets run as uids ${found.join(', ')}`;
  throw new KubeletUidError(`cannot tell the kubelet's uid from '${procRoot}' (${why}): set the 'kubeletUid' option`, found, procRoot);
}
