/**
 * The iptables backend of NodeNetwork (the default): the probe sets as ipset hash:ip sets (ProbeSet), the host's
 * SNAT rule and each pod's in-pod rules as iptables rule sets, one client per family. Pods use the iptables
 * backend ('nft' or 'legacy') the host's rules were found to use, so nothing is detected per pod.
 */
import { Ipset } from '../ipset/client.js';
import type { Iptables } from '../iptables/iptables.js';
import type { RuleSet } from '../iptables/rule-set.js';
import type { NetnsLike } from '../netns.js';
import type { AgentNetns, IptablesFactory } from './backends.js';
import type { ProbeSetCommonOptions } from './probe-ownership.js';
import { ProbeSet } from './probe-set.js';
import {
  iptablesDrift,
  isPlain,
  type HostRulesReport,
  type PodRulesReport,
  type PodRulesVariant,
  type PodRemoval,
  type RuleBackend,
  type RuleOptions,
  type RulesCheck,
  type StepRunner,
} from './rule-backend.js';
import { hostProbeRules, inpodRules } from './rules.js';

/** IptablesBackendOptions configure an IptablesBackend: the node's rule options and the clients it opens. */
export interface IptablesBackendOptions {
  /** The node's rule options, as NodeNetwork checked them. */
  rules: RuleOptions;
  /** The probe sets' options (their prefix is rules.probeSetPrefix, their ipv6 rules.ipv6). */
  probes: Omit<ProbeSetCommonOptions, 'prefix' | 'ipv6'>;
  /** The host's ipset client; undefined: one is opened in hostNetns by open() and closed by stop(). */
  ipset: Ipset | undefined;
  /** The host namespace ipset is opened in. */
  hostNetns: NetnsLike | undefined;
  /** Opens the iptables clients of the host and of the pods. */
  iptables: IptablesFactory;
}

/** IptablesBackend is the RuleBackend on ipset and iptables (see the module comment). */
export class IptablesBackend implements RuleBackend {
  /** name is 'iptables'. */
  readonly name = 'iptables';
  /** A pod's rules are an iptables-restore run of several milliseconds, its other steps a fraction of one. */
  readonly podRulesLead = true;
  readonly #o: IptablesBackendOptions;
  readonly #families: (4 | 6)[];
  readonly #ownsIpset: boolean;
  #ipset: Ipset | undefined;
  #probes: ProbeSet | undefined;
  readonly #host = new Map<4 | 6, Iptables>();
  #detected: 'nft' | 'legacy' | undefined;
  /** The in-pod rules of a pod with no variant (most pods) per family, built once: every such pod gets the same. */
  readonly #plainPodRules = new Map<4 | 6, RuleSet>();

  constructor(options: IptablesBackendOptions) {
    this.#o = options;
    this.#families = options.rules.ipv6 ? [4, 6] : [4];
    this.#ipset = options.ipset;
    this.#ownsIpset = options.ipset === undefined;
  }

  /** open opens ipset in the host namespace (step 'sets') unless it was given, and builds the ProbeSet. */
  async open(step: StepRunner): Promise<ProbeSet> {
    const hostNetns = this.#o.hostNetns;
    this.#ipset ??= await step('sets', 'opening ipset in the host namespace', () => Ipset.open(hostNetns === undefined ? {} : { netns: hostNetns }));
    const r = this.#o.rules;
    this.#probes = new ProbeSet({ ...this.#o.probes, ipset: this.#ipset, prefix: r.probeSetPrefix, ipv6: r.ipv6 });
    return this.#probes;
  }

  /** start opens the host's clients, one per family, and replaces the host SNAT rules. */
  async start(): Promise<void> {
    for (const family of this.#families) {
      const ipt = await this.#o.iptables({ netns: undefined, family });
      this.#host.set(family, ipt);
      this.#detected ??= ipt.backend;
      const rules = this.#hostRules(family);
      await ipt.remove(rules);
      await ipt.apply(rules);
    }
  }

  /** stop deletes the host rules (step 'host-rules'), then flushes and destroys the sets (step 'sets'), unless keep. */
  async stop(step: StepRunner, keep: boolean): Promise<void> {
    if (!keep) {
      await step('host-rules', 'removing the host rules', async () => {
        for (const family of this.#families) await this.#host.get(family)!.remove(this.#hostRules(family));
      });
      const ipset = this.#ipset!;
      await step('sets', 'destroying the probe sets', async () => {
        for (const name of this.#probes!.setNames) {
          await ipset.flush(name);
          await ipset.destroy(name);
        }
      });
    }
    if (this.#ownsIpset) {
      this.#ipset?.close();
      this.#ipset = undefined;
    }
  }

  /** applyPod applies the pod's rule set in each family. */
  async applyPod(pod: PodRulesVariant, ns: AgentNetns): Promise<void> {
    await this.#eachFamily(ns, (ipt, family) => ipt.apply(this.#podRules(family, pod)));
  }

  /** repairPod reconciles the pod's rule set in each family. */
  async repairPod(pod: PodRulesVariant, ns: AgentNetns): Promise<void> {
    await this.#eachFamily(ns, (ipt, family) => ipt.reconcile(this.#podRules(family, pod)));
  }

  /** removePod removes the pod's rule set in each family; nothing is left to wait for. */
  async removePod(pod: PodRulesVariant, ns: AgentNetns): Promise<PodRemoval> {
    await this.#eachFamily(ns, (ipt, family) => ipt.remove(this.#podRules(family, pod)));
    return {};
  }

  /** verifyPod checks the pod's rule set in each family. */
  async verifyPod(pod: PodRulesVariant, ns: AgentNetns): Promise<PodRulesReport> {
    const rules = await this.#eachFamily(ns, async (ipt, family): Promise<RulesCheck> => ({ family, result: iptablesDrift(await ipt.verify(this.#podRules(family, pod))) }));
    return { rules };
  }

  /** verify reads each set's header (a missing set is reported, not thrown) and checks the host rules per family. */
  async verify(): Promise<HostRulesReport> {
    const ipset = this.#ipset!;
    const sets = await Promise.all(
      this.#probes!.setNames.map(async (name, i) => {
        try {
          const h = await ipset.header(name);
          return { name, present: true, ok: h.type === 'hash:ip' && h.comment && h.family === (i === 0 ? 'inet' : 'inet6') };
        } catch (err) {
          if ((err as { code?: string }).code === 'ENOENT') return { name, present: false, ok: false };
          throw err;
        }
      }),
    );
    const hostRules: RulesCheck[] = [];
    for (const family of this.#families) {
      hostRules.push({ family, result: iptablesDrift(await this.#host.get(family)!.verify(this.#hostRules(family))) });
    }
    return { sets, hostRules };
  }

  /** repair reconciles the host rules of each family. */
  async repair(): Promise<void> {
    for (const family of this.#families) await this.#host.get(family)!.reconcile(this.#hostRules(family));
  }

  #hostRules(family: 4 | 6): RuleSet {
    const r = this.#o.rules;
    return hostProbeRules({ family, probeSetPrefix: r.probeSetPrefix, probeSource: family === 4 ? r.probeSourceV4 : r.probeSourceV6 });
  }

  // Every use of a pod's rules (add, remove, reconcile, verify) goes through here, so all see the pod's own variant.
  #podRules(family: 4 | 6, pod: PodRulesVariant): RuleSet {
    const plain = isPlain(pod);
    const built = plain ? this.#plainPodRules.get(family) : undefined;
    if (built) return built;
    const r = this.#o.rules;
    const rules = inpodRules({
      family,
      dnsCapture: r.dnsCapture,
      probeSource: family === 4 ? r.probeSourceV4 : r.probeSourceV6,
      ingressOnly: pod.ingressOnly ?? false,
      virtualInterfaces: pod.virtualInterfaces ?? [],
    });
    if (plain) this.#plainPodRules.set(family, rules);
    return rules;
  }

  /** Runs fn on a client of the pod's namespace per family, the host's iptables backend each. */
  async #eachFamily<T>(ns: AgentNetns, fn: (ipt: Iptables, family: 4 | 6) => Promise<T>): Promise<T[]> {
    const out: T[] = [];
    for (const family of this.#families) {
      const ipt = await this.#o.iptables({ netns: ns, family, ...(this.#detected ? { backend: this.#detected } : {}) });
      out.push(await fn(ipt, family));
    }
    return out;
  }
}
