// A small, test-only builder of NETLINK_ROUTE requests: podnet's real encoder lives in C++, and these tests must not
// depend on it, so they spell the bytes out (struct rtmsg, fib_rule_hdr, ifinfomsg, ifaddrmsg and the attributes).
import { isIPv4 } from 'node:net';

export const REQ = 0x1;
export const ACK = 0x4;
export const ROOT = 0x100;
export const REPLACE = 0x100;
export const EXCL = 0x200;
export const CREATE = 0x400;
export const APPEND = 0x800;
export const DUMP = 0x300;

export const T = {
  newlink: 16,
  getlink: 18,
  newaddr: 20,
  getaddr: 22,
  newroute: 24,
  delroute: 25,
  getroute: 26,
  newrule: 32,
  delrule: 33,
  getrule: 34,
} as const;

export type Bytes = Uint8Array;

export function attr(type: number, payload: Bytes): Bytes {
  const len = 4 + payload.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  out.set(payload, 4);
  return out;
}

export const u8 = (t: number, v: number): Bytes => attr(t, Uint8Array.of(v));
export const u32 = (t: number, v: number): Bytes => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return attr(t, b);
};
export const str = (t: number, s: string): Bytes => attr(t, Buffer.from(`${s}\0`));

/** ipBytes turns an address in text form into its 4 or 16 network-order bytes. */
export function ipBytes(ip: string): Bytes {
  if (isIPv4(ip)) return Uint8Array.from(ip.split('.').map(Number));
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = ip.includes('::') && tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

let seqCounter = 1000;

/** msg builds one request message; seq defaults to a fresh number. */
export function msg(type: number, flags: number, body: Bytes, seq = ++seqCounter, pid = 0): Bytes {
  const out = Buffer.alloc(16 + body.length);
  out.writeUInt32LE(out.length, 0);
  out.writeUInt16LE(type, 4);
  out.writeUInt16LE(flags, 6);
  out.writeUInt32LE(seq, 8);
  out.writeUInt32LE(pid, 12);
  out.set(body, 16);
  return out;
}

/** header12 builds struct rtmsg / fib_rule_hdr (the same 12-byte layout). */
export function header12(b: [number, number, number, number, number, number, number, number], flags = 0): Bytes {
  const out = Buffer.alloc(12);
  out.set(b, 0);
  out.writeUInt32LE(flags >>> 0, 8);
  return out;
}

export interface RouteOptions {
  family?: 4 | 6;
  dst?: string;
  dstLen?: number;
  /** A table above 255 goes in RTA_TABLE with rtm_table RT_TABLE_COMPAT, as iproute2 does. */
  table?: number;
  type?: number;
  scope?: number;
  protocol?: number;
  tos?: number;
  oif?: number;
  gateway?: string;
  priority?: number;
  prefsrc?: string;
  rtmFlags?: number;
  flags?: number;
  seq?: number;
  extra?: Bytes[];
}

/** route builds RTM_NEWROUTE (or, with type T.delroute, RTM_DELROUTE). */
export function route(o: RouteOptions, msgType: number = T.newroute): Bytes {
  const family = o.family ?? 4;
  const del = msgType === T.delroute;
  const table = o.table ?? 254;
  const dstLen = o.dstLen ?? (o.dst === undefined ? 0 : family === 4 ? 32 : 128);
  const hdr = header12(
    [family === 4 ? 2 : 10, dstLen, 0, o.tos ?? 0, table > 255 ? 252 : table, o.protocol ?? (del ? 0 : 3), o.scope ?? (del ? 255 : 0), o.type ?? (del ? 0 : 1)],
    o.rtmFlags ?? 0,
  );
  const a: Bytes[] = [];
  if (table > 255) a.push(u32(15, table));
  if (o.dst !== undefined) a.push(attr(1, ipBytes(o.dst)));
  if (o.prefsrc !== undefined) a.push(attr(7, ipBytes(o.prefsrc)));
  if (o.oif !== undefined) a.push(u32(4, o.oif));
  if (o.gateway !== undefined) a.push(attr(5, ipBytes(o.gateway)));
  if (o.priority !== undefined) a.push(u32(6, o.priority));
  a.push(...(o.extra ?? []));
  return msg(msgType, o.flags ?? (del ? REQ | ACK : REQ | ACK | CREATE | EXCL), Buffer.concat([hdr, ...a]), o.seq);
}

export interface RuleOptions {
  family?: 4 | 6;
  priority?: number;
  table?: number;
  action?: number;
  mark?: number;
  mask?: number;
  src?: string;
  srcLen?: number;
  dst?: string;
  dstLen?: number;
  iif?: string;
  oif?: string;
  protocol?: number;
  tos?: number;
  goto?: number;
  ruleFlags?: number;
  flags?: number;
  seq?: number;
  extra?: Bytes[];
}

/** rule builds RTM_NEWRULE (or RTM_DELRULE); the table goes in FRA_TABLE when it does not fit the header. */
export function rule(o: RuleOptions, msgType: number = T.newrule): Bytes {
  const family = o.family ?? 4;
  const del = msgType === T.delrule;
  const table = o.table ?? 0;
  const hdr = header12(
    [family === 4 ? 2 : 10, o.dst ? (o.dstLen ?? 0) : 0, o.src ? (o.srcLen ?? 0) : 0, o.tos ?? 0, table > 255 ? 252 : table, 0, 0, o.action ?? (del ? 0 : 1)],
    o.ruleFlags ?? 0,
  );
  const a: Bytes[] = [];
  if (table > 255) a.push(u32(15, table));
  if (o.priority !== undefined) a.push(u32(6, o.priority));
  if (o.mark !== undefined) a.push(u32(10, o.mark));
  if (o.mask !== undefined) a.push(u32(16, o.mask));
  if (o.src !== undefined) a.push(attr(2, ipBytes(o.src)));
  if (o.dst !== undefined) a.push(attr(1, ipBytes(o.dst)));
  if (o.iif !== undefined) a.push(str(3, o.iif));
  if (o.oif !== undefined) a.push(str(17, o.oif));
  if (o.protocol !== undefined) a.push(u8(21, o.protocol));
  if (o.goto !== undefined) a.push(u32(4, o.goto));
  a.push(...(o.extra ?? []));
  return msg(msgType, o.flags ?? (del ? REQ | ACK : REQ | ACK | CREATE | EXCL), Buffer.concat([hdr, ...a]), o.seq);
}

/** ifinfomsg builds the 16-byte link header. */
export function ifinfomsg(index = 0, family = 0): Bytes {
  const b = Buffer.alloc(16);
  b.writeUInt8(family, 0);
  b.writeInt32LE(index, 4);
  return b;
}

/** getLink builds RTM_GETLINK for one link, by index or by IFLA_IFNAME. */
export function getLink(which: number | string, flags = REQ | ACK, seq?: number): Bytes {
  const body = typeof which === 'number' ? ifinfomsg(which) : Buffer.concat([ifinfomsg(0), str(3, which)]);
  return msg(T.getlink, flags, body, seq);
}

/** dump builds a dump request with the family's full fixed header (what iproute2 sends). */
export function dump(type: number, family = 0, seq?: number): Bytes {
  const size = type === T.getlink ? 16 : type === T.getaddr ? 8 : 12;
  const body = Buffer.alloc(size);
  body.writeUInt8(family, 0);
  return msg(type, REQ | DUMP, body, seq);
}
