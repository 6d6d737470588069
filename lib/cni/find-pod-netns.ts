/**
 * Running pods' network namespaces found from a procfs, for a node agent that starts while pods already run (after a
 * restart or an upgrade) and must reach each enrolled pod's netns without a CNI ADD. One pass over the procfs: each
 * process's cgroup names its pod; the pod's processes outside the host's netns give candidate namespaces, found by
 * their device and inode without opening anything; only those candidates are opened, once per namespace, to read
 * the addresses their interfaces hold. A pairing counts only when the namespace holds one of the pod's IPs and holds
 * the pod's oldest process (a process that entered another namespace later, with nsenter or a debugger, never
 * decides). Whatever does not add up is reported with its candidates and a reason, never guessed.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { PodnetError, PodnetSystemError, isNotFound } from '../errors.js';
import { formatIp, parseIp, unmapIpv4 } from '../address/index.js';
import { Netns } from '../netns.js';
import { Rtnetlink } from '../rtnetlink/index.js';
import { checkArray, checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { podFromCgroup } from './pod-cgroup.js';
import { startTimeFromStat } from './proc-stat.js';

/** PodToFind is a pod whose netns the agent wants: its UID and the IPs the cluster gave it. */
export interface PodToFind {
  /** The pod's UID (a UUID, or a static pod's 32 hex digits), as in its metadata. */
  readonly uid: string;
  /** The pod's IPs (status.podIPs): one of them must be on an interface of the namespace that is paired with it. */
  readonly ips: readonly string[];
}

/** FindPodNetnsOptions are what findPodNetns scans and for which pods. */
export interface FindPodNetnsOptions {
  /** Where the host's procfs is mounted (an absolute path): `/proc` on the host, e.g. `/host/proc` in a container. */
  readonly procRoot?: string;
  /** The pods to find (at most 65536, each UID once). */
  readonly pods: readonly PodToFind[];
  /**
   * The namespace that counts as the host's (a handle, or a path stat'ed without opening it). Default: PID 1's
   * `ns/net` under procRoot. Give it when PID 1's entry cannot be read (a procfs with hidepid, a sandbox).
   */
  readonly hostNetns?: Netns | string;
  /** Deadline for each namespace's address dump, milliseconds (default 5000). */
  readonly timeoutMs?: number;
}

/** PodNetnsCandidate is one namespace a pod's processes live in, and what the scan learned of it. */
export interface PodNetnsCandidate {
  /** The namespace's identity, "<device>:<inode>" as Netns.id has it. */
  readonly netnsId: string;
  /** The namespace's inode, as `ip netns identify` and `readlink /proc/PID/ns/net` show it. */
  readonly inode: number;
  /** The pod's oldest process in this namespace. */
  readonly pid: number;
  /** That process's start time, clock ticks after boot (/proc/PID/stat field 22). */
  readonly startTime: bigint;
  /** How many of the pod's processes are in this namespace. */
  readonly processes: number;
  /** Whether the pod's oldest process (outside the host's netns) is in this namespace. */
  readonly oldest: boolean;
  /** The addresses the namespace's interfaces hold, canonical; undefined when they could not be read. */
  readonly addresses: readonly string[] | undefined;
  /** The pod's IP the namespace holds, or undefined. */
  readonly matchedIp: string | undefined;
  /** Why the namespace could not be opened or its addresses read. */
  readonly error: Error | undefined;
}

/** FoundPodNetns is a pod paired with its namespace. */
export interface FoundPodNetns {
  /** The pod's UID, lowercase. */
  readonly uid: string;
  /** An open handle on the pod's namespace, owned by the scan until take()n. */
  readonly netns: Netns;
  /** The pod's oldest process in the namespace (outside the host's netns, the pod's oldest of all). */
  readonly pid: number;
  /** The pod's IP an interface of the namespace holds. */
  readonly ip: string;
  /** Every namespace the pod's processes were seen in (the found one first). */
  readonly candidates: readonly PodNetnsCandidate[];
}

/**
 * PodNetnsMissReason says why a pod was not paired:
 * - `no-process`: no process under procRoot is in the pod's cgroup (the pod is gone, or on another node);
 * - `host-netns`: its processes all share the host's netns (a hostNetwork pod: nothing to redirect in);
 * - `ip-mismatch`: its namespaces were read and none holds one of its IPs (a stale IP list, a replaced sandbox);
 * - `ambiguous`: several of its namespaces hold its IPs, or the one that does is not where its oldest process is;
 * - `shared-netns`: the namespace it would get is also the one paired with another pod asked for;
 * - `unreadable`: none of its namespaces holds its IPs and some could not be opened or read (see the candidates'
 *   errors), so a mismatch cannot be told from a failure; worth a rescan.
 */
export type PodNetnsMissReason = 'no-process' | 'host-netns' | 'ip-mismatch' | 'ambiguous' | 'shared-netns' | 'unreadable';

/** PodNetnsMiss is a pod findPodNetns did not pair, with why and what it saw. */
export interface PodNetnsMiss {
  /** The pod's UID, lowercase. */
  readonly uid: string;
  /** Why (see PodNetnsMissReason). */
  readonly reason: PodNetnsMissReason;
  /** The reason in words, naming the namespaces involved. */
  readonly message: string;
  /** The namespaces its processes were seen in, oldest process first (empty for no-process and host-netns). */
  readonly candidates: readonly PodNetnsCandidate[];
}

/** PodNetnsScanStats count what one scan went through. */
export interface PodNetnsScanStats {
  /** Process entries listed under procRoot. */
  readonly processes: number;
  /** Processes in the cgroup of a pod asked for (those in the host's netns included). */
  readonly podProcesses: number;
  /** Processes that ended while the scan read them (normal on a busy node). */
  readonly vanished: number;
  /** Process entries that could not be read for another reason (permissions, an unparsable stat). */
  readonly unreadable: number;
  /** Namespaces opened for the IP check. */
  readonly netnsChecked: number;
}

/**
 * PodNetnsScan is what findPodNetns found: open handles on the paired pods' namespaces (closed by close() or
 * `using`, except those take()n) and the pods it did not pair, with why.
 */
export class PodNetnsScan implements Disposable {
  /** The pods paired with their namespace, by UID (lowercase). */
  readonly found: ReadonlyMap<string, FoundPodNetns>;
  /** The pods not paired, by UID (lowercase). */
  readonly missing: ReadonlyMap<string, PodNetnsMiss>;
  /** What the scan went through. */
  readonly stats: PodNetnsScanStats;
  readonly #owned: Set<Netns>;

  /** @internal findPodNetns builds it. */
  constructor(found: Map<string, FoundPodNetns>, missing: Map<string, PodNetnsMiss>, stats: PodNetnsScanStats) {
    this.found = found;
    this.missing = missing;
    this.stats = stats;
    this.#owned = new Set([...found.values()].map((f) => f.netns));
  }

  /**
   * take hands the pod's namespace handle over to the caller, who closes it from then on; close() leaves it open.
   * Returns undefined for a pod not found (or taken already). Throws InvalidArgumentError for a uid that is not a
   * string.
   */
  take(uid: string): Netns | undefined {
    const entry = this.found.get(checkString('uid', uid, 64).toLowerCase());
    if (!entry || !this.#owned.delete(entry.netns)) return undefined;
    return entry.netns;
  }

  /** close closes every handle not taken; idempotent. */
  close(): void {
    for (const netns of this.#owned) netns.close();
    this.#owned.clear();
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }
}

const UID_RE = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;
const MAX_PODS = 65536;
const MAX_IPS = 16;
// Sync reads in slices of this many processes, the event loop served between slices.
const SLICE = 256;
// Namespaces checked at once: each check is a trip to the libuv pool (enter the netns, open a socket, dump).
const CHECKS_AT_ONCE = 4;

/** canonicalIp returns the address in one spelling (IPv4-mapped unmapped, RFC 5952), or undefined. */
function canonicalIp(text: string): string | undefined {
  const parsed = parseIp(unmapIpv4(text));
  return parsed ? formatIp(parsed.family, parsed.bytes) : undefined;
}

interface CheckedOptions {
  procRoot: string;
  pods: Map<string, Set<string>>;
  hostNetns: Netns | string | undefined;
  timeoutMs: number;
}

function checkPod(item: unknown, name: string): { uid: string; ips: Set<string> } {
  const pod = checkOptions<PodToFind>(name, item);
  if (item === undefined) throw invalidType(name, 'an object { uid, ips }', item);
  // Each field is read once: a getter that answers differently the second time cannot slip past the check.
  const rawUid = pod.uid;
  const rawIps = pod.ips;
  const uid = checkString(`${name}.uid`, rawUid, 64).toLowerCase();
  if (!UID_RE.test(uid)) throw invalidValue(`${name}.uid`, 'a pod UID (a UUID, or 32 hex digits)', rawUid);
  const ips = checkArray(`${name}.ips`, rawIps, 'an array of IP addresses', (ip, ipName) => {
    const text = checkString(ipName, ip, 64);
    const canonical = canonicalIp(text);
    if (canonical === undefined) throw invalidValue(ipName, 'an IPv4 or IPv6 address', ip);
    return canonical;
  }, MAX_IPS);
  if (ips.length === 0) throw invalidValue(`${name}.ips`, 'at least one IP address (the pod is paired by its IPs)', rawIps);
  return { uid, ips: new Set(ips) };
}

function checkFindOptions(options: unknown): CheckedOptions {
  if (options === undefined) throw invalidType('options', 'an object { pods, procRoot?, hostNetns?, timeoutMs? }', options);
  const opts = checkOptions<FindPodNetnsOptions>('options', options);
  const rawProcRoot = opts.procRoot;
  const rawTimeout = opts.timeoutMs;
  const procRoot = rawProcRoot === undefined ? '/proc' : checkString('options.procRoot', rawProcRoot, 4096);
  if (!procRoot.startsWith('/')) throw invalidValue('options.procRoot', 'an absolute path of a procfs (e.g. /proc or /host/proc)', procRoot);
  const list = checkArray('options.pods', opts.pods, 'an array of { uid, ips }', checkPod, MAX_PODS);
  const pods = new Map<string, Set<string>>();
  for (let i = 0; i < list.length; i++) {
    const { uid, ips } = list[i]!;
    if (pods.has(uid)) throw invalidValue(`options.pods[${i}].uid`, 'a UID not given before', uid);
    pods.set(uid, ips);
  }
  const host = opts.hostNetns;
  if (host instanceof Netns) {
    if (host.closed) throw invalidValue('options.hostNetns', 'an open Netns', host);
  } else if (typeof host === 'string') {
    if (!checkString('options.hostNetns', host, 4096).startsWith('/')) throw invalidValue('options.hostNetns', 'an absolute path', host);
  } else if (host !== undefined) {
    throw invalidType('options.hostNetns', 'a Netns or a path', host);
  }
  const timeoutMs = rawTimeout === undefined ? 5000 : checkInteger('options.timeoutMs', rawTimeout, 1, 3_600_000);
  return { procRoot, pods, hostNetns: host, timeoutMs };
}

/** The identity of the namespace file at path ("<dev>:<ino>"), by stat: nothing is opened. */
function statNetns(path: string): { id: string; inode: number } {
  const st = statSync(path);
  return { id: `${st.dev}:${st.ino}`, inode: st.ino };
}

function systemError(message: string, err: unknown, syscall: string, path: string): PodnetSystemError {
  const e = err as NodeJS.ErrnoException;
  return new PodnetSystemError(`${message}: ${e.message}`, e.code ?? 'EIO', e.errno ?? 0, { syscall, path }, { cause: err });
}

/** The host's namespace identity; a scan that cannot tell it refuses to run rather than risk pairing pods with it. */
function hostIdentity(procRoot: string, host: Netns | string | undefined): string {
  if (host instanceof Netns) return host.id;
  const path = host ?? join(procRoot, '1', 'ns', 'net');
  try {
    return statNetns(path).id;
  } catch (err) {
    const hint = host === undefined ? " (PID 1's; give options.hostNetns)" : '';
    throw systemError(`cannot tell the host's network namespace from '${path}'${hint}`, err, 'stat', path);
  }
}

/** One namespace a pod's processes are in, as the pass over the procfs saw it. */
interface Sighting {
  id: string;
  inode: number;
  /** The pod's processes there, with their start times. */
  pids: { pid: number; start: bigint }[];
}

/** What one namespace's check found: an open handle and its addresses, or why not. */
interface Checked {
  netns: Netns | undefined;
  addresses: Set<string> | undefined;
  error: Error | undefined;
}

interface PassResult {
  /** Per pod asked for: its namespaces by id, and how many of its processes were in the host's. */
  pods: Map<string, { sightings: Map<string, Sighting>; inHost: number }>;
  stats: { processes: number; podProcesses: number; vanished: number; unreadable: number };
}

/** The one pass over procRoot: every process's cgroup, and ns/net plus stat of those in a pod asked for. */
async function passOverProcfs(procRoot: string, wanted: Map<string, Set<string>>, hostId: string): Promise<PassResult> {
  let names: string[];
  try {
    names = readdirSync(procRoot);
  } catch (err) {
    throw systemError(`cannot list the processes under '${procRoot}'`, err, 'scandir', procRoot);
  }
  const pods = new Map<string, { sightings: Map<string, Sighting>; inHost: number }>();
  for (const uid of wanted.keys()) pods.set(uid, { sightings: new Map(), inHost: 0 });
  const stats = { processes: 0, podProcesses: 0, vanished: 0, unreadable: 0 };
  // Entries that vanish are normal; any other failure to read one is counted, never fatal.
  const skip = (err: unknown): void => {
    if (isNotFound(err)) stats.vanished++;
    else stats.unreadable++;
  };
  let inSlice = 0;
  for (const name of names) {
    if (!/^[1-9]\d{0,9}$/.test(name)) continue;
    if (++inSlice === SLICE) {
      inSlice = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    stats.processes++;
    const dir = join(procRoot, name);
    let uid: string | undefined;
    try {
      uid = podFromCgroup(readFileSync(join(dir, 'cgroup'), 'utf8'))?.uid;
    } catch (err) {
      skip(err);
      continue;
    }
    const pod = uid === undefined ? undefined : pods.get(uid);
    if (!pod) continue;
    stats.podProcesses++;
    let ns: { id: string; inode: number };
    let start: bigint | undefined;
    try {
      ns = statNetns(join(dir, 'ns', 'net'));
      if (ns.id === hostId) {
        pod.inHost++;
        continue;
      }
      start = startTimeFromStat(readFileSync(join(dir, 'stat'), 'utf8'));
    } catch (err) {
      skip(err);
      continue;
    }
    if (start === undefined) {
      stats.unreadable++;
      continue;
    }
    let sighting = pod.sightings.get(ns.id);
    if (!sighting) pod.sightings.set(ns.id, (sighting = { id: ns.id, inode: ns.inode, pids: [] }));
    sighting.pids.push({ pid: Number(name), start });
  }
  return { pods, stats };
}

const byAge = (a: { pid: number; start: bigint }, b: { pid: number; start: bigint }): number =>
  a.start < b.start ? -1 : a.start > b.start ? 1 : a.pid - b.pid;

/**
 * Opens the namespace through one of its processes (oldest first; a process that ended, or whose PID now names
 * another namespace, passes the turn) and reads its addresses. The handle stays open for the caller to keep or close.
 */
async function checkNetns(procRoot: string, sighting: Sighting, timeoutMs: number): Promise<Checked> {
  let lastError: Error | undefined;
  for (const { pid } of sighting.pids) {
    let netns: Netns;
    try {
      netns = Netns.open(join(procRoot, String(pid), 'ns', 'net'));
    } catch (err) {
      lastError = err as Error;
      continue;
    }
    if (netns.id !== sighting.id) {
      netns.close();
      lastError = new PodnetError(`process ${pid} left network namespace ${sighting.id} during the scan`, 'ESRCH');
      continue;
    }
    try {
      using rt = await Rtnetlink.open({ netns, timeoutMs });
      const addresses = new Set<string>();
      for (const a of await rt.addresses()) {
        const ip = canonicalIp(a.address);
        if (ip !== undefined) addresses.add(ip);
      }
      return { netns, addresses, error: undefined };
    } catch (err) {
      netns.close();
      return { netns: undefined, addresses: undefined, error: err as Error };
    }
  }
  return { netns: undefined, addresses: undefined, error: lastError };
}

/** Runs check over items, at most `limit` at a time, in order of the results' keys. */
async function checkAll(items: Sighting[], limit: number, check: (s: Sighting) => Promise<Checked>): Promise<Map<string, Checked>> {
  const out = new Map<string, Checked>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!;
      out.set(item.id, await check(item));
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The candidates of one pod, oldest process first. */
function candidatesOf(sightings: Map<string, Sighting>, checked: Map<string, Checked>, ips: Set<string>): PodNetnsCandidate[] {
  const list = [...sightings.values()].map((s) => ({ s, first: s.pids[0]! }));
  list.sort((a, b) => byAge(a.first, b.first));
  const oldestStart = list[0]?.first.start;
  return list.map(({ s, first }) => {
    const c = checked.get(s.id);
    const addresses = c?.addresses ? [...c.addresses] : undefined;
    return {
      netnsId: s.id,
      inode: s.inode,
      pid: first.pid,
      startTime: first.start,
      processes: s.pids.length,
      // A tie to the clock tick is a tie: either namespace may hold the oldest.
      oldest: first.start === oldestStart,
      addresses,
      matchedIp: addresses?.find((ip) => ips.has(ip)),
      error: c?.error,
    };
  });
}

type Decision = { ok: true; candidate: PodNetnsCandidate } | { ok: false; reason: PodNetnsMissReason; message: string };

function decide(uid: string, candidates: PodNetnsCandidate[], inHost: number): Decision {
  if (candidates.length === 0) {
    return inHost > 0
      ? { ok: false, reason: 'host-netns', message: `pod '${uid}' has processes only in the host's network namespace` }
      : { ok: false, reason: 'no-process', message: `no process of pod '${uid}' runs` };
  }
  const holding = candidates.filter((c) => c.matchedIp !== undefined);
  const names = (cs: PodNetnsCandidate[]): string => cs.map((c) => `net:[${c.inode}] (pid ${c.pid})`).join(', ');
  if (holding.length === 0) {
    const failed = candidates.filter((c) => c.error !== undefined);
    return failed.length > 0
      ? { ok: false, reason: 'unreadable', message: `pod '${uid}': ${names(failed)} could not be read, and no other namespace of it holds its IPs` }
      : { ok: false, reason: 'ip-mismatch', message: `pod '${uid}': no interface in ${names(candidates)} holds one of its IPs` };
  }
  if (holding.length > 1) {
    return { ok: false, reason: 'ambiguous', message: `pod '${uid}': ${names(holding)} all hold its IPs` };
  }
  if (!holding[0]!.oldest) {
    return {
      ok: false,
      reason: 'ambiguous',
      message: `pod '${uid}': ${names(holding)} holds its IPs but its oldest process is in ${names(candidates.filter((c) => c.oldest))}`,
    };
  }
  return { ok: true, candidate: holding[0]! };
}

/**
 * findPodNetns finds the network namespaces of running pods from a procfs (`options.procRoot`, default `/proc`; the
 * host's, e.g. `/host/proc` from a container) and returns a PodNetnsScan: open handles for the pods it paired, and
 * for the others why not (PodNetnsMissReason, with every candidate namespace). A pod is paired with a namespace when
 * its oldest process outside the host's netns is there and an interface there holds one of its IPs; processes in
 * the host's netns (PID 1's, or `options.hostNetns`) never count. Only the pods' own namespaces are opened, each once,
 * and every handle not returned is closed, on every path.
 *
 * Rejects with InvalidArgumentError for bad options (procRoot not absolute, pods not an array of `{ uid, ips }` with a UID
 * and 1-16 IP addresses each, a UID given twice) before reading anything. Rejects with a PodnetSystemError (`code`,
 * `syscall`, `path`) when procRoot cannot be listed or the host's namespace cannot be stat'ed (then nothing could
 * tell a pod's netns from the host's). Processes that end mid-scan or cannot be read are counted in `stats`, not
 * errors; a namespace that cannot be read is a candidate's `error`.
 */
export async function findPodNetns(options: FindPodNetnsOptions): Promise<PodNetnsScan> {
  const { procRoot, pods, hostNetns, timeoutMs } = checkFindOptions(options);
  const hostId = hostIdentity(procRoot, hostNetns);
  const pass = await passOverProcfs(procRoot, pods, hostId);

  const distinct = new Map<string, Sighting>();
  for (const { sightings } of pass.pods.values()) {
    for (const s of sightings.values()) {
      s.pids.sort(byAge);
      const seen = distinct.get(s.id);
      // Another pod's processes in the same namespace: one check serves both, through the oldest of all of them.
      if (!seen) distinct.set(s.id, { id: s.id, inode: s.inode, pids: [...s.pids] });
      else seen.pids = [...seen.pids, ...s.pids].sort(byAge);
    }
  }
  const checked = await checkAll([...distinct.values()], CHECKS_AT_ONCE, (s) => checkNetns(procRoot, s, timeoutMs));

  const found = new Map<string, FoundPodNetns>();
  const missing = new Map<string, PodNetnsMiss>();
  try {
    const claims = new Map<string, string[]>();
    const decided = new Map<string, { candidates: PodNetnsCandidate[]; decision: Decision }>();
    for (const [uid, { sightings, inHost }] of pass.pods) {
      const candidates = candidatesOf(sightings, checked, pods.get(uid)!);
      const decision = decide(uid, candidates, inHost);
      decided.set(uid, { candidates, decision });
      if (decision.ok) claims.set(decision.candidate.netnsId, [...(claims.get(decision.candidate.netnsId) ?? []), uid]);
    }
    for (const [uid, { candidates, decision }] of decided) {
      if (!decision.ok) {
        missing.set(uid, { uid, reason: decision.reason, message: decision.message, candidates });
        continue;
      }
      const { candidate } = decision;
      const others = claims.get(candidate.netnsId)!.filter((u) => u !== uid);
      if (others.length > 0) {
        const message = `pod '${uid}': net:[${candidate.inode}] holds its IPs and also those of pod(s) ${others.map((u) => `'${u}'`).join(', ')}`;
        missing.set(uid, { uid, reason: 'shared-netns', message, candidates });
        continue;
      }
      const check = checked.get(candidate.netnsId)!;
      const ordered = [candidate, ...candidates.filter((c) => c !== candidate)];
      // Each namespace is paired with one pod at most, so its handle goes to that pod alone.
      found.set(uid, { uid, netns: check.netns!, pid: candidate.pid, ip: candidate.matchedIp!, candidates: ordered });
      check.netns = undefined;
    }
  } catch (err) {
    for (const f of found.values()) f.netns.close();
    throw err;
  } finally {
    for (const c of checked.values()) c.netns?.close();
  }
  return new PodNetnsScan(found, missing, { ...pass.stats, netnsChecked: checked.size });
}
