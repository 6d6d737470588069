/**
 * Raw objects from the addon into the public, frozen shapes of types.ts. Objects of a family podnet does not know
 * (MPLS routes, AF_BRIDGE rules) are left out of listings by the callers, never a throw.
 */
import type { RawAddress, RawLink, RawRoute, RawRtAttr, RawRule } from '../native.js';
import { FIB_RULE_INVERT, IFF_UP, actionName, familyOf, protocolName, routeTypeName, scopeName } from './names.js';
import type { Address, Link, RawAttribute, Route, RoutingRule } from './types.js';

function raws(list: RawRtAttr[] | undefined): readonly RawAttribute[] {
  return Object.freeze((list ?? []).map((a) => Object.freeze({ type: a.type, data: a.data })));
}

export function toLink(l: RawLink): Link {
  return Object.freeze({
    index: l.index,
    name: l.name,
    flags: l.flags,
    up: (l.flags & IFF_UP) !== 0,
    mtu: l.mtu,
    linkType: l.type,
    operstate: l.operstate,
    address: l.address,
    kind: l.kind,
    master: l.master,
    raw: raws(l.unknown),
  });
}

export function toAddress(a: RawAddress): Address | undefined {
  const family = familyOf(a.family);
  if (family === undefined) return undefined;
  return Object.freeze({
    family,
    address: a.address,
    prefixLength: a.prefixLength,
    link: a.index,
    scope: scopeName(a.scope),
    flags: a.flags,
    peer: a.peer,
    label: a.label,
    raw: raws(a.unknown),
  });
}

export function toRoute(r: RawRoute): Route | undefined {
  const family = familyOf(r.family);
  if (family === undefined) return undefined;
  return Object.freeze({
    family,
    dst: r.dst ?? (family === 4 ? '0.0.0.0' : '::'),
    dstLength: r.dstLength,
    src: r.src,
    srcLength: r.srcLength,
    tos: r.tos,
    table: r.table,
    type: routeTypeName(r.type),
    scope: scopeName(r.scope),
    protocol: protocolName(r.protocol),
    oif: r.oif,
    gateway: r.gateway,
    prefsrc: r.prefsrc,
    priority: r.priority,
    flags: r.flags,
    raw: raws(r.unknown),
  });
}

export function toRule(r: RawRule): RoutingRule | undefined {
  const family = familyOf(r.family);
  if (family === undefined) return undefined;
  return Object.freeze({
    family,
    priority: r.priority ?? 0,
    table: r.table,
    action: actionName(r.action),
    mark: r.mark,
    mask: r.mask,
    src: r.src,
    srcLength: r.srcLength,
    dst: r.dst,
    dstLength: r.dstLength,
    iifname: r.iifname,
    oifname: r.oifname,
    invert: (r.flags & FIB_RULE_INVERT) !== 0,
    goto: r.goto,
    protocol: protocolName(r.protocol),
    tos: r.tos,
    flags: r.flags,
    raw: raws(r.unknown),
  });
}
