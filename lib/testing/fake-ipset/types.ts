/**
 * Per-type parsing of an entry's DATA nest (the kernel's *_uadt functions): which attributes are required, the
 * order in which errors are found, how ranges and prefixes expand, and which extensions the set allows.
 */
import { type Attr, type AttrList, copyBytes, nulIndex, readBe16, readBe32, readBe64, readU8 } from '../netlink-kernel/codec.js';
import {
  AF_INET,
  DATA_ATTR as D,
  IPADDR_IPV4,
  IPADDR_IPV6,
  IPPROTO,
  IPSET_ERR,
  IPSET_FLAG_NOMATCH,
  IPSET_MAX_TIMEOUT,
  NLA_F_NESTED,
  NLA_F_NET_BYTEORDER,
  NLA_TYPE_MASK,
} from './constants.js';
import { type SetState, type TypeName, addrToU32, hostMask, ipsToCidrs, maskAddr, u32ToAddr } from './model.js';
import { ADT_POLICY_HASH_IP, ADT_POLICY_HASH_IPPORT, ADT_POLICY_HASH_NET, type Policy } from './policy.js';

/** TypeInfo is what TYPE reports and CREATE checks. */
export interface TypeInfo {
  name: TypeName;
  minRevision: number;
  maxRevision: number;
  adtPolicy: Policy;
}

/** The revisions a 6.18 kernel reports for each modelled type (captured with IPSET_CMD_TYPE). */
export const TYPES: ReadonlyMap<string, TypeInfo> = new Map<string, TypeInfo>([
  ['hash:ip', { name: 'hash:ip', minRevision: 0, maxRevision: 6, adtPolicy: ADT_POLICY_HASH_IP }],
  ['hash:net', { name: 'hash:net', minRevision: 0, maxRevision: 7, adtPolicy: ADT_POLICY_HASH_NET }],
  ['hash:ip,port', { name: 'hash:ip,port', minRevision: 0, maxRevision: 7, adtPolicy: ADT_POLICY_HASH_IPPORT }],
]);

/** Elem is one element to add, delete or test, before extensions. */
export interface Elem {
  addr: Uint8Array;
  cidr: number;
  port: number;
  proto: number;
}

/** Ext are the extension values an ADD carries; undefined means "not given". */
export interface Ext {
  /** Seconds; 0 is permanent; undefined takes the set's default. */
  timeout: number | undefined;
  bytes: bigint | undefined;
  packets: bigint | undefined;
  comment: string | undefined;
  skbmark: bigint | undefined;
  skbprio: number | undefined;
  skbqueue: number | undefined;
}

/** AdtKind is the command an entry is parsed for (TEST skips ranges). */
export type AdtKind = 'add' | 'del' | 'test';

/**
 * Parsed is a parsed DATA nest: the elements in the order the kernel visits them. A range is generated lazily: the
 * kernel sets no upper bound on it (a /4 is walked until the set is full), so neither can an array.
 */
export interface Parsed {
  elems: Iterable<Elem>;
  nomatch: boolean;
  ext: Ext;
}

/** UadtResult is a parse failure (positive errno or IPSET_ERR code) or the parsed elements, with the entry's LINENO. */
export type UadtResult =
  | { ok: false; error: number; lineno: Attr | undefined }
  | ({ ok: true; error: 0; lineno: Attr | undefined } & Parsed);

function netOrder(tb: AttrList, type: number, required: boolean): boolean {
  const a = tb.byType.get(type);
  if (!a) return !required;
  return a.netOrder;
}

/** getIpAddr reads an IP nest for family (ip_set_get_ipaddr4/6); undefined is IPSET_ERR_PROTOCOL. */
function getIpAddr(a: Attr, family: number): Uint8Array | undefined {
  if (!a.nested) return undefined;
  const want = family === AF_INET ? IPADDR_IPV4 : IPADDR_IPV6;
  const size = family === AF_INET ? 4 : 16;
  const buf = a.buf;
  const end = a.off + a.len;
  let found = -1;
  let off = a.off;
  // Scanned by hand (same rules as parseAttrs): this runs once per entry of every batch.
  while (end - off >= 4) {
    const len = (buf[off] ?? 0) | ((buf[off + 1] ?? 0) << 8);
    if (len < 4 || len > end - off) return undefined;
    const raw = (buf[off + 2] ?? 0) | ((buf[off + 3] ?? 0) << 8);
    const type = raw & NLA_TYPE_MASK;
    if ((raw & NLA_F_NESTED) !== 0) return undefined;
    if (type === IPADDR_IPV4 ? len - 4 !== 4 : type === IPADDR_IPV6 ? len - 4 > 16 : true) return undefined;
    if (type === want) found = (raw & NLA_F_NET_BYTEORDER) !== 0 && len - 4 === size ? off + 4 : -2;
    off += (len + 3) & ~3;
  }
  if (off < end || found < 0) return undefined;
  return copyBytes(buf, found, size);
}

/** getExtensions is ip_set_get_extensions: each extension the set lacks has its own error. */
function getExtensions(set: SetState, tb: AttrList): number | Ext {
  const ext: Ext = {
    timeout: undefined,
    bytes: undefined,
    packets: undefined,
    comment: undefined,
    skbmark: undefined,
    skbprio: undefined,
    skbqueue: undefined,
  };
  const t = tb.byType.get(D.TIMEOUT);
  if (t) {
    if (set.timeout === undefined) return IPSET_ERR.TIMEOUT;
    ext.timeout = Math.min(readBe32(t), IPSET_MAX_TIMEOUT);
  }
  const bytes = tb.byType.get(D.BYTES);
  const packets = tb.byType.get(D.PACKETS);
  if (bytes || packets) {
    if (!set.counters) return IPSET_ERR.COUNTER;
    if (bytes) ext.bytes = readBe64(bytes);
    if (packets) ext.packets = readBe64(packets);
  }
  const comment = tb.byType.get(D.COMMENT);
  if (comment) {
    if (!set.comment) return IPSET_ERR.COMMENT;
    const nul = nulIndex(comment);
    ext.comment = comment.buf.toString('utf8', comment.off, comment.off + (nul < 0 ? comment.len : nul));
  }
  const mark = tb.byType.get(D.SKBMARK);
  const prio = tb.byType.get(D.SKBPRIO);
  const queue = tb.byType.get(D.SKBQUEUE);
  if (mark || prio || queue) {
    if (!set.skbinfo) return IPSET_ERR.SKBINFO;
    if (mark) ext.skbmark = readBe64(mark);
    if (prio) ext.skbprio = readBe32(prio);
    if (queue) ext.skbqueue = readBe16(queue);
  }
  return ext;
}

function fail(error: number, lineno: Attr | undefined): UadtResult {
  return { ok: false, error, lineno };
}

function isZero(a: Uint8Array): boolean {
  return a.every((b) => b === 0);
}

/** uadt parses one DATA nest (already policy-checked) for set, as the set type's uadt would. */
export function uadt(set: SetState, tb: AttrList, kind: AdtKind): UadtResult {
  const v4 = set.family === AF_INET;
  const host = hostMask(set.family);
  const isIpPort = set.type === 'hash:ip,port';
  const isNet = set.type === 'hash:net';
  // The kernel takes the line number first, so even a malformed entry reports where it was.
  const lineno = tb.byType.get(D.LINENO);
  if (
    !tb.byType.has(D.IP) ||
    (isIpPort && !netOrder(tb, D.PORT, true)) ||
    (isIpPort && !netOrder(tb, D.PORT_TO, false)) ||
    (isNet && !netOrder(tb, D.CADT_FLAGS, false)) ||
    !netOrder(tb, D.TIMEOUT, false) ||
    !netOrder(tb, D.BYTES, false) ||
    !netOrder(tb, D.PACKETS, false) ||
    !netOrder(tb, D.SKBMARK, false) ||
    !netOrder(tb, D.SKBPRIO, false) ||
    !netOrder(tb, D.SKBQUEUE, false)
  ) {
    return fail(IPSET_ERR.PROTOCOL, lineno);
  }
  const cidrAttr = tb.byType.get(D.CIDR);
  const ipToAttr = tb.byType.get(D.IP_TO);
  // The inet6 variants refuse ranges (and, but for hash:net, prefixes) before they even read the address.
  if (!v4) {
    if (ipToAttr) return fail(IPSET_ERR.HASH_RANGE_UNSUPPORTED, lineno);
    if (!isNet && cidrAttr && readU8(cidrAttr) !== host) return fail(IPSET_ERR.INVALID_CIDR, lineno);
  }
  const ip = getIpAddr(tb.byType.get(D.IP)!, set.family);
  if (!ip) return fail(IPSET_ERR.PROTOCOL, lineno);
  const ext = getExtensions(set, tb);
  if (typeof ext === 'number') return fail(ext, lineno);

  if (set.type === 'hash:ip') {
    if (isZero(ip)) return fail(IPSET_ERR.HASH_ELEM, lineno);
    if (kind === 'test') return { ok: true, error: 0, lineno, elems: [{ addr: ip, cidr: host, port: 0, proto: 0 }], nomatch: false, ext };
    if (!v4 || (!ipToAttr && !cidrAttr)) return { ok: true, error: 0, lineno, elems: [{ addr: ip, cidr: host, port: 0, proto: 0 }], nomatch: false, ext };
    const range = ipv4Range(ip, ipToAttr, cidrAttr, lineno);
    if ('error' in range) return range;
    // A range that starts at 0.0.0.0 fails before any element (the kernel checks each address as it goes).
    if (range.from === 0) return fail(IPSET_ERR.HASH_ELEM, lineno);
    return { ok: true, error: 0, lineno, elems: portRange(range.from, range.to, 0, 0, 0), nomatch: false, ext };
  }

  if (isNet) {
    let cidr = host;
    if (cidrAttr) {
      cidr = readU8(cidrAttr);
      if (cidr === 0 || cidr > host) return fail(IPSET_ERR.INVALID_CIDR, lineno);
    }
    const flagsAttr = tb.byType.get(D.CADT_FLAGS);
    const nomatch = flagsAttr !== undefined && (readBe32(flagsAttr) & IPSET_FLAG_NOMATCH) !== 0;
    if (kind === 'test' || !ipToAttr) {
      return { ok: true, error: 0, lineno, elems: [{ addr: maskAddr(ip, cidr), cidr, port: 0, proto: 0 }], nomatch, ext };
    }
    const to = getIpAddr(ipToAttr, AF_INET);
    if (!to) return fail(IPSET_ERR.PROTOCOL, lineno);
    let from = addrToU32(ip);
    let last = addrToU32(to);
    if (last < from) [from, last] = [last, from];
    if (from === 0 && last === 0xffffffff) return fail(IPSET_ERR.HASH_RANGE, lineno);
    const elems = ipsToCidrs(from, last).map((c) => ({ addr: u32ToAddr(c.ip), cidr: c.cidr, port: 0, proto: 0 }));
    return { ok: true, error: 0, lineno, elems, nomatch, ext };
  }

  // hash:ip,port
  const portAttr = tb.byType.get(D.PORT)!;
  let port = readBe16(portAttr);
  const protoAttr = tb.byType.get(D.PROTO);
  if (!protoAttr) return fail(IPSET_ERR.MISSING_PROTO, lineno);
  const proto = readU8(protoAttr);
  if (proto === 0) return fail(IPSET_ERR.INVALID_PROTO, lineno);
  const withPorts = proto === IPPROTO.TCP || proto === IPPROTO.UDP || proto === IPPROTO.SCTP || proto === IPPROTO.UDPLITE;
  const icmp = v4 ? IPPROTO.ICMP : IPPROTO.ICMPV6;
  if (!withPorts && proto !== icmp) port = 0;
  const portToAttr = tb.byType.get(D.PORT_TO);
  if (kind === 'test' || !(ipToAttr || cidrAttr || portToAttr)) {
    return { ok: true, error: 0, lineno, elems: [{ addr: ip, cidr: host, port, proto }], nomatch: false, ext };
  }
  let ipFrom = 0;
  let ipTo = 0;
  if (v4) {
    const range = ipv4Range(ip, ipToAttr, cidrAttr, lineno);
    if ('error' in range) return range;
    ipFrom = range.from;
    ipTo = range.to;
  }
  let portFrom = port;
  let portTo = port;
  if (withPorts && portToAttr) {
    portTo = readBe16(portToAttr);
    if (portFrom > portTo) [portFrom, portTo] = [portTo, portFrom];
  }
  const elems = v4 ? portRange(ipFrom, ipTo, portFrom, portTo, proto) : ipv6Ports(ip, portFrom, portTo, proto);
  return { ok: true, error: 0, lineno, elems, nomatch: false, ext };
}

/** portRange walks addresses, and ports within each address, as the kernel's nested loops do. */
function* portRange(ipFrom: number, ipTo: number, portFrom: number, portTo: number, proto: number): Generator<Elem> {
  for (let x = ipFrom; x <= ipTo; x++) {
    const addr = u32ToAddr(x);
    for (let p = portFrom; p <= portTo; p++) yield { addr, cidr: 32, port: p, proto };
  }
}

function* ipv6Ports(addr: Uint8Array, portFrom: number, portTo: number, proto: number): Generator<Elem> {
  for (let p = portFrom; p <= portTo; p++) yield { addr, cidr: 128, port: p, proto };
}

/** ipv4Range turns IP with IP_TO or CIDR into an inclusive range (ip_set_mask_from_to). */
function ipv4Range(
  ip: Uint8Array,
  ipToAttr: Attr | undefined,
  cidrAttr: Attr | undefined,
  lineno: Attr | undefined,
): { from: number; to: number } | UadtResult {
  let from = addrToU32(ip);
  let to = from;
  if (ipToAttr) {
    const t = getIpAddr(ipToAttr, AF_INET);
    if (!t) return fail(IPSET_ERR.PROTOCOL, lineno);
    to = addrToU32(t);
    if (from > to) {
      if (to === 0) return fail(IPSET_ERR.HASH_ELEM, lineno);
      [from, to] = [to, from];
    }
  } else if (cidrAttr) {
    const cidr = readU8(cidrAttr);
    if (cidr === 0 || cidr > 32) return fail(IPSET_ERR.INVALID_CIDR, lineno);
    from = addrToU32(maskAddr(ip, cidr));
    to = from + 2 ** (32 - cidr) - 1;
  }
  return { from, to };
}
