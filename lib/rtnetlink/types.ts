/**
 * The public shapes of lib/rtnetlink: what listings return and what changes take. Numbers the kernel defines more
 * of than podnet names (route types, scopes, protocols, rule actions) come back as names where podnet knows them and
 * as the kernel's number otherwise, so a listing never throws on something new.
 */
import type { NetlinkPeer } from '../netlink/peer.js';
import type { NetnsLike } from '../netns.js';

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
  readonly type: number;
  readonly data: Buffer;
}

/** Link is one network interface as RTM_GETLINK reports it. */
export interface Link {
  readonly index: number;
  readonly name: string;
  /** IFF_* flags (IFF_UP is 0x1). */
  readonly flags: number;
  /** Whether IFF_UP is set (administratively up). */
  readonly up: boolean;
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
  readonly raw: readonly RawAttribute[];
}

/** Address is one interface address as RTM_GETADDR reports it. */
export interface Address {
  readonly family: IpFamily;
  readonly address: string;
  readonly prefixLength: number;
  /** Index of the link the address is on. */
  readonly link: number;
  readonly scope: RouteScope;
  /** IFA_F_* flags (0x80 permanent, ...). */
  readonly flags: number;
  /** The peer of a point-to-point address. */
  readonly peer: string | undefined;
  readonly label: string | undefined;
  readonly raw: readonly RawAttribute[];
}

/** Route is one route as RTM_GETROUTE reports it. */
export interface Route {
  readonly family: IpFamily;
  /** Destination prefix address; the family's any address ("0.0.0.0", "::") for a default route. */
  readonly dst: string;
  readonly dstLength: number;
  readonly src: string | undefined;
  readonly srcLength: number;
  readonly tos: number;
  /** Table id (254 main, 255 local, 253 default; up to 2^32-1 through RTA_TABLE). */
  readonly table: number;
  readonly type: RouteType;
  readonly scope: RouteScope;
  readonly protocol: RouteProtocol;
  /** Output interface index. */
  readonly oif: number | undefined;
  readonly gateway: string | undefined;
  readonly prefsrc: string | undefined;
  /** Metric (RTA_PRIORITY). */
  readonly priority: number | undefined;
  /** RTM_F_* flags. */
  readonly flags: number;
  readonly raw: readonly RawAttribute[];
}

/** RoutingRule is one policy routing rule as RTM_GETRULE reports it. */
export interface RoutingRule {
  readonly family: IpFamily;
  /** Preference; 0 when the kernel sent none (the local table's rule). */
  readonly priority: number;
  readonly table: number;
  readonly action: RoutingRuleAction;
  readonly mark: number | undefined;
  readonly mask: number | undefined;
  readonly src: string | undefined;
  readonly srcLength: number;
  readonly dst: string | undefined;
  readonly dstLength: number;
  readonly iifname: string | undefined;
  readonly oifname: string | undefined;
  /** `not`: FIB_RULE_INVERT. */
  readonly invert: boolean;
  /** Target priority of a goto rule. */
  readonly goto: number | undefined;
  readonly protocol: RouteProtocol;
  readonly tos: number;
  /** FIB_RULE_* flags. */
  readonly flags: number;
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
  gateway?: string;
  prefsrc?: string;
  /** Metric 0..2^32-1. */
  priority?: number;
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
  src?: string;
  srcLength?: number;
  dst?: string;
  dstLength?: number;
  iifname?: string;
  oifname?: string;
  invert?: boolean;
  protocol?: RouteProtocol;
  tos?: number;
}

/** RtnetlinkOpenOptions configure Rtnetlink.open; every field is optional. */
export interface RtnetlinkOpenOptions {
  /** The namespace to work in (a handle or a path); default: the current one. */
  netns?: NetnsLike;
  /** Talk to this peer (FakeRtnetlink) instead of the kernel. */
  netlink?: NetlinkPeer;
  /** Deadline for each kernel answer, milliseconds (default 5000). */
  timeoutMs?: number;
}
