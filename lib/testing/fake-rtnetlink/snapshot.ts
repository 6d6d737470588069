/**
 * Read-only snapshots of the fake namespace for assertions: plain frozen objects in the order a dump lists them,
 * numbers as the kernel stores them (RTN_*, RT_SCOPE_*, RTPROT_*, FR_ACT_*), never the live model.
 */
import { type AddrBytes, formatAddr, fromU32 } from './codec.js';
import { IFA_F_SECONDARY } from './constants.js';
import { routes4 } from './fib4.js';
import { routes6 } from './fib6.js';
import { flagsOf } from './links.js';
import { type NetnsState, dumpOrder } from './model.js';

/** FakeLinkSnapshot is one link. */
export interface FakeLinkSnapshot {
  /** The interface index. */
  readonly index: number;
  /** The interface name. */
  readonly name: string;
  /** Whether it is the loopback device (IFF_LOOPBACK). */
  readonly loopback: boolean;
  /** Whether IFF_UP is set. */
  readonly up: boolean;
  /** IFF_* flags as RTM_NEWLINK reports them. */
  readonly flags: number;
  /** IFLA_MTU. */
  readonly mtu: number;
  /** IFLA_TXQLEN. */
  readonly txqlen: number;
  /** Link-layer address, "aa:bb:cc:dd:ee:ff". */
  readonly address: string;
}

/** FakeAddressSnapshot is one address of a link. */
export interface FakeAddressSnapshot {
  /** The address family. */
  readonly family: 4 | 6;
  /** The index of the link the address is on. */
  readonly link: number;
  /** The address. */
  readonly address: string;
  /** The prefix length. */
  readonly prefixLength: number;
  /** RT_SCOPE_* as stored (0 universe, 253 link, 254 host). */
  readonly scope: number;
  /** IFA_F_SECONDARY: another address of the link covers the same subnet. */
  readonly secondary: boolean;
}

/** FakeRouteSnapshot is one route; fields the route does not have are absent. */
export interface FakeRouteSnapshot {
  /** The address family. */
  readonly family: 4 | 6;
  /** The table id. */
  readonly table: number;
  /** Destination prefix, masked ("0.0.0.0" / "::" for a default route). */
  readonly dst: string;
  /** The destination prefix length. */
  readonly dstLength: number;
  /** RTN_* (1 unicast, 2 local, 6 blackhole, ...). */
  readonly type: number;
  /** RT_SCOPE_* as stored. */
  readonly scope: number;
  /** RTPROT_* (2 kernel, 3 boot, 4 static, ...). */
  readonly protocol: number;
  /** RTA_PRIORITY (IPv6: the metric, 1024 when none was given). */
  readonly priority: number;
  /** The TOS it matches (0: any). */
  readonly tos: number;
  /** The output interface index. */
  readonly oif?: number;
  /** The next hop. */
  readonly gateway?: string;
  /** The preferred source address. */
  readonly prefsrc?: string;
}

/** FakeRuleSnapshot is one policy rule. */
export interface FakeRuleSnapshot {
  /** The address family. */
  readonly family: 4 | 6;
  /** The rule preference. */
  readonly priority: number;
  /** The table it looks up. */
  readonly table: number;
  /** FR_ACT_* (1 to table, 2 goto, 3 nop, 6 blackhole, ...). */
  readonly action: number;
  /** fib_rule_hdr.flags as stored (FIB_RULE_INVERT, ...), without the ones a dump computes. */
  readonly flags: number;
  /** RTPROT_* of whoever installed it. */
  readonly protocol: number;
  /** The TOS it matches (0: any). */
  readonly tos: number;
  /** The fwmark it matches. */
  readonly mark?: number;
  /** The mask for mark. */
  readonly mask?: number;
  /** The source prefix it matches. */
  readonly src?: string;
  /** The source prefix length (0: any). */
  readonly srcLength: number;
  /** The destination prefix it matches. */
  readonly dst?: string;
  /** The destination prefix length (0: any). */
  readonly dstLength: number;
  /** The input interface it matches. */
  readonly iifname?: string;
  /** The output interface it matches. */
  readonly oifname?: string;
  /** The preference a goto rule jumps to. */
  readonly goto?: number;
}

/** FakeRtnetlinkSnapshot is the whole namespace. */
export interface FakeRtnetlinkSnapshot {
  /** Links by index. */
  readonly links: readonly FakeLinkSnapshot[];
  /** Addresses, IPv4 then IPv6, by link index. */
  readonly addresses: readonly FakeAddressSnapshot[];
  /** Routes of every table, in dump order. */
  readonly routes: readonly FakeRouteSnapshot[];
  /** Policy rules, IPv4 then IPv6, each in the kernel's order (by preference). */
  readonly rules: readonly FakeRuleSnapshot[];
}

/** RouteFields are the fields of a route its snapshot shows as they are. */
interface RouteFields {
  table: number;
  len: number;
  type: number;
  scope: number;
  protocol: number;
  priority: number;
  tos: number;
  oif: number;
}

/** routeSnapshot is the snapshot of one route, its addresses given as bytes (gateway and prefsrc undefined if unset). */
function routeSnapshot(family: 4 | 6, r: RouteFields, dst: AddrBytes, gw: AddrBytes | undefined, prefsrc: AddrBytes | undefined): FakeRouteSnapshot {
  return strip({
    family,
    table: r.table,
    dst: formatAddr(dst),
    dstLength: r.len,
    type: r.type,
    scope: r.scope,
    protocol: r.protocol,
    priority: r.priority,
    tos: r.tos,
    oif: r.oif || undefined,
    gateway: gw ? formatAddr(gw) : undefined,
    prefsrc: prefsrc ? formatAddr(prefsrc) : undefined,
  });
}

/** macText renders a link-layer address. */
export function macText(a: Uint8Array): string {
  return [...a].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

function strip<T extends object>(o: T): Readonly<T> {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k];
  return Object.freeze(o);
}

/** snapshot copies state into frozen plain objects. */
export function snapshot(s: NetnsState): FakeRtnetlinkSnapshot {
  const links = [...s.links.values()]
    .sort((a, b) => a.index - b.index)
    .map((l) =>
      Object.freeze({
        index: l.index,
        name: l.name,
        loopback: l.loopback,
        up: l.up,
        flags: flagsOf(l),
        mtu: l.mtu,
        txqlen: l.txqlen,
        address: macText(l.address),
      }),
    );
  const addresses: FakeAddressSnapshot[] = [];
  for (const f of [4, 6] as const) {
    for (const [, list] of [...s.addrs[f]].sort((a, b) => a[0] - b[0])) {
      for (const a of list) {
        addresses.push(
          Object.freeze({
            family: f,
            link: a.link,
            address: formatAddr(a.addr),
            prefixLength: a.prefixLen,
            scope: a.scope,
            secondary: (a.flags & IFA_F_SECONDARY) !== 0,
          }),
        );
      }
    }
  }
  const routes: FakeRouteSnapshot[] = [];
  for (const t of dumpOrder(s.tables4)) {
    for (const r of routes4(t)) {
      const at = (a: number) => (a ? fromU32(a) : undefined);
      routes.push(routeSnapshot(4, r, fromU32(r.key), at(r.gw), at(r.prefsrc)));
    }
  }
  for (const t of dumpOrder(s.tables6)) {
    for (const r of routes6(t)) {
      routes.push(routeSnapshot(6, { ...r, scope: 0, priority: r.metric, tos: 0 }, r.dst, r.gw, r.prefsrc));
    }
  }
  const rules = [...s.rules[4], ...s.rules[6]].map((r) =>
    strip({
      family: r.family,
      priority: r.priority,
      table: r.table,
      action: r.action,
      flags: r.flags,
      protocol: r.protocol,
      tos: r.tos,
      mark: r.mark || r.mask ? r.mark : undefined,
      mask: r.mark || r.mask ? r.mask : undefined,
      src: r.src && r.srcLen ? formatAddr(r.src) : undefined,
      srcLength: r.srcLen,
      dst: r.dst && r.dstLen ? formatAddr(r.dst) : undefined,
      dstLength: r.dstLen,
      iifname: r.iifname || undefined,
      oifname: r.oifname || undefined,
      goto: r.target || undefined,
    }),
  );
  return Object.freeze({
    links: Object.freeze(links),
    addresses: Object.freeze(addresses),
    routes: Object.freeze(routes),
    rules: Object.freeze(rules),
  });
}
