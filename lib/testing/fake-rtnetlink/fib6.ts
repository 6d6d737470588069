/**
 * The IPv6 FIB of the fake kernel (net/ipv6/route.c, ip6_fib.c): RTM_NEWROUTE and RTM_DELROUTE for AF_INET6 with
 * the kernel's checks in its order, the radix tree's node rules (which prefixes exist as nodes, the post-order a
 * dump walks), and the lookups gateway checks make.
 */
import {
  type AddrBytes,
  type KernelError,
  type MsgWriter,
  type NlMsg,
  bitAt,
  fail,
  inPrefix,
  isZero,
  maskAddr,
  readBytes,
  readU32,
  sameAddr,
  u32attr,
} from './codec.js';
import {
  ERRNO,
  IP6_RT_PRIO_USER,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  RT_TABLE_COMPAT,
  RT_TABLE_MAIN,
  RTA,
  RTM_F_CLONED,
  RTMSG_LEN,
  RTN,
  RTN_MAX,
  RTNH_F_ONLINK,
  RTPROT_BOOT,
} from './constants.js';
import { namedConstants } from '../netlink-kernel/constants.js';
import { type NetnsState, type Route6, type Table6, compareNodes, nodeKey } from './model.js';
import { parseRequest } from './policy.js';
import { lookupRules } from './rules.js';

const LOOPBACK = Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1);

/** Cfg6 is fib6_config: one request's fields after rtm_to_fib6_config. */
export interface Cfg6 {
  table: number;
  dst: AddrBytes;
  len: number;
  type: number;
  protocol: number;
  metric: number;
  oif: number;
  gw: AddrBytes | undefined;
  prefsrc: AddrBytes | undefined;
  rtmFlags: number;
  nlFlags: number;
}

// Attributes the kernel accepts on IPv6 routes that the fake does not model; a request that sets one is refused.
const UNMODELLED = namedConstants('RTA', RTA, ['SRC', 'METRICS', 'MULTIPATH', 'ENCAP', 'NH_ID', 'PREF', 'EXPIRES']);

/** parseCfg6 is rtm_to_fib6_config. */
export function parseCfg6(msg: NlMsg): Cfg6 | KernelError {
  if (msg.len < 16 + RTMSG_LEN) return fail(ERRNO.EINVAL, 'Invalid header length');
  const parsed = parseRequest(msg, RTMSG_LEN, 'route6');
  if (!parsed.ok) return parsed.error;
  const h = msg.bytes;
  if (h[19]) return fail(ERRNO.EINVAL, 'Invalid dsfield (tos): option not available for IPv6');
  const tb = parsed.attrs.byType;
  if (tb.has(RTA.VIA)) return fail(ERRNO.EINVAL, 'IPv6 does not support RTA_VIA attribute');
  const len = h[17] ?? 0;
  const dst = tb.get(RTA.DST);
  if (dst && dst.len < (len + 7) >> 3) return fail(ERRNO.EINVAL);
  for (const [type, name] of UNMODELLED) {
    if (tb.has(type)) return fail(ERRNO.EOPNOTSUPP, `fake-rtnetlink: IPv6 routes with ${name} are not modelled`);
  }
  const gw = tb.get(RTA.GATEWAY);
  const prefsrc = tb.get(RTA.PREFSRC);
  const u = (t: number) => (tb.get(t) ? readU32(tb.get(t)!) : 0);
  return {
    table: tb.get(RTA.TABLE) ? readU32(tb.get(RTA.TABLE)!) : (h[20] ?? 0),
    dst: dst ? pad16(readBytes(dst, Math.min(16, (len + 7) >> 3))) : new Uint8Array(16),
    len,
    type: h[23] ?? 0,
    protocol: h[21] ?? 0,
    metric: u(RTA.PRIORITY),
    oif: u(RTA.OIF),
    gw: gw ? readBytes(gw, 16) : undefined,
    prefsrc: prefsrc && !isZero(readBytes(prefsrc, 16)) ? readBytes(prefsrc, 16) : undefined,
    rtmFlags: Buffer.from(h.buffer, h.byteOffset, h.byteLength).readUInt32LE(24),
    nlFlags: msg.flags,
  };
}

function pad16(b: Uint8Array): AddrBytes {
  const out = new Uint8Array(16);
  out.set(b.subarray(0, 16));
  return out;
}

/** addrType6 is the part of ipv6_addr_type the gateway checks use. */
function addrType6(a: AddrBytes): 'unicast' | 'linklocal' | 'loopback' | 'invalid' {
  const b0 = a[0] ?? 0;
  if (b0 === 0xff) return 'invalid';
  if (b0 >> 5 !== 0 && b0 >> 5 !== 7) return 'unicast';
  if (b0 === 0xfe && ((a[1] ?? 0) & 0xc0) === 0x80) return 'linklocal';
  if ((b0 === 0xfe && ((a[1] ?? 0) & 0xc0) === 0xc0) || (b0 & 0xfe) === 0xfc) return 'unicast';
  if (a.subarray(0, 8).some((x) => x !== 0)) return 'invalid';
  const word2 = Buffer.from(a).readUInt32BE(8);
  if (word2 === 0) {
    if (isZero(a.subarray(12))) return 'invalid';
    return sameAddr(a, LOOPBACK) ? 'loopback' : 'unicast';
  }
  return word2 === 0xffff ? 'unicast' : 'invalid';
}

/** localAddr is ipv6_chk_addr_and_flags: addr is an address here (on dev, or anywhere if global or anyDev). */
function localAddr(state: NetnsState, addr: AddrBytes, dev: number, anyDev: boolean): boolean {
  for (const [link, list] of state.addrs[6]) {
    for (const a of list) {
      if (!sameAddr(a.addr, addr)) continue;
      if (anyDev || link === dev || a.scope === 0) return true;
    }
  }
  return false;
}

/** candidates yields the routes of the nodes containing addr, most specific first, as fib6_node_lookup backtracks. */
function* candidates(t: Table6, addr: AddrBytes): Generator<Route6[]> {
  for (let len = 128; len >= 0; len--) {
    const list = t.nodes.get(nodeKey(maskAddr(addr, len), len));
    if (list?.length) yield list;
  }
}

/**
 * tableLookup6 is fib6_table_lookup. With RT6_LOOKUP_F_IFACE (strict) only routes on oif count, the first of them
 * in metric order; without it a route on oif is only preferred within the node's lowest metric.
 */
function tableLookup6(t: Table6, addr: AddrBytes, oif: number, strict = true): Route6 | undefined {
  for (const list of candidates(t, addr)) {
    if (!strict) {
      const best = list.filter((x) => x.metric === list[0]!.metric);
      return best.find((x) => x.oif === oif) ?? best[0];
    }
    const r = list.find((x) => !oif || x.oif === oif);
    if (r) return r;
  }
  return undefined;
}

/** checkGateway6 is ip6_route_check_nh: the device the gateway is reached through (EHOSTUNREACH if none). */
function checkGateway6(state: NetnsState, cfg: Cfg6, gw: AddrBytes, dev: number): number | KernelError {
  const usable = (r: Route6 | undefined) => r !== undefined && !r.reject && r.gw === undefined && (!dev || r.oif === dev);
  if (cfg.table) {
    const t = state.findTable6(cfg.table);
    const r = t ? tableLookup6(t, gw, cfg.oif) : undefined;
    if (usable(r)) return r!.oif;
  }
  const res = lookupRules(state, 6, { iif: 0, oif: cfg.oif, dst: gw }, (id) => {
    const t = state.findTable6(id);
    const r = t ? tableLookup6(t, gw, cfg.oif) : undefined;
    return r ? { route: r, prefixLen: r.len, dev: r.oif } : undefined;
  });
  if ('err' in res || res.route.reject || res.route.gw !== undefined) return fail(ERRNO.EHOSTUNREACH);
  if (dev && res.route.oif !== dev) return fail(ERRNO.EHOSTUNREACH);
  return res.route.oif;
}

/** validateGateway is ip6_validate_gw: returns the egress device. */
function validateGateway(state: NetnsState, cfg: Cfg6, gw: AddrBytes, dev: number): number | KernelError {
  const type = addrType6(gw);
  const anyDev = type !== 'linklocal';
  if (dev && localAddr(state, gw, dev, anyDev)) return fail(ERRNO.EINVAL, 'Gateway can not be a local address');
  let out = dev;
  if (type !== 'linklocal') {
    if (type === 'invalid') return fail(ERRNO.EINVAL, 'Invalid gateway address');
    if (cfg.rtmFlags & RTNH_F_ONLINK) {
      // ip6_route_check_nh_onlink: a route in main that covers the gateway must be unicast on the same device,
      // unless it is a reject route or one whose prefix address is :: (the default route, or ::/1).
      const main = state.findTable6(RT_TABLE_MAIN);
      const r = main ? tableLookup6(main, gw, cfg.oif, false) : undefined;
      if (r && !r.reject && !isZero(r.dst) && (r.type !== RTN.UNICAST || r.oif !== dev)) {
        return fail(ERRNO.EINVAL, 'Nexthop has invalid gateway or device mismatch');
      }
    } else {
      const via = checkGateway6(state, cfg, gw, dev);
      if (typeof via !== 'number') return via;
      out = via;
    }
  }
  const egress = state.links.get(out);
  if (!egress) return fail(ERRNO.EINVAL, 'Egress device not specified');
  if (egress.loopback) return fail(ERRNO.EINVAL, 'Egress device can not be loopback device for this route');
  if (!dev && localAddr(state, gw, out, anyDev)) return fail(ERRNO.EINVAL, 'Gateway can not be a local address');
  return out;
}

const REJECT_TYPES: ReadonlySet<number> = new Set([RTN.BLACKHOLE, RTN.UNREACHABLE, RTN.PROHIBIT, RTN.THROW]);

/** createRoute6 is ip6_route_info_create with fib6_nh_init; the table is created (or found) on the way. */
function createRoute6(state: NetnsState, cfg: Cfg6): Route6 | KernelError {
  if (cfg.rtmFlags & RTM_F_CLONED) return fail(ERRNO.EINVAL, 'Userspace can not set RTF_CACHE');
  if (cfg.type > RTN_MAX) return fail(ERRNO.EINVAL, 'Invalid route type');
  if (cfg.len > 128) return fail(ERRNO.EINVAL, 'Invalid prefix length');
  const t = state.table6(cfg.table);
  const type = cfg.type || RTN.UNICAST;
  const route: Route6 = {
    table: t.id,
    dst: maskAddr(cfg.dst, cfg.len),
    len: cfg.len,
    metric: cfg.metric || IP6_RT_PRIO_USER,
    type,
    protocol: cfg.protocol || RTPROT_BOOT,
    oif: 0,
    gw: undefined,
    prefsrc: undefined,
    reject: REJECT_TYPES.has(type),
    nhFlags: 0,
  };
  let dev = 0;
  if (cfg.oif) {
    if (!state.links.has(cfg.oif)) return fail(ERRNO.ENODEV);
    dev = cfg.oif;
  }
  if (cfg.rtmFlags & RTNH_F_ONLINK) {
    const link = state.links.get(dev);
    if (!link) return fail(ERRNO.ENODEV, 'Nexthop device required for onlink');
    if (!link.up) return fail(ERRNO.ENETDOWN, 'Nexthop device is not up');
    route.nhFlags |= RTNH_F_ONLINK;
  }
  if (route.reject) {
    route.oif = 1;
  } else {
    if (cfg.gw) {
      const out = validateGateway(state, cfg, cfg.gw, dev);
      if (typeof out !== 'number') return out;
      dev = out;
      route.gw = cfg.gw;
    }
    const link = state.links.get(dev);
    if (!link) return fail(ERRNO.ENODEV);
    if (!state.ipv6) return fail(ERRNO.EACCES, 'IPv6 is disabled on nexthop device');
    if (!link.up) return fail(ERRNO.ENETDOWN, 'Nexthop device is not up');
    route.oif = dev;
    // A unicast route through lo would loop, so the kernel makes it a reject route (its type stays as given).
    if (link.loopback && !sameAddr(cfg.dst, LOOPBACK) && type !== RTN.LOCAL && type !== RTN.ANYCAST) route.reject = true;
  }
  if (cfg.prefsrc) {
    if (!localAddr(state, cfg.prefsrc, route.oif, false)) return fail(ERRNO.EINVAL, 'Invalid source address');
    route.prefsrc = cfg.prefsrc;
  }
  return route;
}

/** nodeExists is whether the radix tree has a node at prefix/len: a route's, the root, or a branching point. */
function nodeExists(t: Table6, prefix: AddrBytes, len: number): boolean {
  if (len === 0 || t.nodes.has(nodeKey(prefix, len))) return true;
  let left = false;
  let right = false;
  for (const list of t.nodes.values()) {
    const r = list[0]!;
    if (r.len <= len || !inPrefix(r.dst, prefix, len)) continue;
    if (bitAt(r.dst, len)) right = true;
    else left = true;
    if (left && right) return true;
  }
  return false;
}

/** insert6 is fib6_add (fib6_add_1 and fib6_add_rt2) for a route that passed its checks. */
export function insert6(t: Table6, r: Route6, nlFlags: number, fromKernel = false): KernelError | undefined {
  const replace = !fromKernel && (nlFlags & NLM_F_REPLACE) !== 0;
  const add = fromKernel || (nlFlags & NLM_F_CREATE) !== 0;
  const key = nodeKey(r.dst, r.len);
  if (!add && replace && !nodeExists(t, r.dst, r.len)) return fail(ERRNO.ENOENT, 'Can not replace route - no match found');
  const list = t.nodes.get(key) ?? [];
  const ecmp = r.gw !== undefined;
  let ins = 0;
  let found = -1;
  let fallback = -1;
  for (let i = 0; i < list.length; i++) {
    const it = list[i]!;
    if (it.metric === r.metric) {
      if (!fromKernel && nlFlags & NLM_F_EXCL) return fail(ERRNO.EEXIST);
      if (replace) {
        if (ecmp === (it.gw !== undefined)) {
          found = i;
          break;
        }
        if (fallback < 0) fallback = i;
        ins = i + 1;
        continue;
      }
      if (it.oif === r.oif && sameAddr(it.gw, r.gw)) return fail(ERRNO.EEXIST);
      if (ecmp && it.gw !== undefined) {
        return fail(ERRNO.EOPNOTSUPP, 'fake-rtnetlink: IPv6 multipath (ECMP) routes are not modelled');
      }
    }
    if (it.metric > r.metric) break;
    ins = i + 1;
  }
  if (found < 0 && fallback >= 0) found = fallback;
  if (replace && found >= 0) {
    list[found] = r;
    return undefined;
  }
  if (replace && !add) return fail(ERRNO.ENOENT);
  list.splice(ins, 0, r);
  t.nodes.set(key, list);
  return undefined;
}

/** newRoute6 handles RTM_NEWROUTE for AF_INET6. */
export function newRoute6(state: NetnsState, msg: NlMsg): KernelError | undefined {
  const cfg = parseCfg6(msg);
  if ('errno' in cfg) return cfg;
  const r = createRoute6(state, cfg);
  if ('errno' in r) return r;
  return insert6(state.findTable6(r.table)!, r, cfg.nlFlags);
}

/** delRoute6 handles RTM_DELROUTE for AF_INET6 (ip6_route_del): the first route of the node that matches. */
export function delRoute6(state: NetnsState, msg: NlMsg): KernelError | undefined {
  const cfg = parseCfg6(msg);
  if ('errno' in cfg) return cfg;
  const t = state.findTable6(cfg.table);
  if (!t) return fail(ERRNO.ESRCH, 'FIB table does not exist');
  // RTM_F_CLONED deletes cached exception routes, which the fake never has: the kernel then reports success.
  if (cfg.rtmFlags & RTM_F_CLONED) return undefined;
  if (cfg.len > 128) return fail(ERRNO.ESRCH);
  const key = nodeKey(maskAddr(cfg.dst, cfg.len), cfg.len);
  const list = t.nodes.get(key);
  if (!list) {
    // The root without a default route holds the null entry (kernel, metric ~0, on lo), which a delete can match.
    const nullMatch = cfg.len === 0 && (!cfg.metric || cfg.metric === 0xffffffff) && (!cfg.protocol || cfg.protocol === 2);
    const nullNh = (!cfg.oif || cfg.oif === 1) && (!cfg.gw || isZero(cfg.gw));
    return fail(nullMatch && nullNh ? ERRNO.ENOENT : ERRNO.ESRCH);
  }
  const i = list.findIndex(
    (r) =>
      (!cfg.metric || r.metric === cfg.metric) &&
      (!cfg.protocol || r.protocol === cfg.protocol) &&
      (!cfg.oif || r.oif === cfg.oif) &&
      (!cfg.gw || sameAddr(cfg.gw, r.gw ?? new Uint8Array(16))),
  );
  if (i < 0) return fail(ERRNO.ESRCH);
  list.splice(i, 1);
  if (list.length === 0) t.nodes.delete(key);
  return undefined;
}

/** routes6 lists a table's routes in dump order (post-order over the tree, each node's routes by metric). */
export function routes6(t: Table6): Route6[] {
  const lists = [...t.nodes.values()];
  lists.sort((a, b) => compareNodes(a[0]!.dst, a[0]!.len, b[0]!.dst, b[0]!.len));
  return lists.flat();
}

/** fillRoute6 writes one RTM_NEWROUTE body as rt6_fill_node does for a FIB entry. */
export function fillRoute6(w: MsgWriter, r: Route6): void {
  w.bytes(Uint8Array.of(10, r.len, 0, 0, r.table < 256 ? r.table : RT_TABLE_COMPAT, r.protocol, 0, r.type));
  w.u32le(r.nhFlags);
  u32attr(w, RTA.TABLE, r.table);
  if (r.len) w.raw(RTA.DST, r.dst);
  if (r.prefsrc) w.raw(RTA.PREFSRC, r.prefsrc);
  u32attr(w, RTA.PRIORITY, r.metric);
  if (r.gw) w.raw(RTA.GATEWAY, r.gw);
  if (r.oif) u32attr(w, RTA.OIF, r.oif);
  w.raw(RTA.CACHEINFO, new Uint8Array(32));
  w.u8(RTA.PREF, 0);
}
