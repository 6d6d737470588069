/**
 * The nftables backend of NodeNetwork (`backend: 'nftables'`): the host's side (its nf_tables client, the probe
 * sets as NftProbeSet, the SNAT rule for the kubelet's probes in `inet istio-ambient-nat`) and each pod's in-pod
 * rules as the reference's inet tables, one transaction per pod. NodeNetwork keeps the flows (order of steps,
 * errors, events); this file holds what they do on nftables.
 */
import type { Nftables } from '../nftables/client.js';
import type { Logger } from '../logger.js';
import type { AgentNetns, NftablesFactory } from './backends.js';
import { detectKubeletUid } from './nft-kubelet.js';
import { NftProbeSet } from './nft-probe-set.js';
import type { NftRuleset, NftVerifyResult } from '../nftables/index.js';
import { NFT_PROBE_SET_COMMENT, nftHostRules } from './nft-rules.js';
import type { ConflictPolicy, ProbeConflict, ProbeOwnerMismatch } from './probe-set.js';

/** NftHostConfig is what the host's side needs: NodeNetwork's options as it checked them. */
export interface NftHostConfig {
  nftables: NftablesFactory;
  /** The kubelet's uid; undefined: NodeNetwork detects it under procRoot when the host starts. */
  kubeletUid: number | undefined;
  /** The host's procfs, where the kubelet is looked for. */
  procRoot: string;
  prefix: string;
  ipv6: boolean;
  probeSourceV4: string;
  probeSourceV6: string;
  onConflict: ConflictPolicy;
  logger: Logger;
  onConflictEvent: (c: ProbeConflict) => void;
  onOwnerMismatch: (m: ProbeOwnerMismatch) => void;
}

/** A probe set as NodeNetwork's verify reports it. */
export interface NftSetState {
  name: string;
  present: boolean;
  ok: boolean;
}

/** NftHost is the host's nftables side: open() it, then its probes and rules are there to use. */
export class NftHost {
  readonly #config: NftHostConfig;
  #nft: Nftables | undefined;
  #probes: NftProbeSet | undefined;
  #rules: NftRuleset | undefined;

  constructor(config: NftHostConfig) {
    this.#config = config;
  }

  /** configuredKubeletUid is the uid NodeNetwork was given, or undefined when it is to be detected. */
  get configuredKubeletUid(): number | undefined {
    return this.#config.kubeletUid;
  }

  /** detectKubeletUid reads the kubelet's uid under procRoot; throws KubeletUidError when it cannot be told. */
  detectKubeletUid(): number {
    return detectKubeletUid(this.#config.procRoot);
  }

  /**
   * open connects to the host's nf_tables, fixes the host rules for kubeletUid, then builds the probe set. Rejects as
   * the factory does.
   */
  async open(kubeletUid: number): Promise<NftProbeSet> {
    if (this.#probes) return this.#probes;
    const c = this.#config;
    this.#rules = nftHostRules({ kubeletUid, ipv6: c.ipv6, probeSetPrefix: c.prefix, probeSourceV4: c.probeSourceV4, probeSourceV6: c.probeSourceV6 });
    this.#nft ??= await c.nftables({ netns: undefined });
    this.#probes = new NftProbeSet({
      nftables: this.#nft,
      prefix: c.prefix,
      ipv6: c.ipv6,
      onConflict: c.onConflict,
      logger: c.logger,
      onConflictEvent: c.onConflictEvent,
      onOwnerMismatch: c.onOwnerMismatch,
    });
    return this.#probes;
  }

  #live(): { nft: Nftables; rules: NftRuleset; probes: NftProbeSet } {
    if (!this.#nft || !this.#rules || !this.#probes) throw new Error('NftHost used before open()');
    return { nft: this.#nft, rules: this.#rules, probes: this.#probes };
  }

  /** installRules writes the host table (sets kept with their elements, the SNAT chain refilled) in one batch. */
  async installRules(): Promise<void> {
    const { nft, rules } = this.#live();
    await nft.apply(rules);
  }

  /** verifySets tells, per probe set, whether it is there with its type and comment. */
  async verifySets(): Promise<NftSetState[]> {
    const { nft, probes } = this.#live();
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

  /** verifyRules compares the host table's chain and rule with what is meant (the sets' elements aside). */
  async verifyRules(): Promise<NftVerifyResult> {
    const { nft, rules } = this.#live();
    return nft.verify(rules);
  }

  /** removeAll deletes the host table: the SNAT rule and the probe sets with their elements, in one batch. */
  async removeAll(): Promise<void> {
    const { nft, rules } = this.#live();
    await nft.remove(rules);
  }

  /** close releases the host's client. */
  close(): void {
    this.#nft?.close();
    this.#nft = undefined;
    this.#probes = undefined;
  }
}

/** withPodNftables opens the pod's nf_tables client for fn and closes it after, also when fn fails. */
export async function withPodNftables<T>(factory: NftablesFactory, ns: AgentNetns, fn: (nft: Nftables) => Promise<T>): Promise<T> {
  const nft = await factory({ netns: ns });
  try {
    return await fn(nft);
  } finally {
    nft.close();
  }
}
