/**
 * Kernel constants of NETLINK_ROUTE as the fake needs them. Names follow the kernel headers (linux/netlink.h,
 * linux/rtnetlink.h, linux/fib_rules.h, linux/if_link.h, linux/if_addr.h, linux/if.h); values were checked against a
 * 6.18 kernel with test/fake-rtnetlink/helpers/route-bridge.py. The netlink constants every family shares come
 * from lib/testing/netlink-kernel/.
 */

export {
  NLA_F_NESTED,
  NLM_F_ACK,
  NLM_F_ACK_TLVS,
  NLM_F_APPEND,
  NLM_F_CAPPED,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_DUMP_INTR,
  NLM_F_EXCL,
  NLM_F_MATCH,
  NLM_F_MULTI,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  NLM_F_ROOT,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLMSG_MIN_TYPE,
  NLMSGERR_ATTR_MSG,
  NLMSGERR_ATTR_OFFS,
  NLMSGERR_ATTR_POLICY,
} from '../netlink-kernel/constants.js';

export const RTM = {
  NEWLINK: 16,
  DELLINK: 17,
  GETLINK: 18,
  SETLINK: 19,
  NEWADDR: 20,
  DELADDR: 21,
  GETADDR: 22,
  NEWROUTE: 24,
  DELROUTE: 25,
  GETROUTE: 26,
  NEWRULE: 32,
  DELRULE: 33,
  GETRULE: 34,
} as const;
/** Highest message type rtnetlink knows in 6.18 (RTM_MAX): anything above is EOPNOTSUPP before family lookup. */
export const RTM_MAX = 123;

export { AF_INET, AF_INET6, AF_UNSPEC } from '../netlink-kernel/constants.js';
export const AF_BRIDGE = 7;

/** Route types (RTN_*). */
export const RTN = {
  UNSPEC: 0,
  UNICAST: 1,
  LOCAL: 2,
  BROADCAST: 3,
  ANYCAST: 4,
  MULTICAST: 5,
  BLACKHOLE: 6,
  UNREACHABLE: 7,
  PROHIBIT: 8,
  THROW: 9,
  NAT: 10,
  XRESOLVE: 11,
} as const;
export const RTN_MAX = 11;

export const RT_SCOPE_UNIVERSE = 0;
export const RT_SCOPE_LINK = 253;
export const RT_SCOPE_HOST = 254;
export const RT_SCOPE_NOWHERE = 255;

export const RTPROT_KERNEL = 2;
export const RTPROT_BOOT = 3;

export const RT_TABLE_COMPAT = 252;
export const RT_TABLE_DEFAULT = 253;
export const RT_TABLE_MAIN = 254;
export const RT_TABLE_LOCAL = 255;

/** rtm_flags bits the fake looks at. */
export const RTNH_F_DEAD = 1;
export const RTNH_F_ONLINK = 4;
export const RTNH_F_OFFLOAD = 8;
export const RTNH_F_TRAP = 64;
export const RTNH_F_LINKDOWN = 16;
export const RTM_F_CLONED = 0x200;
export const RTM_F_PREFIX = 0x800;

/** Route attributes (enum rtattr_type_t). */
export const RTA = {
  DST: 1,
  SRC: 2,
  IIF: 3,
  OIF: 4,
  GATEWAY: 5,
  PRIORITY: 6,
  PREFSRC: 7,
  METRICS: 8,
  MULTIPATH: 9,
  FLOW: 11,
  CACHEINFO: 12,
  TABLE: 15,
  PREF: 20,
  ENCAP: 22,
  EXPIRES: 23,
  VIA: 18,
  NH_ID: 30,
} as const;

/** IPv6 route metric of a user route without RTA_PRIORITY (IP6_RT_PRIO_USER) and of a kernel prefix route. */
export const IP6_RT_PRIO_USER = 1024;
export const IP6_RT_PRIO_ADDRCONF = 256;

/** Rule actions (FR_ACT_*). */
export const FR_ACT = {
  UNSPEC: 0,
  TO_TBL: 1,
  GOTO: 2,
  NOP: 3,
  BLACKHOLE: 6,
  UNREACHABLE: 7,
  PROHIBIT: 8,
} as const;

/** Rule flags reported in fib_rule_hdr.flags. */
export const FIB_RULE_PERMANENT = 0x1;
export const FIB_RULE_INVERT = 0x2;
export const FIB_RULE_UNRESOLVED = 0x4;
export const FIB_RULE_IIF_DETACHED = 0x8;
export const FIB_RULE_OIF_DETACHED = 0x10;

/** Rule attributes (FRA_*). */
export const FRA = {
  DST: 1,
  SRC: 2,
  IIFNAME: 3,
  GOTO: 4,
  PRIORITY: 6,
  FWMARK: 10,
  FLOW: 11,
  TUN_ID: 12,
  SUPPRESS_IFGROUP: 13,
  SUPPRESS_PREFIXLEN: 14,
  TABLE: 15,
  FWMASK: 16,
  OIFNAME: 17,
  L3MDEV: 19,
  UID_RANGE: 20,
  PROTOCOL: 21,
  IP_PROTO: 22,
  SPORT_RANGE: 23,
  DPORT_RANGE: 24,
  DSCP: 25,
  FLOWLABEL: 26,
  FLOWLABEL_MASK: 27,
} as const;

/** Link attributes (IFLA_*) the fake reads or emits. */
export const IFLA = {
  ADDRESS: 1,
  BROADCAST: 2,
  IFNAME: 3,
  MTU: 4,
  TXQLEN: 13,
  OPERSTATE: 16,
  LINKMODE: 17,
  LINKINFO: 18,
  NET_NS_PID: 19,
  GROUP: 27,
  NET_NS_FD: 28,
  PROMISCUITY: 30,
  NUM_TX_QUEUES: 31,
  NUM_RX_QUEUES: 32,
  CARRIER: 33,
  TARGET_NETNSID: 46,
  ALT_IFNAME: 53,
  ALLMULTI: 61,
} as const;

/** IFLA_INFO_KIND: the kind of link inside IFLA_LINKINFO. */
export const IFLA_INFO_KIND = 1;
/** The kind the kernel names the links the fake adds (they behave as ifb devices). */
export const LINK_KIND = 'ifb';

/** Address attributes (IFA_*). */
export const IFA = {
  ADDRESS: 1,
  LOCAL: 2,
  LABEL: 3,
  CACHEINFO: 6,
  FLAGS: 8,
  PROTO: 11,
} as const;
export const IFA_F_SECONDARY = 0x01;
export const IFA_F_PERMANENT = 0x80;
/** ifa_proto of the addresses the kernel makes itself: ::1 on lo, and an EUI-64 link-local address. */
export const IFAPROT_KERNEL_LO = 1;
export const IFAPROT_KERNEL_LL = 3;
export const INFINITY_LIFE_TIME = 0xffffffff;

/** Interface flags (IFF_*). */
export const IFF_UP = 0x1;
export const IFF_BROADCAST = 0x2;
export const IFF_LOOPBACK = 0x8;
export const IFF_RUNNING = 0x40;
export const IFF_NOARP = 0x80;
export const IFF_LOWER_UP = 0x10000;

export const ARPHRD_ETHER = 1;
export const ARPHRD_LOOPBACK = 772;
export const IF_OPER_UNKNOWN = 0;
export const IF_OPER_DOWN = 2;

/** Fixed header sizes: ifinfomsg, and rtmsg (fib_rule_hdr has the same layout). */
export const IFINFOMSG_LEN = 16;
export const RTMSG_LEN = 12;

export { ERRNO } from '../netlink-kernel/errno.js';
