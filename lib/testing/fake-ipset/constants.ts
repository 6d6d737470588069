/**
 * Kernel constants of the ipset nfnetlink protocol as the fake needs them. Names follow the kernel headers
 * (include/uapi/linux/netfilter/ipset/ip_set.h, include/uapi/linux/netlink.h); values were checked against a 6.18
 * kernel (see /work/shared/reference/ipset-netlink.md and test/fixtures/ipset/). The netlink constants every family
 * shares come from lib/testing/netlink-kernel/.
 */

export const NFNL_SUBSYS_IPSET = 6;
export const IPSET_PROTOCOL = 7;
export const IPSET_PROTOCOL_MIN = 6;
export const IPSET_MAXNAMELEN = 32;
export const IPSET_MAX_COMMENT_SIZE = 255;

export {
  AF_INET,
  AF_INET6,
  NFGENMSG_LEN,
  NLA_F_NESTED,
  NLA_F_NET_BYTEORDER,
  NLA_TYPE_MASK,
  NLM_F_ACK,
  NLM_F_CAPPED,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_MULTI,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLMSG_MIN_TYPE,
} from '../netlink-kernel/constants.js';

export const IPSET_CMD = {
  NONE: 0,
  PROTOCOL: 1,
  CREATE: 2,
  DESTROY: 3,
  FLUSH: 4,
  RENAME: 5,
  SWAP: 6,
  LIST: 7,
  SAVE: 8,
  ADD: 9,
  DEL: 10,
  TEST: 11,
  HEADER: 12,
  TYPE: 13,
  GET_BYNAME: 14,
  GET_BYINDEX: 15,
} as const;
/** Commands past this are rejected by nfnetlink itself with -EINVAL. */
export const IPSET_MSG_MAX = 16;

/** Command-level attributes. */
export const ATTR = {
  PROTOCOL: 1,
  SETNAME: 2,
  TYPENAME: 3,
  SETNAME2: 3,
  REVISION: 4,
  FAMILY: 5,
  FLAGS: 6,
  DATA: 7,
  ADT: 8,
  LINENO: 9,
  PROTOCOL_MIN: 10,
  REVISION_MIN: 10,
  INDEX: 11,
} as const;

/** Attributes inside DATA (create, header and entries share 1..16; 17.. depend on context). */
export const DATA_ATTR = {
  IP: 1,
  IP_TO: 2,
  CIDR: 3,
  PORT: 4,
  PORT_TO: 5,
  TIMEOUT: 6,
  PROTO: 7,
  CADT_FLAGS: 8,
  LINENO: 9,
  MARK: 10,
  MARKMASK: 11,
  BITMASK: 12,
  // create / header
  INITVAL: 17,
  HASHSIZE: 18,
  MAXELEM: 19,
  NETMASK: 20,
  BUCKETSIZE: 21,
  RESIZE: 22,
  SIZE: 23,
  ELEMENTS: 24,
  REFERENCES: 25,
  MEMSIZE: 26,
  // entries
  ETHER: 17,
  NAME: 18,
  NAMEREF: 19,
  IP2: 20,
  CIDR2: 21,
  IP2_TO: 22,
  IFACE: 23,
  BYTES: 24,
  PACKETS: 25,
  COMMENT: 26,
  SKBMARK: 27,
  SKBPRIO: 28,
  SKBQUEUE: 29,
  PAD: 30,
} as const;

export const IPADDR_IPV4 = 1;
export const IPADDR_IPV6 = 2;

/** CADT_FLAGS bits. */
export const IPSET_FLAG_NOMATCH = 1 << 2;
export const IPSET_FLAG_WITH_COUNTERS = 1 << 3;
export const IPSET_FLAG_WITH_COMMENT = 1 << 4;
export const IPSET_FLAG_WITH_FORCEADD = 1 << 5;
export const IPSET_FLAG_WITH_SKBINFO = 1 << 6;

/** FLAGS of a dump request. */
export const IPSET_FLAG_LIST_SETNAME = 1 << 1;
export const IPSET_FLAG_LIST_HEADER = 1 << 2;

export { ERRNO } from '../netlink-kernel/errno.js';

export const IPSET_ERR = {
  PRIVATE: 4096,
  PROTOCOL: 4097,
  FIND_TYPE: 4098,
  MAX_SETS: 4099,
  BUSY: 4100,
  EXIST_SETNAME2: 4101,
  TYPE_MISMATCH: 4102,
  EXIST: 4103,
  INVALID_CIDR: 4104,
  INVALID_NETMASK: 4105,
  INVALID_FAMILY: 4106,
  TIMEOUT: 4107,
  REFERENCED: 4108,
  IPADDR_IPV4: 4109,
  IPADDR_IPV6: 4110,
  COUNTER: 4111,
  COMMENT: 4112,
  INVALID_MARKMASK: 4113,
  SKBINFO: 4114,
  BITMASK_NETMASK_EXCL: 4115,
  // hash types
  HASH_FULL: 4352,
  HASH_ELEM: 4353,
  INVALID_PROTO: 4354,
  MISSING_PROTO: 4355,
  HASH_RANGE_UNSUPPORTED: 4356,
  HASH_RANGE: 4357,
} as const;

export const IPSET_DEFAULT_HASHSIZE = 1024;
export const IPSET_MIMINAL_HASHSIZE = 64;
export const IPSET_DEFAULT_MAXELEM = 65536;
export const IPSET_DEFAULT_BUCKETSIZE = 12;
/** Timeouts above this many seconds are clamped, as ip_set_timeout_uget does. */
export const IPSET_MAX_TIMEOUT = 2147483;
/** Highest set index + 1 the fake hands out before IPSET_ERR_MAX_SETS. */
export const IPSET_MAX_SETS = 65535;

export const IPPROTO = { ICMP: 1, TCP: 6, UDP: 17, ICMPV6: 58, SCTP: 132, UDPLITE: 136 } as const;
