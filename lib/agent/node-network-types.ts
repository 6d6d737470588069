/**
 * The shapes NodeNetwork takes and gives: its options, a pod as the agent sees it, the node proxy it hands pods to,
 * the reports of verify and syncSnapshot, and its events.
 */
import type { NftVerifyResult } from '../nftables/index.js';
import type { NetnsLike } from '../netns.js';
import type { ZdsWorkloadInfo } from '../proxy/zds-messages.js';
import type { ZtunnelWorkload } from '../proxy/ztunnel-server.js';
import type { Ipset } from '../ipset/client.js';
import type { IptablesFactory, NetnsOpener, NftablesFactory, RtnetlinkFactory } from './backends.js';
import type { AgentError, AgentStep } from './errors.js';
import type { PreflightChoice } from './node-preflight.js';
import type { ConflictPolicy, ProbeConflict, ProbeOwnerMismatch } from './probe-ownership.js';
import type { ProbeSetState, RulesCheck } from './rule-backend.js';
import type { PodRoutingState } from './routes.js';
import type { Logger } from '../logger.js';

/** NodeNetworkOptions configure a NodeNetwork; every field has a default, the backends default to the real ones. */
export interface NodeNetworkOptions {
  /** The host namespace (a handle or a path); default: the current one. */
  hostNetns?: NetnsLike;
  /** Probe sets are `<prefix>-v4` and `<prefix>-v6`; default 'istio-inpod-probes'. */
  probeSetPrefix?: string;
  /** Also handle IPv6: the v6 probe set, ip6tables host and in-pod rules (default false). */
  ipv6?: boolean;
  /** Capture DNS inside pods (default true). */
  dnsCapture?: boolean;
  /** The IPv4 address probes are SNATed to, in host and in-pod rules (default INPOD.probeSourceV4). */
  probeSourceV4?: string;
  /** The IPv6 one, used with `ipv6` (default INPOD.probeSourceV6). */
  probeSourceV6?: string;
  /** What to do when a pod's IP is still owned by another pod (default 'takeover'). */
  onConflict?: ConflictPolicy;
  /** The host's ipset client; default one opened in hostNetns (and closed by stop()). */
  ipset?: Ipset;
  /** Opens iptables clients; default real ones (Iptables.open). */
  iptables?: IptablesFactory;
  /**
   * Which rules the node gets: 'iptables' (default; probe sets in ipset) or 'nftables' (the reference's nftables
   * backend: probe sets as nft sets in the host's `inet istio-ambient-nat`, in-pod rules as its three inet tables,
   * each pod's in one batch; no ipset or iptables used).
   */
  backend?: 'iptables' | 'nftables';
  /** Opens nf_tables clients for the nftables backend; default real ones (Nftables.open). */
  nftables?: NftablesFactory;
  /**
   * The kubelet's uid for the nftables backend's host SNAT rule (`meta skuid`); default: detected at start() from
   * the process hosting the kubelet under `hostProcRoot` (comm `kubelet`, MicroK8s' `kubelite`, or `k3s server` /
   * `k3s agent`; see detectKubeletUid). When it cannot be told, start() rejects with AgentError step 'kubelet-uid'
   * (`ERR_AGENT_KUBELET_UID`) whose cause is a KubeletUidError, before anything is changed.
   */
  kubeletUid?: number;
  /**
   * The host's procfs, an absolute path, where the nftables backend looks for the kubelet when `kubeletUid` is not
   * given (default '/proc'). An agent in a container passes the host's /proc mounted into it (the reference's
   * DaemonSet mounts it at '/host/proc'): its own /proc shows only its own processes.
   */
  hostProcRoot?: string;
  /** Opens pod namespaces; default real ones (Netns). */
  netns?: NetnsOpener;
  /** Opens rtnetlink clients in pod namespaces for the policy routes; default real ones (Rtnetlink.open). */
  rtnetlink?: RtnetlinkFactory;
  /**
   * The node proxy each pod's netns is handed to (a ZtunnelServer, or anything with its interface); default none.
   * With one, pods need `workload` and `netns`, and it holds the enrolled pods a (re)connecting proxy gets as its
   * snapshot: syncSnapshot replaces them; stop() leaves the proxy alone (its owner closes it).
   */
  proxy?: WorkloadProxy;
  /** Where the agent logs its steps, conflicts and repairs (any levels may be left out; default: nowhere). */
  logger?: Partial<Logger>;
  /**
   * The check start() runs first, rejecting with AgentError step 'preflight' before it changes anything when the
   * node lacks a feature: false skips it; a function (NodePreflight) is the check; true, or the preflight's own
   * settings (`probes`, `path`, `netnsSysctls` of PreflightOptions), runs the preflight wired in (the package's
   * NodeNetwork wires checkNode, run for this backend, `ipv6` and `hostProcRoot`). Default: the wired preflight with
   * the real backends, none when any backend (ipset, iptables, nftables, netns, rtnetlink) is given, since those are
   * not the kernel.
   */
  preflight?: PreflightChoice;
  /**
   * How many pods' addPod and removePod calls run at once, an integer from 1 to 1024; the others wait their turn in
   * call order, so in a burst the first pods finish first and no step's deadline starts before its pod's turn. A
   * removal's wait for the kernel to release the pod's nf_tables socket (nftables) comes after its turn: it is no work.
   * Default: with iptables one per CPU, with nftables libuv's pool size (UV_THREADPOOL_SIZE, default 4).
   */
  maxPodsInFlight?: number;
}

/** WorkloadProxy is what NodeNetwork needs of the node proxy: ZtunnelServer's workload calls. */
export interface WorkloadProxy {
  /**
   * addWorkload hands a pod's namespace to the proxy and resolves on its ack; rejects with ProxyError when it cannot.
   */
  addWorkload(uid: string, workload: ZdsWorkloadInfo, netns: { readonly fd: number }): Promise<void>;
  /** delWorkload tells the proxy the pod is gone and resolves on its ack; rejects with ProxyError when it cannot. */
  delWorkload(uid: string): Promise<void>;
  /** replaceWorkloads sets the pods a (re)connecting proxy is sent as its snapshot. */
  replaceWorkloads(workloads: readonly ZtunnelWorkload[]): void;
}

/** PodInfo is a pod as the agent sees it. */
export interface PodInfo {
  /** The pod's UID: the owner recorded in the probe set entries. */
  uid: string;
  /** The pod's IPs (IPv4, and IPv6 with the `ipv6` option). */
  ips: readonly string[];
  /** The pod's namespace (handle or path); needed for in-pod rules. */
  netns?: NetnsLike;
  /** Leave the pod's inbound traffic alone (inpodRules' `ingressOnly`; default false). */
  ingressOnly?: boolean;
  /**
   * Interfaces inside the pod whose inbound TCP is redirected to the proxy's outbound port (inpodRules'
   * `virtualInterfaces`, the reference's `istio.io/reroute-virtual-interfaces` annotation; default none). Each an
   * interface name: 1 to 15 bytes, no whitespace, '/' or ':', not '.' or '..'.
   */
  virtualInterfaces?: readonly string[];
  /** The pod's name, namespace and service account, for the node proxy (needed with the `proxy` option). */
  workload?: ZdsWorkloadInfo;
}

/** PodVerifyReport is what verify found in one pod's namespace. */
export interface PodVerifyReport {
  /** The pod's UID. */
  uid: string;
  /** Whether its namespace is the one it was enrolled in and its rules and routes are all as they should be. */
  inSync: boolean;
  /**
   * The pod's namespace: 'ok'; 'gone' (its path no longer opens: nothing else was checked); or 'replaced' (it opens
   * to another namespace than the one addPod enrolled, as when the runtime recreated the sandbox: addPod again, or
   * repair, enrolls the new one).
   */
  netns: 'ok' | 'gone' | 'replaced';
  /**
   * The in-pod rules as the backend checked them: per family with iptables (4, 6), one 'inet' check of the tables
   * both families share with nftables; empty when the namespace is gone.
   */
  rules: RulesCheck[];
  /** @deprecated use rules: the nftables backend's own result for the pod's tables (with the nftables backend). */
  nftRules?: NftVerifyResult;
  /** The policy rule and local route, per family that gets them. */
  routes: PodRoutingState[];
  /**
   * The pod's probe entries as the host's probe sets hold them (read from the sets, not the agent's memory): its IPs
   * with no entry (`missing`), and those whose entry another pod owns (`foreign`). Both are empty when in sync.
   */
  probeEntries: {
    /** The pod's IPs (normalized) that have no entry. */
    missing: string[];
    /** The pod's IPs whose entry names another owner ('' for an entry without comment). */
    foreign: { ip: string; owner: string }[];
  };
}

/** PodProbeEntries is what verify found of one pod's probe entries. */
export type PodProbeEntries = PodVerifyReport['probeEntries'];

/** NodeVerifyReport is what NodeNetwork.verify found on the host and in the pods it was given. */
export interface NodeVerifyReport {
  /** Whether everything is as it should be. */
  inSync: boolean;
  /** Each probe set: whether it exists, and whether it has the type and options the agent creates. */
  sets: ProbeSetState[];
  /**
   * The host SNAT rules as the backend checked them: per family with iptables (4, 6), one 'inet' check of the host
   * table with nftables.
   */
  hostRules: RulesCheck[];
  /** @deprecated use hostRules: the nftables backend's own result for the host table (with the nftables backend). */
  nftHostRules?: NftVerifyResult;
  /** The pods passed to verify({ pods }), in that order. */
  pods: PodVerifyReport[];
}

/**
 * SnapshotReport is what NodeNetwork.syncSnapshot changed, and which pods it could not bring in line (`failed`): the
 * snapshot is in sync only when `failed` is empty.
 */
export interface SnapshotReport {
  /** Probe entries added. */
  added: number;
  /** Probe entries already there for the same pod. */
  unchanged: number;
  /** Probe entries taken over from another pod. */
  takenOver: number;
  /** Probe entries removed because no pod of the snapshot claims their IP. */
  pruned: { ip: string; owner: string }[];
  /** Set when pruning was skipped because some pod had no IP yet. */
  pruneSkipped: boolean;
  /** Pods whose in-pod rules were re-applied (with `reapplyRules`). */
  rulesReapplied: number;
  /**
   * The pods that failed, in snapshot order. A pod whose rules could not be re-applied gets no probe entry written
   * (a probe entry never exists without its rules); an entry it already has is left as it is (its IP is still
   * claimed, so never pruned). Retrying the snapshot, or addPod / removePod for the pod, settles it.
   */
  failed: {
    /** The pod's UID. */
    uid: string;
    /** The step that failed ('netns', 'inpod-rules' or 'routes' while re-applying its rules; 'probe-set'). */
    step: AgentStep;
    /** What failed, with `retryable` and the original error as `cause`. */
    error: AgentError;
  }[];
}

/**
 * NodeNetworkEvents are the events a NodeNetwork emits, after the change they report. A listener that throws is
 * logged as an error and never fails the operation that emitted the event.
 */
export interface NodeNetworkEvents {
  /** A pod's IP was taken over from another pod (onConflict 'takeover'). */
  conflict: [ProbeConflict];
  /** A removal was refused because another pod owns the entry. */
  ownerMismatch: [ProbeOwnerMismatch];
}
