/**
 * The Kubernetes pod a process belongs to, told from its /proc/PID/cgroup text. The kubelet puts every container of a
 * pod (the sandbox's pause container included) under one pod cgroup whose name carries the pod's UID, below a
 * `kubepods` root, whatever the cgroup driver and runtime:
 *
 * - cgroupfs driver: `/kubepods/pod<uid>/<id>` (guaranteed), `/kubepods/burstable/pod<uid>/<id>`,
 *   `/kubepods/besteffort/pod<uid>/<id>`;
 * - systemd driver: `/kubepods.slice/kubepods-pod<uid_>.slice/<scope>` and
 *   `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice/<scope>`, the UID's dashes written
 *   as underscores (a dash separates levels in a systemd slice name), the scope `cri-containerd-<id>.scope`,
 *   `crio-<id>.scope` or `docker-<id>.scope`;
 * - either below a prefix (kind's kubelet runs under `/kubelet.slice/kubelet-kubepods.slice/...`, a node in a
 *   container under `/docker/<id>/kubepods/...`), on cgroup v1 (`N:controllers:path`) and v2 (`0::path`) lines.
 */

/** PodCgroup is the pod (and, when the path names one, the container) a process's cgroup places it in. */
export interface PodCgroup {
  /** The pod's UID as the API server writes it: lowercase, dashes (a systemd slice's underscores turned back). */
  readonly uid: string;
  /** The container's id from the level below the pod (`cri-containerd-<id>.scope`, `<id>`), when there is one. */
  readonly containerId: string | undefined;
  /** The runtime the container scope's name tells, when it tells one. */
  readonly runtime: 'containerd' | 'crio' | 'docker' | undefined;
}

// A UID as the kubelet names pods: an API server UUID, or a static pod's 32 hex digits (an md5 of its manifest).
const UID_RE = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;
// The systemd driver's pod slice: `<parent-path>-pod<uid_>.slice`, the parent path's own names dash-joined.
const SYSTEMD_POD_RE = /^(?:[a-z0-9_.]+-)*pod([0-9a-fA-F_]+)\.slice$/;
// The cgroupfs driver's pod directory.
const CGROUPFS_POD_RE = /^pod([0-9a-fA-F-]+)$/;
// Container scopes of the systemd driver, by runtime.
const SCOPE_RE = /^(cri-containerd|crio|docker)-([0-9a-zA-Z]+)\.scope$/;
// A container directory of the cgroupfs driver: the runtime's hex id.
const CGROUPFS_CONTAINER_RE = /^[0-9a-f]{12,128}$/;
// CRI-O's conmon runs beside the container in the pod's cgroup, but in the host's namespaces: a monitor, not the pod.
const CONMON_RE = /^crio-conmon-[0-9a-zA-Z]+\.scope$/;

const RUNTIMES = { 'cri-containerd': 'containerd', crio: 'crio', docker: 'docker' } as const;

/** The pod a cgroup path names, 'monitor' for a runtime's monitor process in a pod cgroup, or undefined. */
function podFromPath(path: string): PodCgroup | 'monitor' | undefined {
  if (!path.startsWith('/')) return undefined;
  const segments = path.split('/').filter((s) => s !== '');
  let underKubepods = false;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (!underKubepods) {
      // `kubepods`, `kubepods.slice`, `kubelet-kubepods.slice`: the root the kubelet's QoS levels hang from.
      if (segment === 'kubepods' || /^(?:[a-z0-9_.]+-)?kubepods\.slice$/.test(segment)) underKubepods = true;
      continue;
    }
    const systemd = SYSTEMD_POD_RE.exec(segment);
    const cgroupfs = systemd ? null : CGROUPFS_POD_RE.exec(segment);
    if (!systemd && !cgroupfs) continue;
    const uid = (systemd ? systemd[1]!.replaceAll('_', '-') : cgroupfs![1]!).toLowerCase();
    if (!UID_RE.test(uid)) return undefined;
    const below = segments[i + 1];
    if (below !== undefined && CONMON_RE.test(below)) return 'monitor';
    const scope = below === undefined ? null : SCOPE_RE.exec(below);
    if (scope) return { uid, containerId: scope[2]!, runtime: RUNTIMES[scope[1] as keyof typeof RUNTIMES] };
    if (below !== undefined && CGROUPFS_CONTAINER_RE.test(below)) return { uid, containerId: below, runtime: undefined };
    return { uid, containerId: undefined, runtime: undefined };
  }
  return undefined;
}

/**
 * podFromCgroup returns the pod the /proc/PID/cgroup text places a process in, or undefined when it places it in
 * none: a process outside kubepods (system.slice, a user session, the root), a runtime's monitor (CRI-O's conmon,
 * which lives in the pod's cgroup but not in its namespaces), garbage, or lines that name two different pods (a
 * process half moved between cgroups decides nothing). A line without a pod (the `0::/` of a hybrid layout, a
 * controller left at the root) does not veto the others. Never throws.
 */
export function podFromCgroup(text: string): PodCgroup | undefined {
  if (typeof text !== 'string') return undefined;
  let found: PodCgroup | undefined;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    // hierarchy-ID:controller-list:path; the path may itself hold colons, so only the first two split.
    const first = line.indexOf(':');
    const second = first < 0 ? -1 : line.indexOf(':', first + 1);
    if (second < 0 || !/^\d+$/.test(line.slice(0, first))) continue;
    const pod = podFromPath(line.slice(second + 1));
    if (pod === 'monitor') return undefined;
    if (pod === undefined) continue;
    if (found === undefined) found = pod;
    else if (found.uid !== pod.uid) return undefined;
    else if (found.containerId === undefined && pod.containerId !== undefined) found = pod;
  }
  return found;
}
