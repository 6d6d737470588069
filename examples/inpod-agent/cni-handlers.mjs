// What the agent does for each CNI command podnet-cni forwards: CniServer has already checked the invocation as
// the CNI spec says, so each handler only maps it to NodeNetwork. Errors are left to CniServer's mapping: a
// retryable AgentError is answered with code 11 (the runtime retries ADD), InvalidArgumentError with 7, a CniError
// with its own code, anything else with 100 and its `code` in details.
import { CniError, CNI_ERROR_CODES, PodnetError } from 'podnet';

/**
 * podOf builds the pod NodeNetwork enrolls from an ADD. The UID comes from CNI_ARGS' K8S_POD_UID, which the kubelet's
 * runtimes pass; a runtime that passes none (podman) gets the container ID as the pod's identity. The node proxy
 * needs the workload's name, namespace and service account: a real agent reads them from the API server (its pod
 * informer, which also says whether the pod is in the mesh at all); here the name and namespace come from CNI_ARGS
 * and the service account stays empty.
 */
function podOf(req, withWorkload) {
  const uid = req.pod?.uid ?? req.containerId;
  const workload = withWorkload
    ? { name: req.pod?.name ?? req.containerId, namespace: req.pod?.namespace ?? 'default', serviceAccount: '' }
    : undefined;
  return { uid, ips: req.ips, ifName: req.ifName, ...(workload ? { workload } : {}) };
}

/** summary says in one line what verify found out of sync for one pod. */
function summary(report) {
  if (report.netns !== 'ok') return `its netns is ${report.netns}`;
  const parts = [];
  for (const { family, result } of report.rules) {
    if (!result.inSync) parts.push(`${family === 'inet' ? 'nftables' : `IPv${family}`} in-pod rules drifted: ${result.missing.length} missing`);
  }
  for (const r of report.routes) if (!(r.rule && r.route)) parts.push(`IPv${r.family} policy routing drifted`);
  return parts.join(', ') || 'not in sync';
}

/**
 * cniHandlers returns CniServer's handlers for an agent: `network` (a started NodeNetwork), `pods` (the PodTable),
 * `proxy` (the ZtunnelServer, or undefined), `isStarted()` (whether the node network is up), `podAppears(path)` (told
 * of each ADD's netns path before addPod: FakeNode's opener needs it, a real node does not) and `log`.
 */
export function cniHandlers({ network, pods, proxy, isStarted, podAppears = () => {}, log }) {
  return {
    async add(req) {
      const pod = podOf(req, proxy !== undefined);
      podAppears(req.netnsPath);
      // Recorded before addPod: when a step fails, the runtime's DEL (or the next ADD) finds what to clean up.
      pods.set(req.containerId, { ...pod, netns: req.netnsPath });
      // The fd the plugin passed is the namespace the runtime made, whatever its path names by now.
      await network.addPod({ ...pod, netns: req.netns });
      log(`ADD ${req.containerId} pod ${pod.uid} ${pod.ips.join(',') || '(no IP)'}`);
    },

    async del(req) {
      const pod = pods.get(req.containerId);
      if (pod === undefined) {
        // DEL must succeed for a container the agent never enrolled (or already removed): nothing to do.
        log(`DEL ${req.containerId}: not enrolled`);
        return;
      }
      // deleted: the pod's netns goes away with its rules, and the proxy forgets the pod.
      await network.removePod({ uid: pod.uid, ips: pod.ips }, { deleted: true });
      pods.delete(req.containerId);
      log(`DEL ${req.containerId} pod ${pod.uid}`);
    },

    async check(req) {
      const pod = pods.get(req.containerId);
      if (pod === undefined) {
        throw new CniError(CNI_ERROR_CODES.unknownContainer, `container '${req.containerId}' is not enrolled`, req.containerId);
      }
      // The runtime's netns, not the one recorded: a sandbox recreated under the same container shows as 'replaced'.
      const report = await network.verify({ pods: [{ uid: pod.uid, ips: pod.ips, netns: req.netns }] });
      const [found] = report.pods;
      if (!report.inSync) {
        const why = found && !found.inSync ? summary(found) : 'the node rules or probe sets drifted';
        throw new PodnetError(`pod '${pod.uid}' is not in sync: ${why}`, 'ERR_POD_NOT_IN_SYNC');
      }
    },

    status() {
      if (!isStarted()) throw new CniError(CNI_ERROR_CODES.notAvailable, 'the node network is not started');
      // Enrolled pods are redirected to a proxy that is not there: they fail closed until it connects.
      if (proxy !== undefined && proxy.connected === 0) {
        throw new CniError(CNI_ERROR_CODES.notAvailableLimitedConnectivity, 'no node proxy is connected');
      }
    },

    async gc(req) {
      const keep = new Set(req.validAttachments.map((a) => `${a.containerID}/${a.ifname}`));
      for (const [containerId, pod] of pods.entries()) {
        if (keep.has(`${containerId}/${pod.ifName}`)) continue;
        try {
          await network.removePod({ uid: pod.uid, ips: pod.ips }, { deleted: true });
          pods.delete(containerId);
          log(`GC ${containerId} pod ${pod.uid}`);
        } catch (err) {
          // GC should not fail: what is left is tried again at the next GC.
          log(`GC ${containerId} pod ${pod.uid} failed: ${err.code ?? ''} ${err.message}`);
        }
      }
    },
  };
}
