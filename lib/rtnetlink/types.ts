/**
 * The public shapes of lib/rtnetlink: what listings return and what changes take. Numbers the kernel defines more
 * of than podnet names (route types, scopes, protocols, rule actions) come back as names where podnet knows them and
 * as the kernel's number otherwise, so a listing never throws on something new.
 */
import type { NetlinkClientOpenOptions } from '../netlink/open-options.js';

/** IpFamily is an IP family: 4 or 6. */
export type IpFamily = 4 | 6;

/** RouteType is rtm_type: the ones podnet writes by name, others by name or number as listed. */
export type RouteType =
  | 'unicast'
  | 'local'
  | 'broadcast'
  | 'anycast'
  | 'multicast'
  | 'blackhole'
  | 'unreachable'
  | 'prohibit'
  | 'throw'
  | 'nat'
  | number;

/** RouteScope is rtm_scope. */
export type RouteScope = 'universe' | 'site' | 'link' | 'host' | 'nowhere' | number;

/** RouteProtocol is rtm_protocol / FRA_PROTOCOL: who installed it. */
export type RouteProtocol = 'unspec' | 'redirect' | 'kernel' | 'boot' | 'static' | number;

/** RoutingRuleAction is fib_rule_hdr.action. */
export type RoutingRuleAction = 'toTable' | 'goto' | 'nop' | 'blackhole' | 'unreachable' | 'prohibit' | number;

/** RawAttribute is an attribute podnet does not decode, kept as the kernel sent it (flags masked off). */
export interface RawAttribute {
  /** The attribute type (nla_type without the NLA_F_* flags). */
  readonly type: number;
  /** Its payload, without the attribute header. */
  readonly data: Buffer;
}

/** Link is one network interface as RTM_GETLINK reports it. */
export interface Link {
  /** The interface index (ifi_index). */
  readonly index: number;
  /** The interface name (IFLA_IFNAME), at most 15 bytes. */
  readonly name: string;
  /** IFF_* flags (IFF_UP is 0x1). */
  readonly flags: number;
  /** Whether IFF_UP is set (administratively up). */
  readonly up: boolean;
  /** IFLA_MTU, when the kernel sent it. */
  readonly mtu: number | undefined;
  /** ARPHRD_* link type (1 ether, 772 loopback). */
  readonly linkType: number;
  /** IF_OPER_* operational state (6 up, 2 down, 0 unknown, as lo reports). */
  readonly operstate: number;
  /** Link-layer address, "aa:bb:cc:dd:ee:ff". */
  readonly address: string | undefined;
  /** IFLA_INFO_KIND ("veth", "bridge", ...), when the link has one. */
  readonly kind: string | undefined;
  /** Index of the master device (bridge, bond, VRF). */
  readonly master: number | undefined;
  /** Attributes podnet does not decode. */
  readonly raw: readonly RawAttribute[];
}

/** Address is one interface address as RTM_GETADDR reports it. */
export interface Address {
  /** The address family. */
  readonly family: IpFamily;
  /** The address (IFA_LOCAL, or IFA_ADDRESS when there is no local one). */
  readonly address: string;
  /** The prefix length (ifa_prefixlen). */
  readonly prefixLength: number;
  /** Index of the link the address is on. */
  readonly link: number;
  /** ifa_scope: where the address is valid. */
  readonly scope: RouteScope;
  /** IFA_F_* flags (0x80 permanent, ...). */
  readonly flags: number;
  /** The peer of a point-to-point address. */
  readonly peer: string | undefined;
  /** IFA_LABEL (`eth0:1`), when the address has one. */
  readonly label: string | undefined;
  /** Attributes podnet does not decode. */
  readonly raw: readonly RawAttribute[];
}

/** Route is one route as RTM_GETROUTE reports it. */
export interface Route {
  /** The address family. */
  readonly family: IpFamily;
  /** Destination prefix address; the family's any address ("0.0.0.0", "::") for a default route. */
  readonly dst: string;
  /** The destination prefix length (0 for a default route). */
  readonly dstLength: number;
  /** The source prefix address (RTA_SRC, policy routes only). */
  readonly src: string | undefined;
  /** The source prefix length. */
  readonly srcLength: number;
  /** The TOS the route matches (0: any). */
  readonly tos: number;
  /** Table id (254 main, 255 local, 253 default; up to 2^32-1 through RTA_TABLE). */
  readonly table: number;
  /** rtm_type: unicast, local, blackhole, ... */
  readonly type: RouteType;
  /** rtm_scope: how far the destination is. */
  readonly scope: RouteScope;
  /** rtm_protocol: who installed the route. */
  readonly protocol: RouteProtocol;
  /** Output interface index. */
  readonly oif: number | undefined;
  /** The next hop (RTA_GATEWAY). */
  readonly gateway: string | undefined;
  /** The preferred source address (RTA_PREFSRC). */
  readonly prefsrc: string | undefined;
  /** Metric (RTA_PRIORITY). */
  readonly priority: number | undefined;
  /** RTM_F_* flags. */
  readonly flags: number;
  /** Attributes podnet does not decode. */
  readonly raw: readonly RawAttribute[];
}

/** RoutingRule is one policy routing rule as RTM_GETRULE reports it. */
export interface RoutingRule {
  /** The address family. */
  readonly family: IpFamily;
  /** Preference; 0 when the kernel sent none (the local table's rule). */
  readonly priority: number;
  /** The table it looks up (FRA_TABLE or the header's table). */
  readonly table: number;
  /** What a match does: look up table, goto another rule, nop, or refuse the packet. */
  readonly action: RoutingRuleAction;
  /** The fwmark it matches (FRA_FWMARK). */
  readonly mark: number | undefined;
  /** The mask for mark (FRA_FWMASK). */
  readonly mask: number | undefined;
  /** The source prefix it matches. */
  readonly src: string | undefined;
  /** The source prefix length (0: any). */
  readonly srcLength: number;
  /** The destination prefix it matches. */
  readonly dst: string | undefined;
  /** The destination prefix length (0: any). */
  readonly dstLength: number;
  /** The input interface it matches (FRA_IIFNAME). */
  readonly iifname: string | undefined;
  /** The output interface it matches (FRA_OIFNAME). */
  readonly oifname: string | undefined;
  /** `not`: FIB_RULE_INVERT. */
  readonly invert: boolean;
  /** Target priority of a goto rule. */
  readonly goto: number | undefined;
  /** FRA_PROTOCOL: who installed the rule. */
  readonly protocol: RouteProtocol;
  /** The TOS it matches (0: any). */
  readonly tos: number;
  /** FIB_RULE_* flags. */
  readonly flags: number;
  /** Attributes podnet does not decode. */
  readonly raw: readonly RawAttribute[];
}

/**
 * RouteSpec describes a route to add or delete. A Route from `routes()` is a valid RouteSpec (its read-only fields
 * are ignored), so what was listed can be deleted.
 */
export interface RouteSpec {
  /** 4 or 6; default: the family of dst, or 4. */
  family?: IpFamily;
  /** Destination address; default: the family's any address (a default route). */
  dst?: string;
  /** Prefix length; default: 0 when dst is absent, else the full length (32 / 128). Host bits must be zero. */
  dstLength?: number;
  /** Table id 1..2^32-1 (default 254, main). */
  table?: number;
  /** 'unicast' (default), 'local' or 'blackhole'. */
  type?: 'unicast' | 'local' | 'blackhole';
  /** Default: 'host' for local, 'link' for unicast without gateway, else 'universe'. */
  scope?: 'universe' | 'link' | 'host';
  /** Default 'boot', as `ip route add` does. */
  protocol?: RouteProtocol;
  /** Output link: an index, or a name looked up first. */
  oif?: number | string;
  /** Next hop, of the route's family. */
  gateway?: string;
  /** Preferred source address, of the route's family. */
  prefsrc?: string;
  /** Metric 0..2^32-1. */
  priority?: number;
  /** TOS to match, 0..255 (default 0: any). */
  tos?: number;
}

/** RoutingRuleSpec describes a policy rule to add or delete. A RoutingRule from `rules()` is a valid RoutingRuleSpec. */
export interface RoutingRuleSpec {
  /** 4 (default) or 6. */
  family?: IpFamily;
  /** Preference 0..2^32-1; without it the kernel picks one below the last rule on add, and any matches on delete. */
  priority?: number;
  /** Table to look up, 1..2^32-1; needed for action 'toTable'. */
  table?: number;
  /** Default 'toTable'. */
  action?: 'toTable' | 'blackhole' | 'unreachable' | 'prohibit' | 'nop';
  /** fwmark to match, 0..2^32-1. */
  mark?: number;
  /** Mask for mark (default: the kernel's 0xffffffff when mark is given). */
  mask?: number;
  /** Source prefix address to match. */
  src?: string;
  /** Source prefix length (default: the full length when src is given). */
  srcLength?: number;
  /** Destination prefix address to match. */
  dst?: string;
  /** Destination prefix length (default: the full length when dst is given). */
  dstLength?: number;
  /** Input interface name to match (at most 15 bytes). */
  iifname?: string;
  /** Output interface name to match (at most 15 bytes). */
  oifname?: string;
  /** `not`: match packets the rule does not match (FIB_RULE_INVERT). */
  invert?: boolean;
  /** Who installs the rule (FRA_PROTOCOL; default: unset). */
  protocol?: RouteProtocol;
  /** TOS to match, 0..255 (default 0: any). */
  tos?: number;
}

/**
 * RtnetlinkOpenOptions configure Rtnetlink.open: a namespace (default: the current one) or a peer such as
 * FakeRtnetlink, the deadline, and whether the socket waits for the first operation (`defer`); every field is
 * optional.
 */
export type RtnetlinkOpenOptions = NetlinkClientOpenOptions;

/**
 * RtnetlinkChange is one change of Rtnetlink.batch: what addRoute, delRoute, addRule or delRule takes, `op` naming
 * which, with the same options.
 */
export type RtnetlinkChange =
  | { op: 'addRoute'; route: RouteSpec; replace?: boolean }
  | { op: 'delRoute'; route: RouteSpec | Route; ignoreMissing?: boolean }
  | { op: 'addRule'; rule: RoutingRuleSpec }
  | { op: 'delRule'; rule: RoutingRuleSpec | RoutingRule; ignoreMissing?: boolean };
