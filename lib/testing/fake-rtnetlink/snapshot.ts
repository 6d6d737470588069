/**
 * Read-only snapshots of the fake namespace for assertions: plain frozen objects in the order a dump lists them,
 * numbers as the kernel stores them (RTN_*, RT_SCOPE_*, RTPROT_*, FR_ACT_*), never the live model.
 */
import { formatAddr, fromU32 } from './codec.js';
import { IFA_F_SECONDARY } from './constants.js';
import { routes4 } from './fib4.js';
import { routes6 } from './fib6.js';
import { flagsOf } from './links.js';
import { type NetnsState, dumpOrder } from './model.js';

/** FakeLinkSnapshot is one link. */
export interface FakeLinkSnapshot {
  readonly index: number;
  readonly name: string;
  readonly loopback: boolean;
  readonly up: boolean;
  /** IFF_* flags as RTM_NEWLINK reports them. */
  readonly flags: number;
  readonly mtu: number;
  readonly txqlen: number;
  /** Link-layer address, "aa:bb:cc:dd:ee:ff". */
  readonly address: string;
}

/** FakeAddressSnapshot is one address of a link. */
export interface FakeAddressSnapshot {
  readonly family: 4 | 6;
  readonly link: number;
  readonly address: string;
  readonly prefixLength: number;
  readonly scope: number;
  /** IFA_F_SECONDARY: another address of the link covers the same subnet. */
  readonly secondary: boolean;
}

/** FakeRouteSnapshot is one route; fields the route does not have are absent. */
export interface FakeRouteSnapshot {
  readonly family: 4 | 6;
  readonly table: number;
  /** Destination prefix, masked ("0.0.0.0" / "::" for a default route). */
  readonly dst: string;
  readonly dstLength: number;
  readonly type: number;
  readonly scope: number;
  readonly protocol: number;
  /** RTA_PRIORITY (IPv6: the metric, 1024 when none was given). */
  readonly priority: number;
  readonly tos: number;
  readonly oif?: number;
  readonly gateway?: string;
  readonly prefsrc?: string;
}

/** FakeRuleSnapshot is one policy rule. */
export interface FakeRuleSnapshot {
  readonly family: 4 | 6;
  readonly priority: number;
  readonly table: number;
  readonly action: number;
  /** fib_rule_hdr.flags as stored (FIB_RULE_INVERT, ...), without the ones a dump computes. */
  readonly flags: number;
  readonly protocol: number;
  readonly tos: number;
  readonly mark?: number;
  readonly mask?: number;
  readonly src?: string;
  readonly srcLength: number;
  readonly dst?: string;
  readonly dstLength: number;
  readonly iifname?: string;
  readonly oifname?: string;
  readonly goto?: number;
}

/** FakeRtnetlinkSnapshot is the whole namespace. */
export interface FakeRtnetlinkSnapshot {
  readonly links: readonly FakeLinkSnapshot[];
  readonly addresses: readonly FakeAddressSnapshot[];
  readonly routes: readonly FakeRouteSnapshot[];
  readonly rules: readonly FakeRuleSnapshot[];
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
      routes.push(
        strip({
          family: 4 as const,
          table: r.table,
          dst: formatAddr(fromU32(r.key)),
          dstLength: r.len,
          type: r.type,
          scope: r.scope,
          protocol: r.protocol,
          priority: r.priority,
          tos: r.tos,
          oif: r.oif || undefined,
          gateway: r.gw ? formatAddr(fromU32(r.gw)) : undefined,
          prefsrc: r.prefsrc ? formatAddr(fromU32(r.prefsrc)) : undefined,
        }),
      );
    }
  }
  for (const t of dumpOrder(s.tables6)) {
    for (const r of routes6(t)) {
      routes.push(
        strip({
          family: 6 as const,
          table: r.table,
          dst: formatAddr(r.dst),
          dstLength: r.len,
          type: r.type,
          scope: 0,
          protocol: r.protocol,
          priority: r.metric,
          tos: 0,
          oif: r.oif || undefined,
          gateway: r.gw ? formatAddr(r.gw) : undefined,
          prefsrc: r.prefsrc ? formatAddr(r.prefsrc) : undefined,
        }),
      );
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
