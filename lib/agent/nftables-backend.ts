/**
 * The nftables backend of NodeNetwork (`backend: 'nftables'`): the host's side (its nf_tables client, the probe sets
 * as NftProbeSet, the SNAT rule for the kubelet's probes in `inet istio-ambient-nat`) and each pod's in-pod rules as
 * the reference's inet tables, one transaction per pod. The kubelet's uid, which the host rule matches, is detected
 * under the host's procfs when it is not given.
 */
import { Nftables } from '../nftables/client.js';
import type { NftPreparedTransaction, NftRuleset } from '../nftables/index.js';
import type { AgentNetns, NftablesFactory } from './backends.js';
import { detectKubeletUid } from './nft-kubelet.js';
import { NftProbeSet } from './nft-probe-set.js';
import { NFT_PROBE_SET_COMMENT, nftHostRules, nftInpodRules } from './nft-rules.js';
import type { ProbeSetCommonOptions } from './probe-ownership.js';
import {
  isPlain,
  nftablesDrift,
  type HostRulesReport,
  type PodRulesReport,
  type PodRemoval,
  type PodRulesVariant,
  type ProbeSetState,
  type RuleBackend,
  type RuleOptions,
  type StepRunner,
} from './rule-backend.js';

/** NftablesBackendOptions configure an NftablesBackend: the node's rule options, the clients, the kubelet. */
export interface NftablesBackendOptions {
  /** The node's rule options, as NodeNetwork checked them. */
  rules: RuleOptions;
  /** The probe sets' options (their prefix is rules.probeSetPrefix, their ipv6 rules.ipv6). */
  probes: Omit<ProbeSetCommonOptions, 'prefix' | 'ipv6'>;
  /** Opens the nf_tables clients of the host (netns undefined) and of the pods. */
  nftables: NftablesFactory;
  /** The kubelet's uid; undefined: detected under procRoot by open(). */
  kubeletUid: number | undefined;
  /** The host's procfs, where the kubelet is looked for. */
  procRoot: string;
}

/** NftablesBackend is the RuleBackend on nf_tables (see the module comment). */
export class NftablesBackend implements RuleBackend {
  /** name is 'nftables'. */
  readonly name = 'nftables';
  /**
   * A pod's batch goes after a hop into its namespace and ends about when the routing and the proxy's ack do:
   * holding those two back a turn made a pod 13-16% slower.
   */
  readonly podRulesLead = false;
  readonly #o: NftablesBackendOptions;
  #nft: Nftables | undefined;
  #probes: NftProbeSet | undefined;
  #hostRules: NftRuleset | undefined;
  /** The in-pod rules of a pod with no variant (most pods), built once: every such pod gets the same tables. */
  #plainPodRules: NftRuleset | undefined;
  /** What applyPod sends for such a pod, prepared once: building and converting the batch cost more than the kernel. */
  #plainPodBatch: NftPreparedTransaction | undefined;

  constructor(options: NftablesBackendOptions) {
    this.#o = options;
  }

  /**
   * open detects the kubelet's uid unless it was given (step 'kubelet-uid', failing with a KubeletUidError), fixes
   * the host rules for it, connects to the host's nf_tables and builds the NftProbeSet (step 'sets').
   */
  async open(step: StepRunner): Promise<NftProbeSet> {
    const procRoot = this.#o.procRoot;
    const kubeletUid = this.#o.kubeletUid ?? (await step('kubelet-uid', "detecting the kubelet's uid", async () => detectKubeletUid(procRoot)));
    return step('sets', 'opening nftables in the host namespace', async () => {
      if (this.#probes) return this.#probes;
      const r = this.#o.rules;
      this.#hostRules = nftHostRules({ kubeletUid, ipv6: r.ipv6, probeSetPrefix: r.probeSetPrefix, probeSourceV4: r.probeSourceV4, probeSourceV6: r.probeSourceV6 });
      this.#nft ??= await this.#o.nftables({ netns: undefined });
      this.#probes = new NftProbeSet({ ...this.#o.probes, nftables: this.#nft, prefix: r.probeSetPrefix, ipv6: r.ipv6 });
      return this.#probes;
    });
  }

  /** start writes the host table (sets kept with their elements, the SNAT chain refilled) in one batch. */
  async start(): Promise<void> {
    const { nft, rules } = this.#host();
    await nft.apply(rules);
  }

  /** stop deletes the host table, the SNAT rule and the probe sets with their elements, in one batch (step 'host-rules'), unless keep. */
  async stop(step: StepRunner, keep: boolean): Promise<void> {
    const { nft, rules } = this.#host();
    if (!keep) await step('host-rules', 'removing the host rules and the probe sets', () => nft.remove(rules));
    nft.close();
    this.#nft = undefined;
    this.#probes = undefined;
  }

  /** applyPod writes the pod's three inet tables in one batch. */
  async applyPod(pod: PodRulesVariant, ns: AgentNetns): Promise<void> {
    if (!isPlain(pod)) return this.#withPod(ns, (nft) => nft.apply(this.#podRules(pod)));
    this.#plainPodBatch ??= Nftables.prepare(this.#podRules(pod));
    const batch = this.#plainPodBatch;
    await this.#withPod(ns, (nft) => nft.run(batch));
  }

  /** repairPod makes the pod's tables exactly what they should be. */
  async repairPod(pod: PodRulesVariant, ns: AgentNetns): Promise<void> {
    await this.#withPod(ns, (nft) => nft.reconcile(this.#podRules(pod)));
  }

  /**
   * removePod deletes the pod's tables and leaves the close of the pod's nf_tables socket to wait for (`released`):
   * the kernel lets it go only after freeing the deleted tables, an RCU grace period later, and until then it holds
   * the namespace's nf_tables lock, so that a pod enrolled again in the same namespace would wait for it in its own
   * batch, and a process started meanwhile would inherit the socket and wait for it in its exec. When the deletion
   * fails, the close is waited for before the error is thrown.
   */
  async removePod(pod: PodRulesVariant, ns: AgentNetns): Promise<PodRemoval> {
    const nft = await this.#o.nftables({ netns: ns });
    try {
      await nft.remove(this.#podRules(pod));
    } catch (err) {
      nft.close();
      await nft.released();
      throw err;
    }
    nft.close();
    return { released: () => nft.released() };
  }

  /** verifyPod checks the pod's tables (both families: one 'inet' check). */
  async verifyPod(pod: PodRulesVariant, ns: AgentNetns): Promise<PodRulesReport> {
    const nftRules = await this.#withPod(ns, (nft) => nft.verify(this.#podRules(pod)));
    return { rules: [{ family: 'inet', result: nftablesDrift(nftRules) }], nftRules };
  }

  /** verify tells, per probe set, whether it is there with its type and comment, and checks the host table's chain and rule. */
  async verify(): Promise<HostRulesReport> {
    const sets = await this.#verifySets();
    const { nft, rules } = this.#host();
    const nftHostRules = await nft.verify(rules);
    return { sets, hostRules: [{ family: 'inet', result: nftablesDrift(nftHostRules) }], nftHostRules };
  }

  /** repair writes the host table again, as start does. */
  repair(): Promise<void> {
    return this.start();
  }

  async #verifySets(): Promise<ProbeSetState[]> {
    const { nft, probes } = this.#host();
    let listed: Awaited<ReturnType<Nftables['sets']>> = [];
    try {
      listed = (await nft.sets(probes.table)).filter((s) => s.table === probes.table.name);
    } catch (err) {
      if ((err as { code?: string }).code !== 'ENOENT') throw err;
    }
    return probes.setNames.map((name, i) => {
      const s = listed.find((x) => x.name === name);
      const type = i === 0 ? 'ipv4_addr' : 'ipv6_addr';
      return { name, present: s !== undefined, ok: s !== undefined && s.type === type && s.comment === NFT_PROBE_SET_COMMENT };
    });
  }

  #host(): { nft: Nftables; rules: NftRuleset; probes: NftProbeSet } {
    if (!this.#nft || !this.#hostRules || !this.#probes) throw new Error('NftablesBackend used before open()');
    return { nft: this.#nft, rules: this.#hostRules, probes: this.#probes };
  }

  // Every use of a pod's rules goes through here, so all see the pod's own variant; both families share the tables.
  #podRules(pod: PodRulesVariant): NftRuleset {
    const plain = isPlain(pod);
    if (plain && this.#plainPodRules) return this.#plainPodRules;
    const r = this.#o.rules;
    const rules = nftInpodRules({
      ipv6: r.ipv6,
      dnsCapture: r.dnsCapture,
      probeSourceV4: r.probeSourceV4,
      probeSourceV6: r.probeSourceV6,
      ingressOnly: pod.ingressOnly ?? false,
      virtualInterfaces: pod.virtualInterfaces ?? [],
    });
    if (plain) this.#plainPodRules = rules;
    return rules;
  }

  /** Opens the pod's nf_tables client for fn and closes it after, also when fn fails. */
  async #withPod<T>(ns: AgentNetns, fn: (nft: Nftables) => Promise<T>): Promise<T> {
    const nft = await this.#o.nftables({ netns: ns });
    try {
      return await fn(nft);
    } finally {
      nft.close();
    }
  }
}
