/** Names of nf_tables families, hooks, policies and set key types, both ways. */
import type { NftFamily, NftHook, NftListedFamily, NftPolicy, NftSetKeyType } from './types.js';

export const FAMILIES: Readonly<Record<NftFamily, number>> = { inet: 1, ip: 2, arp: 3, netdev: 5, bridge: 7, ip6: 10 };
export const HOOKS: Readonly<Record<NftHook, number>> = { prerouting: 0, input: 1, forward: 2, output: 3, postrouting: 4, ingress: 5 };
export const POLICIES: Readonly<Record<NftPolicy, number>> = { drop: 0, accept: 1 };
/** NFT_SET_* flag bits. */
/**
 * The set flags podnet makes sets with. Not NFT_SET_INTERVAL: an interval set holds ranges as start and end
 * elements, and an address added alone, as addElement adds it, would start a range that never ends.
 */
export const SET_FLAGS = { constant: 0x2, timeout: 0x10 } as const;
export const KEY_LENGTHS: Readonly<Record<NftSetKeyType, number>> = { ipv4_addr: 4, ipv6_addr: 16 };

function reverse<K extends string>(table: Readonly<Record<K, number>>): Map<number, K> {
  return new Map(Object.entries(table).map(([k, v]) => [v as number, k as K]));
}
const familyNames = reverse(FAMILIES);
const hookNames = reverse(HOOKS);
const policyNames = reverse(POLICIES);

export function familyName(n: number): NftListedFamily {
  return familyNames.get(n) ?? n;
}

/** NF_NETDEV_INGRESS: the netdev family numbers its own hooks, ingress first. */
const NETDEV_INGRESS = 0;

/** hookName names a listed hook number: numbers mean other hooks in the netdev family (0 is ingress there). */
export function hookName(family: number, n: number): NftHook | number {
  if (family === FAMILIES.netdev) return n === NETDEV_INGRESS ? 'ingress' : n;
  return hookNames.get(n) ?? n;
}

/**
 * hookNumber is the number of a named hook in a family, hookName's inverse: ingress is 0 in the netdev family, which
 * has no other hook podnet names (undefined for those).
 */
export function hookNumber(family: number, hook: NftHook): number | undefined {
  if (family === FAMILIES.netdev) return hook === 'ingress' ? NETDEV_INGRESS : undefined;
  return HOOKS[hook];
}

export function policyName(n: number): NftPolicy | number {
  return policyNames.get(n) ?? n;
}
