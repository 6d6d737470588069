/**
 * The one seam between NodeNetwork and the kernel's rule machinery: a RuleBackend keeps the host's probe sets and
 * SNAT rule and writes, checks and removes each pod's in-pod rules. iptables-backend.ts (ipset sets, iptables rules
 * per family) and nftables-backend.ts (nft sets and inet tables) implement it; NodeNetwork keeps the order of the
 * steps, their errors and events, and never asks which backend it holds. What a backend reports of its rules is in
 * terms both share (RulesCheck), so the reports do not change shape with the backend.
 */
import type { NftVerifyResult } from '../nftables/index.js';
import type { RuleRef, VerifyResult } from '../iptables/verify.js';
import type { NftDrift } from '../nftables/ruleset-diff.js';
import type { AgentNetns } from './backends.js';
import type { AgentStep } from './errors.js';
import type { ProbeOwnership } from './probe-ownership.js';

/** RuleDrift is what a check of one rule set found, each difference as text. */
export interface RuleDrift {
  /** Whether the rules are there exactly (missing, unexpected and reordered are all empty). */
  inSync: boolean;
  /** Chains, sets and rules that are not there (`-t nat -A ISTIO_PRERT ...` for iptables, `inet istio-ambient-nat chain output rule ...` for nftables). */
  missing: string[];
  /** Chains and rules in the owned tables or chains that the rule set does not have. */
  unexpected: string[];
  /** Chains holding exactly the rule set's rules, in another order. */
  reordered: string[];
}

/**
 * RulesCheck is one checked rule set: an iptables family's (4 or 6), or the nftables backend's inet tables, which
 * hold both families ('inet').
 */
export interface RulesCheck {
  /** The family the rule set is for: 4, 6, or 'inet' for both. */
  family: 4 | 6 | 'inet';
  /** What the check found. */
  result: RuleDrift;
}

/** ProbeSetState is one probe set as verify found it: whether it exists, and with the type and options created. */
export interface ProbeSetState {
  /** The set's name. */
  name: string;
  /** Whether it exists. */
  present: boolean;
  /** Whether it has the type and options the agent creates. */
  ok: boolean;
}

/** HostRulesReport is what a backend's verify found on the host. */
export interface HostRulesReport {
  /** Each probe set. */
  sets: ProbeSetState[];
  /** The host SNAT rules. */
  hostRules: RulesCheck[];
  /** The nftables backend's own result for its host table (the deprecated `nftHostRules` of the reports). */
  nftHostRules?: NftVerifyResult;
}

/** PodRulesReport is what a backend's verifyPod found of a pod's in-pod rules. */
export interface PodRulesReport {
  /** The in-pod rules. */
  rules: RulesCheck[];
  /** The nftables backend's own result for the pod's tables (the deprecated `nftRules` of the reports). */
  nftRules?: NftVerifyResult;
}

/** RuleOptions are the node's options every rule set depends on, as NodeNetwork checked them. */
export interface RuleOptions {
  /** The probe sets are `<probeSetPrefix>-v4` and `<probeSetPrefix>-v6`. */
  probeSetPrefix: string;
  /** Whether IPv6 gets its probe set and rules. */
  ipv6: boolean;
  /** Whether DNS is captured inside pods. */
  dnsCapture: boolean;
  /** The IPv4 address probes are SNATed to. */
  probeSourceV4: string;
  /** The IPv6 one. */
  probeSourceV6: string;
}

/** PodRulesVariant is what a pod's in-pod rules depend on besides the node's options. */
export interface PodRulesVariant {
  /** Leave the pod's inbound traffic alone. */
  ingressOnly?: boolean;
  /** Interfaces whose inbound TCP is redirected to the proxy's outbound port. */
  virtualInterfaces?: readonly string[];
}

/** isPlain tells whether a pod has no rule variant: it then gets the same in-pod rules as every such pod. */
export function isPlain(pod: PodRulesVariant): boolean {
  return pod.ingressOnly !== true && (pod.virtualInterfaces?.length ?? 0) === 0;
}

/** StepRunner runs fn as one of NodeNetwork's steps: published on `podnet:agent:step`, a failure an AgentError. */
export type StepRunner = <T>(step: AgentStep, what: string, fn: () => Promise<T>) => Promise<T>;

/**
 * PodRemoval is what a backend's removePod leaves to wait for once the rules are gone: `released` resolves once the
 * kernel has let go of what the removal used (the pod's nf_tables socket, which it releases only after freeing the
 * deleted tables, an RCU grace period later). NodeNetwork waits for it inside the pod's own turn but outside the
 * bound on pods in flight: it is a wait, not work, and the releases of many pods end together.
 */
export interface PodRemoval {
  released?: () => Promise<void>;
}

/**
 * RuleBackend is how NodeNetwork's flows reach the kernel's rules. open() runs first; every other call comes after
 * it. NodeNetwork wraps each call in its step ('host-rules' for start and repair, 'inpod-rules' for the pod calls);
 * open and stop run the steps that differ by backend through the StepRunner they are given. Every method rejects
 * with the error of the client that failed (IpsetError, IptablesRestoreError, NftablesError, ...).
 */
export interface RuleBackend {
  /** name is the backend's: 'iptables' or 'nftables'. */
  readonly name: 'iptables' | 'nftables';
  /**
   * podRulesLead tells whether applyPod takes far longer than a pod's routing and proxy handoff (a process run),
   * so that addPod lets the rules' request leave before it starts the other two.
   */
  readonly podRulesLead: boolean;
  /** open connects to the host's kernel and returns the probe sets (not yet created), running its steps by step. */
  open(step: StepRunner): Promise<ProbeOwnership>;
  /** start installs the host SNAT rules (an existing copy is replaced). */
  start(): Promise<void>;
  /** stop removes the host rules and the probe sets (unless keep) by step, then closes what open opened. */
  stop(step: StepRunner, keep: boolean): Promise<void>;
  /** applyPod writes the pod's in-pod rules into its namespace. */
  applyPod(pod: PodRulesVariant, ns: AgentNetns): Promise<void>;
  /** repairPod makes the pod's in-pod rules exactly what they should be. */
  repairPod(pod: PodRulesVariant, ns: AgentNetns): Promise<void>;
  /** removePod deletes the pod's in-pod rules, and tells what is left to wait for (PodRemoval). */
  removePod(pod: PodRulesVariant, ns: AgentNetns): Promise<PodRemoval>;
  /** verifyPod checks the pod's in-pod rules; it changes nothing. */
  verifyPod(pod: PodRulesVariant, ns: AgentNetns): Promise<PodRulesReport>;
  /** verify checks the probe sets and the host rules; it changes nothing. */
  verify(): Promise<HostRulesReport>;
  /** repair re-applies the host rules (and, with nftables, the sets' table). */
  repair(): Promise<void>;
}

/** iptablesDrift is an iptables VerifyResult as text. */
export function iptablesDrift(result: VerifyResult): RuleDrift {
  const ref = (r: RuleRef) => (r.args === null ? `-t ${r.table} -N ${r.chain}` : `-t ${r.table} -A ${r.chain} ${r.args.join(' ')}`);
  return {
    inSync: result.inSync,
    missing: result.missing.map(ref),
    unexpected: result.unexpected.map(ref),
    reordered: result.reordered.map((c) => `-t ${c.table} ${c.chain}`),
  };
}

/** nftablesDrift is an NftVerifyResult as text. */
export function nftablesDrift(result: NftVerifyResult): RuleDrift {
  const ref = (d: NftDrift) => {
    const at = [`${d.family} ${d.table}`];
    if (d.set !== undefined) at.push(`set ${d.set}`);
    if (d.chain !== undefined) at.push(`chain ${d.chain}`);
    if (d.rule !== undefined) at.push(`rule ${d.rule.map((e) => e.type).join(' ')}`);
    return at.join(' ');
  };
  return {
    inSync: result.inSync,
    missing: result.missing.map(ref),
    unexpected: result.unexpected.map(ref),
    reordered: result.reordered.map((c) => `${c.family} ${c.table} chain ${c.chain}`),
  };
}
