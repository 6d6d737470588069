/**
 * The state of one fake network namespace as the kernel keeps it: links, addresses in each device's list order,
 * IPv4 and IPv6 FIB tables in the order a dump walks them, and the policy rules of both families. The handlers in
 * fib4.ts, fib6.ts, rules.ts and links.ts change it; nothing here validates requests.
 */
import { type AddrBytes, bitAt, firstDiff } from './codec.js';
import { RT_TABLE_LOCAL, RT_TABLE_MAIN } from './constants.js';

/** Link is one network device. Added links behave like ifb devices (ethernet, NOARP, carrier always on). */
export interface Link {
  index: number;
  name: string;
  loopback: boolean;
  up: boolean;
  mtu: number;
  txqlen: number;
  address: Uint8Array;
  broadcast: Uint8Array;
}

/** Addr is one IPv4 or IPv6 address of a link. */
export interface Addr {
  family: 4 | 6;
  link: number;
  addr: AddrBytes;
  prefixLen: number;
  scope: number;
  /** IFA_F_* bits (PERMANENT, SECONDARY). */
  flags: number;
  /** ifa_proto (0 for user addresses). */
  proto: number;
  /** cstamp/tstamp of IFA_CACHEINFO, in hundredths of a second. */
  created: number;
}

/** Route4 is one fib_alias of an IPv4 table with its fib_info (one nexthop). */
export interface Route4 {
  table: number;
  /** Destination as a host-order key and its prefix length. */
  key: number;
  len: number;
  tos: number;
  priority: number;
  type: number;
  scope: number;
  protocol: number;
  /** 0 when unset, as in fib_info. */
  prefsrc: number;
  oif: number;
  gw: number;
  /** rtm_flags of the request (part of the fib_info's identity) and the nexthop's reported flags. */
  fibFlags: number;
  nhFlags: number;
}

/** Route6 is one fib6_info of an IPv6 table. */
export interface Route6 {
  table: number;
  dst: AddrBytes;
  len: number;
  metric: number;
  type: number;
  protocol: number;
  /** The nexthop device; reject routes (and routes the kernel turned into them) sit on lo. */
  oif: number;
  gw: AddrBytes | undefined;
  prefsrc: AddrBytes | undefined;
  /** RTF_REJECT: a blackhole/unreachable/prohibit/throw route, or a unicast route via lo. */
  reject: boolean;
  nhFlags: number;
}

/** Rule is one fib rule; fields the kernel keeps but the fake does not model are refused when a request sets them. */
export interface Rule {
  family: 4 | 6;
  priority: number;
  table: number;
  action: number;
  flags: number;
  tos: number;
  src: AddrBytes | undefined;
  srcLen: number;
  dst: AddrBytes | undefined;
  dstLen: number;
  iifname: string;
  oifname: string;
  mark: number;
  mask: number;
  target: number;
  protocol: number;
  ipProto: number;
  /** -1 when unset, as the kernel stores them (reported as 0xffffffff). */
  suppressPrefixlen: number;
  suppressIfgroup: number;
}

/** Table4 holds one IPv4 table's aliases, grouped by key as the trie's leaves hold them. */
export interface Table4 {
  id: number;
  leaves: Map<number, Route4[]>;
}

/** Table6 holds one IPv6 table's routes, grouped by node (prefix) in metric order. */
export interface Table6 {
  id: number;
  nodes: Map<string, Route6[]>;
}

/** nodeKey names an IPv6 prefix: its masked address in hex and its length. */
export function nodeKey(dst: AddrBytes, len: number): string {
  return `${Buffer.from(dst).toString('hex')}/${len}`;
}

/**
 * compareNodes orders IPv6 prefixes as the fib6 walker visits them: post-order over the radix tree, so a more
 * specific prefix comes before the prefix that contains it, and siblings go by their first differing bit.
 */
export function compareNodes(a: AddrBytes, alen: number, b: AddrBytes, blen: number): number {
  const common = Math.min(alen, blen, firstDiff(a, b));
  if (common >= Math.min(alen, blen)) return blen - alen;
  return bitAt(a, common) - bitAt(b, common);
}

/** NetnsState is everything one fake namespace holds. */
export class NetnsState {
  readonly links = new Map<number, Link>();
  /** Addresses per family, per link index, in the order the device's list holds them. */
  readonly addrs = { 4: new Map<number, Addr[]>(), 6: new Map<number, Addr[]>() };
  /** Tables in creation order (a dump's order within one hash bucket depends on it). */
  readonly tables4 = new Map<number, Table4>();
  readonly tables6 = new Map<number, Table6>();
  readonly rules: { 4: Rule[]; 6: Rule[] } = { 4: [], 6: [] };
  /** Set by the first IPv4 rule change: lookups then walk the rules instead of the merged local/main trie. */
  customRules4 = false;
  /** ipv6 false is disable_ipv6=1 on every link. */
  constructor(readonly ipv6: boolean) {}

  linkByName(name: string): Link | undefined {
    for (const l of this.links.values()) if (l.name === name) return l;
    return undefined;
  }

  addrsOf(family: 4 | 6, link: number): Addr[] {
    const map = this.addrs[family];
    let list = map.get(link);
    if (!list) {
      list = [];
      map.set(link, list);
    }
    return list;
  }

  /** table4 returns table id, creating it like fib_new_table (id 0 is main). */
  table4(id: number): Table4 {
    const tid = id === 0 ? RT_TABLE_MAIN : id;
    let t = this.tables4.get(tid);
    if (!t) {
      // fib_new_table(local) creates main first while the two are merged, so main always exists alongside local.
      if (tid === RT_TABLE_LOCAL && !this.tables4.has(RT_TABLE_MAIN)) {
        this.tables4.set(RT_TABLE_MAIN, { id: RT_TABLE_MAIN, leaves: new Map() });
      }
      t = { id: tid, leaves: new Map() };
      this.tables4.set(tid, t);
    }
    return t;
  }

  /** table6 returns table id, creating it like fib6_new_table (id 0 is main). */
  table6(id: number): Table6 {
    const tid = id === 0 ? RT_TABLE_MAIN : id;
    let t = this.tables6.get(tid);
    if (!t) {
      t = { id: tid, nodes: new Map() };
      this.tables6.set(tid, t);
    }
    return t;
  }

  /** findTable4 is fib_get_table: undefined when the table was never created. */
  findTable4(id: number): Table4 | undefined {
    return this.tables4.get(id === 0 ? RT_TABLE_MAIN : id);
  }

  findTable6(id: number): Table6 | undefined {
    return this.tables6.get(id === 0 ? RT_TABLE_MAIN : id);
  }
}

/**
 * dumpOrder lists tables as a dump walks them: by hash bucket (id & 255), and inside a bucket newest first, since
 * the kernel adds a table at the head of its bucket's list.
 */
export function dumpOrder<T extends { id: number }>(tables: Map<number, T>): T[] {
  const all = [...tables.values()];
  const created = new Map(all.map((t, i) => [t.id, i]));
  return all.sort((a, b) => (a.id & 255) - (b.id & 255) || (created.get(b.id) ?? 0) - (created.get(a.id) ?? 0));
}
