/**
 * NodeNetwork's options, checked: every value a bad caller could pass is refused here, before the constructor builds
 * anything, with InvalidArgumentError naming it (`options.<name>`).
 */
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { checkProcRoot } from './nft-kubelet.js';
import type { NodeNetworkOptions, WorkloadProxy } from './node-network-types.js';
import { defaultPodsInFlight } from './pod-admission.js';
import type { ConflictPolicy } from './probe-ownership.js';
import type { RuleOptions } from './rule-backend.js';
import { INPOD, checkProbeSource } from './rules.js';

/** CheckedNodeOptions are NodeNetworkOptions checked, with their defaults filled in. */
export interface CheckedNodeOptions {
  /** The options the rule sets depend on. */
  rules: RuleOptions;
  /** What to do with an IP another pod owns. */
  onConflict: ConflictPolicy;
  /** The rule backend. */
  backend: 'iptables' | 'nftables';
  /** The host's procfs, an absolute path. */
  hostProcRoot: string;
  /** How many pods' calls run at once. */
  maxPodsInFlight: number;
  /** The node proxy, checked to have ZtunnelServer's workload calls. */
  proxy: WorkloadProxy | undefined;
  /** Whether any backend was injected (fakes are not the kernel: no preflight by default). */
  usesFakes: boolean;
}

/** checkNodeOptions checks options (see the module comment) and fills in the defaults; throws InvalidArgumentError. */
export function checkNodeOptions(options: unknown): { o: NodeNetworkOptions; checked: CheckedNodeOptions } {
  const o = checkOptions<NodeNetworkOptions>('options', options);
  const onConflict = o.onConflict ?? 'takeover';
  if (onConflict !== 'takeover' && onConflict !== 'error') throw invalidValue('options.onConflict', "'takeover' or 'error'", onConflict);
  const rules: RuleOptions = {
    probeSetPrefix: checkString('options.probeSetPrefix', o.probeSetPrefix ?? 'istio-inpod-probes', 28),
    ipv6: o.ipv6 ?? false,
    dnsCapture: o.dnsCapture ?? true,
    probeSourceV4: checkProbeSource('options.probeSourceV4', o.probeSourceV4 ?? INPOD.probeSourceV4, 4),
    probeSourceV6: checkProbeSource('options.probeSourceV6', o.probeSourceV6 ?? INPOD.probeSourceV6, 6),
  };
  const backend = o.backend ?? 'iptables';
  if (backend !== 'iptables' && backend !== 'nftables') throw invalidValue('options.backend', "'iptables' or 'nftables'", backend);
  if (o.kubeletUid !== undefined) checkInteger('options.kubeletUid', o.kubeletUid, 0, 0xfffffffe);
  const hostProcRoot = checkProcRoot('options.hostProcRoot', o.hostProcRoot ?? '/proc');
  const maxPodsInFlight =
    o.maxPodsInFlight === undefined ? defaultPodsInFlight(backend) : checkInteger('options.maxPodsInFlight', o.maxPodsInFlight, 1, 1024);
  if (o.proxy !== undefined) {
    const p = o.proxy as unknown as Record<string, unknown>;
    for (const m of ['addWorkload', 'delWorkload', 'replaceWorkloads']) {
      if (typeof p?.[m] !== 'function') throw invalidType('options.proxy', 'a ZtunnelServer (addWorkload, delWorkload, replaceWorkloads)', o.proxy);
    }
  }
  const usesFakes = (o.ipset ?? o.iptables ?? o.nftables ?? o.netns ?? o.rtnetlink) !== undefined;
  return { o, checked: { rules, onConflict, backend, hostProcRoot, maxPodsInFlight, proxy: o.proxy, usesFakes } };
}
