/**
 * ipset kernel error codes and their names. Codes from 4352 up mean different
 * things per set type family, so decoding needs the set's type.
 */

const GENERIC: Record<number, [string, string]> = {
  4096: ['IPSET_ERR_PRIVATE', 'private ipset error'],
  4097: ['IPSET_ERR_PROTOCOL', 'protocol error (an attribute the set type does not support?)'],
  4098: ['IPSET_ERR_FIND_TYPE', 'set type not supported by the kernel'],
  4099: ['IPSET_ERR_MAX_SETS', 'maximum number of sets reached'],
  4100: ['IPSET_ERR_BUSY', 'set is in use by the kernel (referenced)'],
  4101: ['IPSET_ERR_EXIST_SETNAME2', 'the second set already exists, or is missing'],
  4102: ['IPSET_ERR_TYPE_MISMATCH', 'sets of different type or family'],
  4103: ['IPSET_ERR_EXIST', 'element already exists, or is missing'],
  4104: ['IPSET_ERR_INVALID_CIDR', 'invalid CIDR'],
  4105: ['IPSET_ERR_INVALID_NETMASK', 'invalid netmask'],
  4106: ['IPSET_ERR_INVALID_FAMILY', 'invalid family'],
  4107: ['IPSET_ERR_TIMEOUT', 'timeout given for a set without timeout support'],
  4108: ['IPSET_ERR_REFERENCED', 'set is referenced'],
  4109: ['IPSET_ERR_IPADDR_IPV4', 'invalid IPv4 address'],
  4110: ['IPSET_ERR_IPADDR_IPV6', 'invalid IPv6 address'],
  4111: ['IPSET_ERR_COUNTER', 'counters given for a set without counter support'],
  4112: ['IPSET_ERR_COMMENT', 'comment given for a set without comment support'],
  4113: ['IPSET_ERR_INVALID_MARKMASK', 'invalid markmask'],
  4114: ['IPSET_ERR_SKBINFO', 'skbinfo given for a set without skbinfo support'],
  4115: ['IPSET_ERR_BITMASK_NETMASK_EXCL', 'bitmask and netmask are mutually exclusive'],
};

const BY_TYPE: Record<string, Record<number, [string, string]>> = {
  hash: {
    4352: ['IPSET_ERR_HASH_FULL', 'hash is full (maxelem reached)'],
    4353: ['IPSET_ERR_HASH_ELEM', 'element invalid for this hash type'],
    4354: ['IPSET_ERR_INVALID_PROTO', 'invalid protocol'],
    4355: ['IPSET_ERR_MISSING_PROTO', 'protocol missing'],
    4356: ['IPSET_ERR_HASH_RANGE_UNSUPPORTED', 'range not supported'],
    4357: ['IPSET_ERR_HASH_RANGE', 'invalid range'],
  },
  bitmap: {
    4352: ['IPSET_ERR_BITMAP_RANGE', 'element out of the range of the set'],
    4353: ['IPSET_ERR_BITMAP_RANGE_SIZE', 'range too large'],
  },
  list: {
    4352: ['IPSET_ERR_NAME', 'set to add/delete/test does not exist'],
    4353: ['IPSET_ERR_LOOP', 'set would loop'],
    4354: ['IPSET_ERR_BEFORE', 'before/after set missing'],
    4355: ['IPSET_ERR_NAMEREF', 'reference set missing'],
    4356: ['IPSET_ERR_LIST_FULL', 'list is full'],
    4357: ['IPSET_ERR_REF_EXIST', 'reference set does not exist'],
  },
};

/** ipsetErrorName returns [code, description] for a positive kernel error, decoding type-specific codes by set type. */
export function ipsetErrorName(error: number, setType?: string): [string, string] {
  const generic = GENERIC[error];
  if (generic) return generic;
  if (error >= 4352) {
    const family = setType?.split(':')[0];
    const specific = family ? BY_TYPE[family]?.[error] : undefined;
    if (specific) return specific;
    return [`IPSET_ERR_TYPE_SPECIFIC_${error}`, `set type specific error ${error}`];
  }
  return ['', ''];
}
