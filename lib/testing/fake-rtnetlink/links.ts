/**
 * Links and addresses of the fake kernel: what bringing a device up and adding an address do to the FIB
 * (fib_add_ifaddr, addrconf), RTM_GETLINK for one link, and the RTM_NEWLINK / RTM_NEWADDR bodies that dumps and
 * replies carry. Only the link attributes podnet reads are emitted, each framed and ordered as rtnl_fill_ifinfo does.
 */
import {
  type AddrBytes,
  type KernelError,
  type MsgWriter,
  type NlMsg,
  fail,
  fromU32,
  maskAddr,
  readIfname,
  u32,
  u32attr,
} from './codec.js';
import {
  ARPHRD_ETHER,
  ARPHRD_LOOPBACK,
  ERRNO,
  IF_OPER_DOWN,
  IF_OPER_UNKNOWN,
  IFA,
  IFA_F_PERMANENT,
  IFA_F_SECONDARY,
  IFAPROT_KERNEL_LL,
  IFAPROT_KERNEL_LO,
  IFF_BROADCAST,
  IFF_LOOPBACK,
  IFF_LOWER_UP,
  IFF_NOARP,
  IFF_RUNNING,
  IFF_UP,
  IFINFOMSG_LEN,
  IFLA,
  IFLA_INFO_KIND,
  LINK_KIND,
  INFINITY_LIFE_TIME,
  IP6_RT_PRIO_ADDRCONF,
  NLM_F_APPEND,
  NLM_F_CREATE,
  RT_SCOPE_HOST,
  RT_SCOPE_LINK,
  RT_SCOPE_UNIVERSE,
  RT_TABLE_LOCAL,
  RT_TABLE_MAIN,
  RTN,
  RTPROT_KERNEL,
} from './constants.js';
import { insert4 } from './fib4.js';
import { insert6 } from './fib6.js';
import type { Addr, Link, NetnsState, Route6 } from './model.js';
import { parseRequest } from './policy.js';

/** flagsOf is dev_get_flags: the administrative flags plus RUNNING and LOWER_UP while the device is up. */
export function flagsOf(l: Link): number {
  const base = l.loopback ? IFF_LOOPBACK : IFF_BROADCAST | IFF_NOARP;
  return l.up ? base | IFF_UP | IFF_RUNNING | IFF_LOWER_UP : base;
}

/** IFLA_LINKINFO's payload for the added links: IFLA_INFO_KIND "ifb" and nothing else, as the ifb driver fills it. */
const LINKINFO_IFB = (() => {
  const kind = Buffer.from(`${LINK_KIND}\0`);
  const out = Buffer.alloc((4 + kind.length + 3) & ~3);
  out.writeUInt16LE(4 + kind.length, 0);
  out.writeUInt16LE(IFLA_INFO_KIND, 2);
  kind.copy(out, 4);
  return out;
})();

/** fillLink writes an RTM_NEWLINK body: ifinfomsg, then the emitted attributes in rtnl_fill_ifinfo's order. */
export function fillLink(w: MsgWriter, l: Link): void {
  const h = Buffer.alloc(IFINFOMSG_LEN);
  h.writeUInt16LE(l.loopback ? ARPHRD_LOOPBACK : ARPHRD_ETHER, 2);
  h.writeInt32LE(l.index, 4);
  h.writeUInt32LE(flagsOf(l), 8);
  w.bytes(h);
  w.str(IFLA.IFNAME, l.name);
  u32attr(w, IFLA.TXQLEN, l.txqlen);
  w.u8(IFLA.OPERSTATE, l.up ? IF_OPER_UNKNOWN : IF_OPER_DOWN);
  w.u8(IFLA.LINKMODE, 0);
  u32attr(w, IFLA.MTU, l.mtu);
  u32attr(w, IFLA.GROUP, 0);
  u32attr(w, IFLA.PROMISCUITY, 0);
  u32attr(w, IFLA.ALLMULTI, 0);
  u32attr(w, IFLA.NUM_TX_QUEUES, 1);
  u32attr(w, IFLA.NUM_RX_QUEUES, 1);
  w.u8(IFLA.CARRIER, 1);
  w.raw(IFLA.ADDRESS, l.address);
  w.raw(IFLA.BROADCAST, l.broadcast);
  // A link with a driver's link ops names its kind (rtnl_link_fill, a nest without NLA_F_NESTED); lo has none.
  if (!l.loopback) w.raw(IFLA.LINKINFO, LINKINFO_IFB);
}

/** fillLink6 writes the RTM_NEWLINK body of an AF_INET6 link dump (inet6_fill_ifinfo), IFLA_PROTINFO left out. */
export function fillLink6(w: MsgWriter, l: Link): void {
  const h = Buffer.alloc(IFINFOMSG_LEN);
  h.writeUInt8(10, 0);
  h.writeUInt16LE(l.loopback ? ARPHRD_LOOPBACK : ARPHRD_ETHER, 2);
  h.writeInt32LE(l.index, 4);
  h.writeUInt32LE(flagsOf(l), 8);
  w.bytes(h);
  w.str(IFLA.IFNAME, l.name);
  w.raw(IFLA.ADDRESS, l.address);
  u32attr(w, IFLA.MTU, l.mtu);
  w.u8(IFLA.OPERSTATE, l.up ? IF_OPER_UNKNOWN : IF_OPER_DOWN);
}

function cacheinfo(w: MsgWriter, a: Addr): void {
  const b = Buffer.alloc(16);
  b.writeUInt32LE(INFINITY_LIFE_TIME, 0);
  b.writeUInt32LE(INFINITY_LIFE_TIME, 4);
  b.writeUInt32LE(a.created >>> 0, 8);
  b.writeUInt32LE(a.created >>> 0, 12);
  w.raw(IFA.CACHEINFO, b);
}

/** fillAddr writes an RTM_NEWADDR body as inet_fill_ifaddr (IPv4) or inet6_fill_ifaddr (IPv6) does. */
export function fillAddr(w: MsgWriter, a: Addr, l: Link): void {
  const h = Buffer.alloc(8);
  h.writeUInt8(a.family === 4 ? 2 : 10, 0);
  h.writeUInt8(a.prefixLen, 1);
  h.writeUInt8(a.flags & 0xff, 2);
  h.writeUInt8(a.scope, 3);
  h.writeUInt32LE(a.link, 4);
  w.bytes(h);
  w.raw(IFA.ADDRESS, a.addr);
  if (a.family === 4) {
    w.raw(IFA.LOCAL, a.addr);
    w.str(IFA.LABEL, l.name);
    if (a.proto) w.u8(IFA.PROTO, a.proto);
    u32attr(w, IFA.FLAGS, a.flags);
    cacheinfo(w, a);
    return;
  }
  cacheinfo(w, a);
  u32attr(w, IFA.FLAGS, a.flags);
  if (a.proto) w.u8(IFA.PROTO, a.proto);
}

/** getLink handles RTM_GETLINK without NLM_F_DUMP (rtnl_getlink): the link by index, else by name. */
export function getLink(state: NetnsState, msg: NlMsg): Link | KernelError {
  if (msg.len < 16 + IFINFOMSG_LEN) return fail(ERRNO.EINVAL, 'Invalid header for get link');
  const parsed = parseRequest(msg, IFINFOMSG_LEN, 'link');
  if (!parsed.ok) return parsed.error;
  const tb = parsed.attrs.byType;
  if (tb.has(IFLA.NET_NS_PID) || tb.has(IFLA.NET_NS_FD)) return fail(ERRNO.EOPNOTSUPP, 'specified netns attribute not supported');
  // No other namespace has an id here, so any IFLA_TARGET_NETNSID names none.
  if (tb.has(IFLA.TARGET_NETNSID)) return fail(ERRNO.EINVAL);
  const index = Buffer.from(msg.bytes.buffer, msg.bytes.byteOffset, msg.len).readInt32LE(20);
  let link: Link | undefined;
  const alt = tb.get(IFLA.ALT_IFNAME);
  const name = tb.get(IFLA.IFNAME);
  if (index > 0) link = state.links.get(index);
  else if (alt) link = state.linkByName(alt.buf.toString('latin1', alt.off, alt.off + alt.len).replace(/\0.*$/s, ''));
  else if (name) link = state.linkByName(readIfname(name));
  else return fail(ERRNO.EINVAL);
  return link ?? fail(ERRNO.ENODEV);
}

/** kernelRoute6 is a route addrconf installs (protocol kernel, inserted without netlink flags). */
function kernelRoute6(
  state: NetnsState,
  table: number,
  dst: AddrBytes,
  len: number,
  type: number,
  metric: number,
  oif: number,
): void {
  const r: Route6 = {
    table,
    dst: maskAddr(dst, len),
    len,
    metric,
    type,
    protocol: RTPROT_KERNEL,
    oif,
    gw: undefined,
    prefsrc: undefined,
    reject: false,
    nhFlags: 0,
  };
  insert6(state.table6(table), r, 0, true);
}

/** magic4 is fib_magic: a kernel route for an address, added with NLM_F_CREATE | NLM_F_APPEND (EEXIST ignored). */
function magic4(state: NetnsState, type: number, key: number, len: number, prefsrc: number, oif: number): void {
  const table = type === RTN.UNICAST ? RT_TABLE_MAIN : RT_TABLE_LOCAL;
  insert4(
    state.table4(table),
    {
      table,
      key,
      len,
      tos: 0,
      priority: 0,
      type,
      scope: type === RTN.LOCAL ? RT_SCOPE_HOST : RT_SCOPE_LINK,
      protocol: RTPROT_KERNEL,
      prefsrc,
      oif,
      gw: 0,
      fibFlags: 0,
      nhFlags: 0,
    },
    NLM_F_CREATE | NLM_F_APPEND,
  );
}

/** addAddr4 is __inet_insert_ifa and fib_add_ifaddr; throws (via the caller) on a duplicate local address. */
export function addAddr4(state: NetnsState, l: Link, addr: AddrBytes, len: number, now: number): 'exists' | undefined {
  const list = state.addrsOf(4, l.index);
  const scope = addr[0] === 127 ? RT_SCOPE_HOST : RT_SCOPE_UNIVERSE;
  const a: Addr = { family: 4, link: l.index, addr, prefixLen: len, scope, flags: IFA_F_PERMANENT, proto: 0, created: now };
  let lastPrimary = 0;
  let primary: Addr | undefined;
  for (let i = 0; i < list.length; i++) {
    const b = list[i]!;
    if (!(b.flags & IFA_F_SECONDARY) && scope <= b.scope) lastPrimary = i + 1;
    if (b.prefixLen === len && u32(maskAddr(b.addr, len)) === u32(maskAddr(addr, len))) {
      if (u32(b.addr) === u32(addr)) return 'exists';
      a.flags |= IFA_F_SECONDARY;
      primary ??= b;
    }
  }
  list.splice(a.flags & IFA_F_SECONDARY ? list.length : lastPrimary, 0, a);
  const local = u32(addr);
  const prefsrc = primary ? u32(primary.addr) : local;
  magic4(state, RTN.LOCAL, local, 32, prefsrc, l.index);
  if (!l.up) return undefined;
  const prefix = u32(maskAddr(addr, len));
  if (prefix >>> 24 !== 0 && !(a.flags & IFA_F_SECONDARY) && (prefix !== local || len < 32)) {
    magic4(state, l.loopback ? RTN.LOCAL : RTN.UNICAST, prefix, len, local, l.index);
    if (len < 31) magic4(state, RTN.BROADCAST, (prefix | (0xffffffff >>> len)) >>> 0, 32, local, l.index);
  }
  return undefined;
}

/** addAddr6 is inet6_addr_add (or addrconf's own addresses): the address, its prefix route (when up), its local route. */
export function addAddr6(state: NetnsState, l: Link, addr: AddrBytes, len: number, now: number, proto = 0): 'exists' | undefined {
  const list = state.addrsOf(6, l.index);
  if (list.some((b) => Buffer.compare(b.addr, addr) === 0)) return 'exists';
  const linkLocal = addr[0] === 0xfe && ((addr[1] ?? 0) & 0xc0) === 0x80;
  const loopback = addr.every((b, i) => b === (i === 15 ? 1 : 0));
  const scope = loopback ? RT_SCOPE_HOST : linkLocal ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  const rank = (s: number) => (s === RT_SCOPE_UNIVERSE ? 14 : s === RT_SCOPE_LINK ? 2 : 1);
  const a: Addr = { family: 6, link: l.index, addr, prefixLen: len, scope, flags: IFA_F_PERMANENT, proto, created: now };
  // ipv6_link_dev_addr: sorted by source scope, global first, the newest first among equals.
  let at = list.findIndex((b) => rank(scope) >= rank(b.scope));
  if (at < 0) at = list.length;
  list.splice(at, 0, a);
  if (l.up && !loopback) kernelRoute6(state, RT_TABLE_MAIN, addr, len, RTN.UNICAST, IP6_RT_PRIO_ADDRCONF, l.index);
  kernelRoute6(state, RT_TABLE_LOCAL, addr, 128, RTN.LOCAL, 0, l.index);
  return undefined;
}

/** bringUp is what NETDEV_UP does for a new device: lo's addresses, or IPv6's multicast route and link-local address. */
export function bringUp(state: NetnsState, l: Link, now: number): void {
  if (l.loopback) {
    addAddr4(state, l, fromU32(0x7f000001), 8, now);
    const loopback = new Uint8Array(16);
    loopback[15] = 1;
    if (state.ipv6) addAddr6(state, l, loopback, 128, now, IFAPROT_KERNEL_LO);
    return;
  }
  if (!state.ipv6) return;
  const mcast = new Uint8Array(16);
  mcast[0] = 0xff;
  kernelRoute6(state, RT_TABLE_LOCAL, mcast, 8, RTN.MULTICAST, IP6_RT_PRIO_ADDRCONF, l.index);
  // EUI-64 from the MAC: flip the universal/local bit and put ff:fe in the middle.
  const m = l.address;
  const ll = new Uint8Array(16);
  ll.set([0xfe, 0x80]);
  ll.set([(m[0] ?? 0) ^ 2, m[1] ?? 0, m[2] ?? 0, 0xff, 0xfe, m[3] ?? 0, m[4] ?? 0, m[5] ?? 0], 8);
  addAddr6(state, l, ll, 64, now, IFAPROT_KERNEL_LL);
}
