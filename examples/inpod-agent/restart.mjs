// The agent's start-up after a restart: pods enrolled by the previous run still run, and no CNI ADD comes for them
// again. Their rules and probe entries are still in place, but the new process holds no handle on their netns, and
// the node proxy needs one per pod in its snapshot.
//
// This example takes the pod list from its own state file. A real agent takes it from the API server instead (the
// pods on its node that are in the mesh, with their UIDs and status.podIPs): the API server also knows of pods
// enrolled while the state file could not be written, of pods deleted while no agent ran (their DEL was answered
// with code 11 and their sandbox is gone), and whether a pod is still in the mesh at all. Either way the netns comes
// from /proc: findPodNetns pairs each pod's cgroup with the netns of its oldest process, skips the host's, and
// checks that the netns holds one of the pod's IPs.
import { findPodNetns } from 'podnet';

// findPodNetns takes Kubernetes pod UIDs (a UUID, or a static pod's 32 hex digits); a pod enrolled under its
// container ID (a runtime that passes no K8S_POD_UID) has no pod cgroup to find it by.
const POD_UID = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/i;

/**
 * rediscoverPods reads the previous run's pods from `pods` (a PodTable), finds their netns under `procRoot`
 * (`hostNetns`: the node's netns when it is not PID 1's), records them in the table, and hands them all to
 * NodeNetwork.syncSnapshot({ reapplyRules: true }): in-pod rules and routes reconciled in every found netns, the
 * proxy's snapshot set (a pod without a netns is sent as Keep: the proxy keeps what it has), probe entries upserted
 * and the ones no pod claims pruned. A pod whose processes are all gone is dropped. Resolves the snapshot report and
 * what was found and missed.
 */
export async function rediscoverPods({ network, pods, procRoot, hostNetns, log }) {
  const saved = pods.load();
  const findable = saved.filter((p) => POD_UID.test(p.uid) && p.ips.length > 0);
  const scan =
    findable.length === 0
      ? undefined
      : await findPodNetns({
          pods: findable.map((p) => ({ uid: p.uid, ips: p.ips })),
          ...(procRoot === undefined ? {} : { procRoot }),
          ...(hostNetns === undefined ? {} : { hostNetns }),
        });
  const found = [];
  const missed = [];
  try {
    for (const p of saved) {
      const { containerId, ...pod } = p;
      const uid = pod.uid.toLowerCase();
      const netns = scan?.take(uid);
      if (netns !== undefined) {
        pods.set(containerId, { ...pod, netns });
        found.push({ containerId, uid, inode: netns.inode });
        log(`restart: pod ${pod.uid} found in net:[${netns.inode}]`);
        continue;
      }
      const miss = scan?.missing.get(uid);
      const reason = miss?.reason ?? 'not-findable';
      missed.push({ containerId, uid: pod.uid, reason });
      if (reason === 'no-process') {
        log(`restart: pod ${pod.uid} is gone (no process in its cgroup); dropped`);
        continue;
      }
      // Not decided (an IP mismatch, an ambiguous or unreadable netns): the pod stays enrolled without a netns, so
      // its probe entries stay and the proxy keeps its listeners; the report says why.
      pods.set(containerId, { ...pod, netns: undefined });
      log(`restart: pod ${pod.uid} netns not found (${reason}${miss ? `: ${miss.message}` : ''}); kept without one`);
    }
  } finally {
    scan?.close();
  }
  const snapshot = pods.pods().map(({ uid, ips, netns, workload }) => ({ uid, ips, ...(netns ? { netns } : {}), ...(workload ? { workload } : {}) }));
  const report = await network.syncSnapshot(snapshot, { reapplyRules: true });
  // A pod the snapshot could not enroll (its netns went away meanwhile, an IP another pod holds) is reported, not
  // thrown: the others are in place; this one gets no probe entry until its next ADD or the next snapshot.
  for (const { uid, step, error } of report.failed) log(`restart: pod ${uid} not re-enrolled at step ${step}: ${error.message}`);
  return { report, found, missed };
}
