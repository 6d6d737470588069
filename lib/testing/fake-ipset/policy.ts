/**
 * Strict validation of a DATA nest against a set type's policy, the way nla_parse_nested() does for ipset: an
 * attribute the type does not list, a wrong length, a missing or extra NLA_F_NESTED, or a truncated tail all fail,
 * and ipset turns any of them into IPSET_ERR_PROTOCOL.
 */
import { type Attr, type AttrList, nulIndex } from '../netlink-kernel/codec.js';
import { DATA_ATTR as D, IPSET_MAX_COMMENT_SIZE } from './constants.js';

/** Kind is the netlink policy type of an attribute. */
export type Kind = 'u8' | 'u16' | 'u32' | 'u64' | 'nested' | { nulString: number };

/** Policy maps attribute types to their kind; a type that is absent is rejected. */
export type Policy = ReadonlyMap<number, Kind>;

const SIZES: Record<string, number> = { u8: 1, u16: 2, u32: 4, u64: 8 };

function valid(attr: Attr, kind: Kind): boolean {
  if (kind === 'nested') return attr.nested;
  if (attr.nested) return false;
  if (typeof kind === 'object') {
    const nul = nulIndex(attr);
    return nul >= 0 && nul <= kind.nulString;
  }
  return attr.len === SIZES[kind];
}

/** parseStrict parses nest with policy; undefined means the kernel's parser would have failed. */
export function parseStrict(nest: Attr, policy: Policy): AttrList | undefined {
  if (!nest.nested) return undefined;
  const list = nest.children();
  if (list.trailing > 0) return undefined;
  for (const attr of list.all) {
    const kind = policy.get(attr.type);
    if (kind === undefined || !valid(attr, kind)) return undefined;
  }
  return list;
}

/** The entry extensions every hash type accepts. */
const EXTENSIONS: [number, Kind][] = [
  [D.TIMEOUT, 'u32'],
  [D.LINENO, 'u32'],
  [D.BYTES, 'u64'],
  [D.PACKETS, 'u64'],
  [D.COMMENT, { nulString: IPSET_MAX_COMMENT_SIZE }],
  [D.SKBMARK, 'u64'],
  [D.SKBPRIO, 'u32'],
  [D.SKBQUEUE, 'u16'],
];

/** adtPolicy is the policy of a hash type's entries: the address every type takes, the type's own fields, then the extensions. */
function adtPolicy(own: readonly [number, Kind][]): Policy {
  return new Map<number, Kind>([[D.IP, 'nested'], [D.IP_TO, 'nested'], [D.CIDR, 'u8'], ...own, ...EXTENSIONS]);
}

/** ADT_POLICY_HASH_IP: what an entry of hash:ip may carry. */
export const ADT_POLICY_HASH_IP: Policy = adtPolicy([]);

/** ADT_POLICY_HASH_NET: hash:net entries add CADT_FLAGS (nomatch). */
export const ADT_POLICY_HASH_NET: Policy = adtPolicy([[D.CADT_FLAGS, 'u32']]);

/** ADT_POLICY_HASH_IPPORT: hash:ip,port entries add ports and the protocol. */
export const ADT_POLICY_HASH_IPPORT: Policy = adtPolicy([
  [D.PORT, 'u16'],
  [D.PORT_TO, 'u16'],
  [D.PROTO, 'u8'],
]);

/** What hash types accept at create time (hash:ip also takes NETMASK/BITMASK, which the fake rejects as unmodelled). */
export const CREATE_POLICY_HASH: Policy = new Map<number, Kind>([
  [D.HASHSIZE, 'u32'],
  [D.MAXELEM, 'u32'],
  [D.RESIZE, 'u8'],
  [D.TIMEOUT, 'u32'],
  [D.CADT_FLAGS, 'u32'],
  [D.BUCKETSIZE, 'u8'],
  [D.INITVAL, 'u32'],
]);

