/**
 * The IPv4 FIB of the fake kernel (net/ipv4/fib_frontend.c, fib_semantics.c, fib_trie.c): RTM_NEWROUTE and
 * RTM_DELROUTE with the kernel's checks in the kernel's order, the alias order a dump shows, and the lookups that
 * gateway and prefsrc checks make (through the policy rules once any IPv4 rule was changed, through the merged
 * local/main trie before).
 */
import { sameFields } from '../netlink-kernel/compare.js';
import { type KernelError, type MsgWriter, type NlMsg, fail, fromU32, readU32, u32, u32attr } from './codec.js';
import {
  ERRNO,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  RT_SCOPE_HOST,
  RT_SCOPE_LINK,
  RT_SCOPE_NOWHERE,
  RT_SCOPE_UNIVERSE,
  RT_TABLE_COMPAT,
  RT_TABLE_DEFAULT,
  RT_TABLE_LOCAL,
  RT_TABLE_MAIN,
  RTA,
  RTMSG_LEN,
  RTN,
  RTN_MAX,
  RTNH_F_DEAD,
  RTNH_F_LINKDOWN,
  RTNH_F_OFFLOAD,
  RTNH_F_ONLINK,
  RTNH_F_TRAP,
} from './constants.js';
import type { NetnsState, Route4, Table4 } from './model.js';
import { parseRequest } from './policy.js';
import { type Flow4, lookupRules } from './rules.js';

/** fib_props: the error a lookup hitting each route type returns, and the narrowest scope the type allows. */
const PROPS: readonly { error: number; scope: number }[] = [
  { error: 0, scope: RT_SCOPE_NOWHERE },
  { error: 0, scope: RT_SCOPE_UNIVERSE },
  { error: 0, scope: RT_SCOPE_HOST },
  { error: 0, scope: RT_SCOPE_LINK },
  { error: 0, scope: RT_SCOPE_LINK },
  { error: 0, scope: RT_SCOPE_UNIVERSE },
  { error: -ERRNO.EINVAL, scope: RT_SCOPE_UNIVERSE },
  { error: -ERRNO.EHOSTUNREACH, scope: RT_SCOPE_UNIVERSE },
  { error: -ERRNO.EACCES, scope: RT_SCOPE_UNIVERSE },
  { error: -ERRNO.EAGAIN, scope: RT_SCOPE_UNIVERSE },
  { error: -ERRNO.EINVAL, scope: RT_SCOPE_NOWHERE },
  { error: -ERRNO.EINVAL, scope: RT_SCOPE_NOWHERE },
];

/** Cfg4 is fib_config: one request's fields after rtm_to_fib_config. */
export interface Cfg4 extends Pick<Route4, 'table' | 'key' | 'len' | 'tos' | 'type' | 'scope' | 'protocol' | 'prefsrc' | 'oif' | 'gw' | 'priority'> {
  rtmFlags: number;
  nlFlags: number;
}

/** parseCfg4 is rtm_to_fib_config: policy, ECN bits, route type, then the attributes (the last of a type wins). */
export function parseCfg4(msg: NlMsg): Cfg4 | KernelError {
  if (msg.len < 16 + RTMSG_LEN) return fail(ERRNO.EINVAL);
  const parsed = parseRequest(msg, RTMSG_LEN, 'route4');
  if (!parsed.ok) return parsed.error;
  const h = msg.bytes;
  const tos = h[19] ?? 0;
  if (tos & 3) return fail(ERRNO.EINVAL, 'Invalid dsfield (tos): ECN bits must be 0');
  const type = h[23] ?? 0;
  if (type > RTN_MAX) return fail(ERRNO.EINVAL, 'Invalid route type');
  const at = (t: number) => parsed.attrs.byType.get(t);
  const get = (t: number) => {
    const a = at(t);
    return a ? readU32BE(a.value) : 0;
  };
  const table = at(RTA.TABLE);
  return {
    table: table ? readU32(table) : (h[20] ?? 0),
    key: get(RTA.DST),
    len: h[17] ?? 0,
    tos,
    type,
    scope: h[22] ?? 0,
    protocol: h[21] ?? 0,
    prefsrc: get(RTA.PREFSRC),
    oif: at(RTA.OIF) ? readU32(at(RTA.OIF)!) : 0,
    gw: get(RTA.GATEWAY),
    priority: at(RTA.PRIORITY) ? readU32(at(RTA.PRIORITY)!) : 0,
    rtmFlags: Buffer.from(h.buffer, h.byteOffset, h.byteLength).readUInt32LE(24),
    nlFlags: msg.flags,
  };
}

function readU32BE(v: Uint8Array): number {
  return v.length >= 4 ? u32(v) : 0;
}

/** validKey is fib_valid_key_len. */
function validKey(key: number, len: number): KernelError | undefined {
  if (len > 32) return fail(ERRNO.EINVAL, 'Invalid prefix length');
  if (len < 32 && (len === 0 ? key : (key << len) >>> 0) !== 0) {
    return fail(ERRNO.EINVAL, 'Invalid prefix for given prefix length');
  }
  return undefined;
}

/** Found4 is a successful lookup: the route and the table it came from. */
export interface Found4 {
  route: Route4;
}

/** Lookup4 is fib_table_lookup's answer: a route, or a negative errno (-EAGAIN: nothing found). */
export type Lookup4 = Found4 | { err: number };

/**
 * tableLookup is fib_table_lookup over the given tables' aliases (two of them while local and main share one
 * trie): the longest prefix first, aliases in leaf order, skipping any whose scope is below the flow's.
 */
function tableLookup(tables: Table4[], flow: Flow4): Lookup4 {
  for (let len = 32; len >= 0; len--) {
    const key = len === 0 ? 0 : ((flow.daddr >>> (32 - len)) << (32 - len)) >>> 0;
    // Local's aliases come before main's at the same prefix in a merged leaf (tb_id descending).
    for (const t of tables) {
      for (const r of t.leaves.get(key) ?? []) {
        if (r.len !== len) continue;
        if (r.tos !== 0 && r.tos !== flow.tos) continue;
        if (r.scope < flow.scope) continue;
        const err = PROPS[r.type]?.error ?? 0;
        if (err < 0) return { err };
        if (flow.oif && flow.oif !== r.oif) continue;
        return { route: r };
      }
    }
  }
  return { err: -ERRNO.EAGAIN };
}

/** lookupTable4 looks up one table the way the kernel reaches it: local and main are one trie while merged. */
export function lookupTable4(state: NetnsState, id: number, flow: Flow4): Lookup4 | undefined {
  const t = state.findTable4(id);
  if (!t) return undefined;
  if (!state.customRules4 && (t.id === RT_TABLE_MAIN || t.id === RT_TABLE_LOCAL)) {
    const merged = [state.findTable4(RT_TABLE_LOCAL), state.findTable4(RT_TABLE_MAIN)];
    return tableLookup(merged.filter((x): x is Table4 => x !== undefined), flow);
  }
  return tableLookup([t], flow);
}

/** fibLookup4 is fib_lookup: negative errno (-ENETUNREACH when nothing routes) or the route found. */
export function fibLookup4(state: NetnsState, flow: Flow4): Lookup4 {
  if (!state.customRules4) {
    let res: Lookup4 = { err: -ERRNO.ENETUNREACH };
    const main = lookupTable4(state, RT_TABLE_MAIN, flow);
    if (main) res = main;
    if ('route' in res) return res;
    const def = lookupTable4(state, RT_TABLE_DEFAULT, flow);
    if (def) res = def;
    return 'err' in res && res.err === -ERRNO.EAGAIN ? { err: -ERRNO.ENETUNREACH } : res;
  }
  const res = lookupRules(state, 4, { iif: flow.iif, oif: flow.oif, dst: fromU32(flow.daddr) }, (id) => {
    const r = lookupTable4(state, id, flow);
    return r && 'route' in r ? { route: r.route, prefixLen: r.route.len, dev: r.route.oif } : r;
  });
  if ('err' in res) return { err: res.err === -ERRNO.ESRCH ? -ERRNO.ENETUNREACH : res.err };
  return { route: res.route };
}

/** addrType is inet_addr_type_table (with dev: inet_addr_type_dev_table): the type of the route addr hits. */
function addrType(state: NetnsState, addr: number, table: number, dev?: number): number {
  if (addr >>> 24 === 0 || addr === 0xffffffff) return RTN.BROADCAST;
  if (addr >>> 28 === 0xe) return RTN.MULTICAST;
  const res = lookupTable4(state, table, { daddr: addr, scope: RT_SCOPE_UNIVERSE, oif: 0, iif: 0, tos: 0 });
  if (!res) return RTN.UNICAST;
  if ('route' in res && (dev === undefined || res.route.oif === dev)) return res.route.type;
  return RTN.UNICAST;
}

/** checkGateway is fib_check_nh_v4_gw: where the gateway is reached from, or why it is not. */
function checkGateway(state: NetnsState, cfg: Cfg4): { oif: number } | KernelError {
  if (cfg.rtmFlags & RTNH_F_ONLINK) {
    if (cfg.scope >= RT_SCOPE_LINK) return fail(ERRNO.EINVAL, 'Nexthop has invalid scope');
    const dev = state.links.get(cfg.oif);
    if (!dev) return fail(ERRNO.ENODEV, 'Nexthop device required for onlink');
    if (!dev.up) return fail(ERRNO.ENETDOWN, 'Nexthop device is not up');
    // inet_addr_type_dev_table asks the local table about the address on any device, not only this one.
    if (addrType(state, cfg.gw, RT_TABLE_LOCAL) !== RTN.UNICAST) return fail(ERRNO.EINVAL, 'Nexthop has invalid gateway');
    return { oif: dev.index };
  }
  const flow: Flow4 = { daddr: cfg.gw, scope: Math.max(cfg.scope + 1, RT_SCOPE_LINK), oif: cfg.oif, iif: 1, tos: 0 };
  let res: Lookup4 | undefined;
  if (cfg.table && cfg.table !== RT_TABLE_MAIN) res = lookupTable4(state, cfg.table, flow);
  if (!res || 'err' in res) res = fibLookup4(state, flow);
  if ('err' in res) return fail(-res.err, 'Nexthop has invalid gateway');
  if (res.route.type !== RTN.UNICAST && res.route.type !== RTN.LOCAL) return fail(ERRNO.EINVAL, 'Nexthop has invalid gateway');
  const dev = state.links.get(res.route.oif);
  if (!dev) return fail(ERRNO.EINVAL, 'No egress device for nexthop gateway');
  return dev.up ? { oif: dev.index } : fail(ERRNO.ENETDOWN);
}

/** createInfo is fib_create_info: the checks on type, scope, flags and nexthop, and the route they produce. */
function createInfo(state: NetnsState, cfg: Cfg4, table: number): Route4 | KernelError {
  const props = PROPS[cfg.type]!;
  if (props.scope > cfg.scope) return fail(ERRNO.EINVAL, 'Invalid scope');
  if (cfg.rtmFlags & (RTNH_F_DEAD | RTNH_F_LINKDOWN)) {
    return fail(ERRNO.EINVAL, 'Invalid rtm_flags - can not contain DEAD or LINKDOWN');
  }
  const route: Route4 = {
    table,
    key: cfg.key,
    len: cfg.len,
    tos: cfg.tos,
    priority: cfg.priority,
    type: cfg.type,
    scope: cfg.scope,
    protocol: cfg.protocol,
    prefsrc: cfg.prefsrc,
    oif: 0,
    gw: 0,
    fibFlags: cfg.rtmFlags,
    // fib_nh_init keeps the request's flags in the nexthop, and a dump reports ONLINK, OFFLOAD and TRAP of them.
    nhFlags: cfg.rtmFlags & (RTNH_F_ONLINK | RTNH_F_OFFLOAD | RTNH_F_TRAP),
  };
  if (props.error) {
    if (cfg.gw || cfg.oif) return fail(ERRNO.EINVAL, 'Gateway, device and multipath can not be specified for this route type');
    return route;
  }
  if (cfg.type === RTN.UNSPEC) return fail(ERRNO.EINVAL, 'Invalid route type');
  if (cfg.scope > RT_SCOPE_HOST) return fail(ERRNO.EINVAL, 'Invalid scope');
  if (cfg.scope === RT_SCOPE_HOST) {
    if (cfg.gw) return fail(ERRNO.EINVAL, 'Route with host scope can not have a gateway');
    if (!state.links.has(cfg.oif)) return fail(ERRNO.ENODEV);
    route.oif = cfg.oif;
  } else if (cfg.gw) {
    const nh = checkGateway(state, cfg);
    if ('errno' in nh) return nh;
    route.oif = nh.oif;
    route.gw = cfg.gw;
  } else {
    if (cfg.rtmFlags & RTNH_F_ONLINK) {
      return fail(ERRNO.EINVAL, 'Invalid flags for nexthop - PERVASIVE and ONLINK can not be set');
    }
    const dev = state.links.get(cfg.oif);
    if (!dev) return fail(ERRNO.ENODEV);
    if (!dev.up) return fail(ERRNO.ENETDOWN, 'Device for nexthop is not up');
    route.oif = dev.index;
  }
  if (cfg.prefsrc && !validPrefsrc(state, cfg)) return fail(ERRNO.EINVAL, 'Invalid prefsrc address');
  return route;
}

/** validPrefsrc is fib_valid_prefsrc: the source must be a local address (or the local route's own address). */
function validPrefsrc(state: NetnsState, cfg: Cfg4): boolean {
  if (cfg.type === RTN.LOCAL && cfg.key !== 0 && cfg.prefsrc === cfg.key) return true;
  const tb = cfg.table === RT_TABLE_MAIN ? RT_TABLE_LOCAL : cfg.table;
  let rc = addrType(state, cfg.prefsrc, tb);
  if (rc !== RTN.LOCAL && tb !== RT_TABLE_LOCAL) rc = addrType(state, cfg.prefsrc, RT_TABLE_LOCAL);
  return rc === RTN.LOCAL;
}

/** sameInfo is fib_find_info's identity of two routes' fib_info plus the alias type. */
function sameInfo(a: Route4, b: Route4): boolean {
  const cmp = ~(RTNH_F_DEAD | RTNH_F_LINKDOWN | RTNH_F_OFFLOAD | RTNH_F_TRAP);
  return ((a.fibFlags ^ b.fibFlags) & cmp) === 0 && sameFields(a, b, ['type', 'protocol', 'scope', 'prefsrc', 'priority', 'oif', 'gw', 'nhFlags']);
}

/** findAlias is fib_find_alias: the index of the first alias at or after which (tos, priority) belongs. */
function findAlias(list: Route4[], len: number, tos: number, priority: number): number {
  for (let i = 0; i < list.length; i++) {
    const fa = list[i]!;
    if (fa.len > len) continue;
    if (fa.len !== len) break;
    if (fa.tos > tos) continue;
    if (fa.priority >= priority || fa.tos < tos) return i;
  }
  return -1;
}

/** sortedSlot is where fib_insert_alias puts an alias when no alias of its prefix length comes after it. */
function sortedSlot(list: Route4[], len: number): number {
  let at = 0;
  for (let i = 0; i < list.length; i++) {
    if (len > list[i]!.len) break;
    at = i + 1;
  }
  return at;
}

/** insert4 is fib_table_insert after fib_create_info: duplicates, replace, append and create. */
export function insert4(t: Table4, r: Route4, nlFlags: number): KernelError | undefined {
  let list = t.leaves.get(r.key);
  const i = list ? findAlias(list, r.len, r.tos, r.priority) : -1;
  let at = i;
  if (list && i >= 0 && list[i]!.tos === r.tos && list[i]!.priority === r.priority) {
    if (nlFlags & NLM_F_EXCL) return fail(ERRNO.EEXIST);
    let j = i;
    let match = -1;
    for (; j < list.length; j++) {
      const fa = list[j]!;
      if (fa.len !== r.len || fa.tos !== r.tos || fa.priority !== r.priority) break;
      if (sameInfo(fa, r)) {
        match = j;
        break;
      }
    }
    if (nlFlags & NLM_F_REPLACE) {
      if (match >= 0) return match === i ? undefined : fail(ERRNO.EEXIST);
      list[i] = r;
      return undefined;
    }
    if (match >= 0) return fail(ERRNO.EEXIST);
    at = nlFlags & NLM_F_APPEND ? j : i;
  }
  if (!(nlFlags & NLM_F_CREATE)) return fail(ERRNO.ENOENT);
  if (!list) {
    list = [];
    t.leaves.set(r.key, list);
  }
  list.splice(at >= 0 && at <= list.length ? at : sortedSlot(list, r.len), 0, r);
  return undefined;
}

/** parseKeyed4 is parseCfg4 followed by the check that the prefix has no bits past its length. */
function parseKeyed4(msg: NlMsg): Cfg4 | KernelError {
  const cfg = parseCfg4(msg);
  if ('errno' in cfg) return cfg;
  return validKey(cfg.key, cfg.len) ?? cfg;
}

/** newRoute4 handles RTM_NEWROUTE for AF_INET; a valid prefix creates the table even when the route is then refused. */
export function newRoute4(state: NetnsState, msg: NlMsg): KernelError | undefined {
  // The prefix is checked before the table is made; everything after that leaves the (new, empty) table behind.
  const cfg = parseKeyed4(msg);
  if ('errno' in cfg) return cfg;
  const t = state.table4(cfg.table);
  const route = createInfo(state, cfg, t.id);
  if ('errno' in route) return route;
  return insert4(t, route, cfg.nlFlags);
}

/** delRoute4 handles RTM_DELROUTE for AF_INET: unset fields match anything, set ones must be equal. */
export function delRoute4(state: NetnsState, msg: NlMsg): KernelError | undefined {
  const cfg = parseKeyed4(msg);
  if ('errno' in cfg) return cfg;
  const t = state.findTable4(cfg.table);
  if (!t) return fail(ERRNO.ESRCH, 'FIB table does not exist');
  return remove4(t, cfg);
}

/** remove4 is fib_table_delete for a valid prefix. */
export function remove4(t: Table4, cfg: Cfg4): KernelError | undefined {
  const list = t.leaves.get(cfg.key);
  if (!list) return fail(ERRNO.ESRCH);
  // fib_find_alias with priority 0: the first alias of this prefix length whose tos is not above the request's.
  let i = -1;
  for (let k = 0; k < list.length; k++) {
    const fa = list[k]!;
    if (fa.len > cfg.len) continue;
    if (fa.len !== cfg.len) break;
    if (fa.tos > cfg.tos) continue;
    i = k;
    break;
  }
  for (; i >= 0 && i < list.length; i++) {
    const fa = list[i]!;
    if (fa.len !== cfg.len || fa.tos !== cfg.tos) break;
    if (cfg.type && fa.type !== cfg.type) continue;
    if (cfg.scope !== RT_SCOPE_NOWHERE && fa.scope !== cfg.scope) continue;
    if (cfg.prefsrc && fa.prefsrc !== cfg.prefsrc) continue;
    if (cfg.protocol && fa.protocol !== cfg.protocol) continue;
    if (cfg.priority && fa.priority !== cfg.priority) continue;
    if (cfg.oif && fa.oif !== cfg.oif) continue;
    if (cfg.gw && fa.gw !== cfg.gw) continue;
    list.splice(i, 1);
    if (list.length === 0) t.leaves.delete(cfg.key);
    return undefined;
  }
  return fail(ERRNO.ESRCH);
}

/** routes4 lists a table's aliases in dump order: keys ascending, each leaf's aliases as stored. */
export function routes4(t: Table4): Route4[] {
  return [...t.leaves.keys()].sort((a, b) => a - b).flatMap((k) => t.leaves.get(k)!);
}

/** fillRoute4 writes one RTM_NEWROUTE body (rtmsg and attributes) as fib_dump_info does. */
export function fillRoute4(w: MsgWriter, r: Route4): void {
  w.bytes(Uint8Array.of(2, r.len, 0, r.tos, r.table < 256 ? r.table : RT_TABLE_COMPAT, r.protocol, r.scope, r.type));
  w.u32le(r.nhFlags);
  u32attr(w, RTA.TABLE, r.table);
  if (r.len) w.raw(RTA.DST, fromU32(r.key));
  if (r.priority) u32attr(w, RTA.PRIORITY, r.priority);
  if (r.prefsrc) w.raw(RTA.PREFSRC, fromU32(r.prefsrc));
  if (r.gw) w.raw(RTA.GATEWAY, fromU32(r.gw));
  if (r.oif) u32attr(w, RTA.OIF, r.oif);
}
