/**
 * The preflight's public shapes: what checkNode is asked (PreflightOptions), what it answers (PreflightReport, one
 * PreflightRow per feature), and the probe layer it runs (PreflightProbe), which callers may replace probe by probe.
 */
import type { Netns } from '../netns.js';

/** PreflightBackend is the rule backend a node agent uses, as NodeNetworkOptions.backend names it. */
export type PreflightBackend = 'iptables' | 'nftables';

/**
 * PreflightRow is one feature the node was probed for. `ok` false with `required` true means the chosen
 * configuration cannot work on this node; `detail` says what was found, or what is missing and why.
 */
export interface PreflightRow {
  /** The feature, as an operator reads it ("ipset hash:ip with comment", "CAP_NET_ADMIN", ...). */
  feature: string;
  /** The part of podnet that uses it ("probe set (ipset)", "in-pod rules (iptables)", ...). */
  needed_by: string;
  /** Whether the node offers it (the probe ran and succeeded). */
  ok: boolean;
  /** What was found (a version, a value), or what is missing, with the kernel's or the program's own words. */
  detail: string;
  /** Whether the chosen configuration needs it: a missing required feature fails the preflight. */
  required: boolean;
}

/** PreflightReport is what checkNode found: every row, and those the chosen configuration needs but lacks. */
export interface PreflightReport {
  /** Whether every required feature is there. */
  ok: boolean;
  /** The backend the report is for. */
  backend: PreflightBackend;
  /** Whether IPv6 was asked for. */
  ipv6: boolean;
  /** One row per feature, in probe order. */
  rows: PreflightRow[];
  /** The required rows that are not ok (the same objects as in rows). */
  missing: PreflightRow[];
  /** How long the whole check took, ms. */
  durationMs: number;
}

/** PreflightProbeId names a probe of the default layer (the keys of PreflightOptions.probes). */
export type PreflightProbeId =
  | 'kernel'
  | 'cap-net-admin'
  | 'cap-sys-admin'
  | 'cap-sys-ptrace'
  | 'netns'
  | 'ipv6'
  | 'policy-routing'
  | 'unix-seqpacket'
  | 'host-proc'
  | 'cgroup'
  | 'ipset-hash-ip'
  | 'ipset-hash-ip6'
  | 'ipset-hash-net'
  | 'ipset-hash-ip-port'
  | 'iptables-backends'
  | 'iptables-inpod'
  | 'iptables-host'
  | 'ip6tables-inpod'
  | 'ip6tables-host'
  | 'nft-inpod'
  | 'nft-host'
  | 'nft-generation';

/**
 * PreflightContext is what a probe gets: the configuration, and scratch() to work in a fresh namespace that goes
 * when its callback ends (resolved or rejected).
 */
export interface PreflightContext {
  /** The backend being checked. */
  readonly backend: PreflightBackend;
  /** Whether IPv6 was asked for. */
  readonly ipv6: boolean;
  /** The host's procfs (default '/proc'). */
  readonly hostProcRoot: string;
  /** Where iptables programs are looked up (default SAFE_PATH). */
  readonly path: string;
  /**
   * scratch runs fn with a fresh, anonymous network namespace of its own (loopback up, sysctls set), which goes once
   * fn has ended and the programs it started there have exited.
   */
  scratch<T>(fn: (netns: Netns) => Promise<T>): Promise<T>;
}

/**
 * PreflightProbeFn probes one feature: it resolves a detail when the feature is there and rejects (with any error,
 * whose message becomes the row's detail) when it is missing or cannot be probed.
 */
export type PreflightProbeFn = (context: PreflightContext) => Promise<string>;

/** PreflightProbe is one row's probe: its feature, who needs it, whether the configuration requires it, and how. */
export interface PreflightProbe {
  /** The probe's id, the key callers replace it by. */
  id: PreflightProbeId;
  /** The row's feature. */
  feature: string;
  /** The row's needed_by. */
  neededBy: string;
  /** Whether the configuration requires it. */
  required: boolean;
  /** The kernel modules (or programs) that provide it, named in the detail when it is missing. */
  provides: string;
  /** The probe itself. */
  run: PreflightProbeFn;
}

/** PreflightOptions configure checkNode; every field has a default. */
export interface PreflightOptions {
  /** The rule backend to check for (default 'iptables', as NodeNetwork's). */
  backend?: PreflightBackend;
  /** Also check what IPv6 needs (default false, as NodeNetwork's). */
  ipv6?: boolean;
  /** The host's procfs, an absolute path (default '/proc'), as NodeNetworkOptions.hostProcRoot. */
  hostProcRoot?: string;
  /**
   * The PATH iptables programs are looked up on (colon-separated absolute folders; default SAFE_PATH), as an agent
   * image has them.
   */
  path?: string;
  /**
   * Sysctls set in every probe's namespace before it runs (`{ 'net.ipv6.conf.all.disable_ipv6': '1' }`), so the
   * probes see what the node's pod namespaces get.
   */
  netnsSysctls?: Record<string, string>;
  /**
   * Probes to run instead of the default ones, by id: a replaced probe's row keeps its feature and needed_by. For
   * tests and for callers that know better (a feature provided some other way).
   */
  probes?: Partial<Record<PreflightProbeId, PreflightProbeFn>>;
  /** Reuse this process's earlier report for the same configuration (default true; ignored with `probes`). */
  cache?: boolean;
  /**
   * Probe only the features this configuration requires (default false: every row, as `podnet doctor` prints them).
   * NodeNetwork.start() asks for these only: the others cannot stop it, and each costs a namespace or a program run.
   */
  requiredOnly?: boolean;
}
