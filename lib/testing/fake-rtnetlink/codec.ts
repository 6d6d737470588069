/**
 * Codec helpers of the fake NETLINK_ROUTE kernel: the generic framing and attribute parser are the ipset fake's
 * (one netlink codec in podnet), and this file adds what rtnetlink needs on top: host-order integer attributes,
 * address bytes and prefixes, and the ACK and error messages an EXT_ACK socket receives.
 */
import { isIPv4, isIPv6 } from 'node:net';

import { type Attr, type NlMsg, MsgWriter, align4 } from '../fake-netlink/codec.js';
import { formatAddr } from '../fake-netlink/snapshot.js';
import {
  NLA_F_NESTED,
  NLM_F_ACK_TLVS,
  NLM_F_CAPPED,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLMSGERR_ATTR_MSG,
  NLMSGERR_ATTR_OFFS,
  NLMSGERR_ATTR_POLICY,
} from './constants.js';

export { type Attr, type AttrList, type NlMsg, MsgWriter, align4, parseAttrs, splitMessages } from '../fake-netlink/codec.js';
export { formatAddr };

/** ReplyTo is where answers to a request go: its seq, and the port id the kernel would put in nlmsg_pid. */
export interface ReplyTo {
  seq: number;
  pid: number;
}

/**
 * ExtAck is what the kernel's netlink_ext_ack carries into an error reply: a message, the offset of the offending
 * attribute from the start of the request, and that attribute's policy (NLMSGERR_ATTR_POLICY payload).
 */
export interface ExtAck {
  msg?: string;
  offset?: number;
  policy?: Uint8Array;
}

/** KernelError is a failed request: a positive errno and what the extended ACK says about it. */
export interface KernelError extends ExtAck {
  errno: number;
}

/** fail builds a KernelError; most of the kernel's checks have a message, some only an errno. */
export function fail(errno: number, msg?: string): KernelError {
  return msg === undefined ? { errno } : { errno, msg };
}

/** u32attr writes a host-order u32 attribute (nla_put_u32). */
export function u32attr(w: MsgWriter, type: number, v: number): void {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  w.raw(type, b);
}

/** u16attr writes a host-order u16 attribute (nla_put_u16). */
export function u16attr(w: MsgWriter, type: number, v: number): void {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(v);
  w.raw(type, b);
}

/** readU32 reads a host-order u32 payload; the policy has checked that at least 4 bytes are there. */
export function readU32(a: Attr): number {
  return a.len >= 4 ? a.buf.readUInt32LE(a.off) : 0;
}

/** readU8 reads the first payload byte. */
export function readU8(a: Attr): number {
  return a.len >= 1 ? (a.buf[a.off] ?? 0) : 0;
}

/** readBytes copies up to n payload bytes, zero-filled to n (as nla_memcpy into a zeroed field). */
export function readBytes(a: Attr, n: number): Uint8Array {
  const out = new Uint8Array(n);
  out.set(a.buf.subarray(a.off, a.off + Math.min(n, a.len)));
  return out;
}

/** readIfname copies a name attribute as nla_strscpy into an IFNAMSIZ buffer does: up to the first NUL, 15 bytes. */
export function readIfname(a: Attr): string {
  const end = a.off + Math.min(a.len, 15);
  let stop = a.off;
  while (stop < end && a.buf[stop] !== 0) stop++;
  return a.buf.toString('latin1', a.off, stop);
}

/**
 * attrOffset is where attribute a starts within its message (NLMSGERR_ATTR_OFFS); a must come from parseAttrs over
 * the message's own bytes, whose offsets count from the nlmsghdr.
 */
export function attrOffset(a: Attr): number {
  return a.off - 4;
}

/** ack is the success reply of an EXT_ACK socket: error 0 and only the request's nlmsghdr, NLM_F_CAPPED. */
export function ack(msg: NlMsg, to: ReplyTo): Uint8Array {
  const w = new MsgWriter(64);
  const at = w.beginMessage(NLMSG_ERROR, NLM_F_CAPPED, to.seq, to.pid);
  w.u32le(0);
  w.bytes(msg.bytes.subarray(0, NLMSG_HDRLEN));
  w.endMessage(at);
  return w.take();
}

/**
 * errorReply is NLMSG_ERROR with -errno, the whole request echoed (padded to 4 bytes, its own nlmsg_len kept), and
 * the extended ACK TLVs after it; NLM_F_ACK_TLVS is set exactly when there are TLVs.
 */
export function errorReply(msg: NlMsg, to: ReplyTo, e: KernelError): Uint8Array {
  const tlvs = e.msg !== undefined || e.offset !== undefined || e.policy !== undefined;
  const w = new MsgWriter(msg.len + 128);
  const at = w.beginMessage(NLMSG_ERROR, tlvs ? NLM_F_ACK_TLVS : 0, to.seq, to.pid);
  w.u32le(-Math.abs(e.errno));
  w.bytes(msg.bytes);
  w.bytes(new Uint8Array(align4(msg.len) - msg.len));
  if (e.msg !== undefined) w.str(NLMSGERR_ATTR_MSG, e.msg);
  if (e.offset !== undefined) u32attr(w, NLMSGERR_ATTR_OFFS, e.offset);
  if (e.policy !== undefined) w.raw(NLMSGERR_ATTR_POLICY | NLA_F_NESTED, e.policy);
  w.endMessage(at);
  return w.take();
}

/** Family of an address: 4 or 16 bytes. */
export type AddrBytes = Uint8Array;

/** parseAddr turns text into 4 or 16 network-order bytes; undefined when it is not an IP address. */
export function parseAddr(text: string): AddrBytes | undefined {
  if (isIPv4(text)) return Uint8Array.from(text.split('.').map(Number));
  if (!isIPv6(text) || text.includes('.')) return undefined;
  const [head = '', tail = ''] = text.split('::');
  const h = head ? head.split(':') : [];
  const t = text.includes('::') && tail ? tail.split(':') : [];
  const groups = text.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}

/** maskAddr keeps the first len bits of a (ipv6_addr_prefix, or key & mask). */
export function maskAddr(a: AddrBytes, len: number): AddrBytes {
  const out = new Uint8Array(a.length);
  for (let i = 0; i < a.length; i++) {
    const bits = Math.max(0, Math.min(8, len - i * 8));
    out[i] = (a[i] ?? 0) & ((0xff << (8 - bits)) & 0xff);
  }
  return out;
}

/** sameAddr compares two addresses byte by byte. */
export function sameAddr(a: AddrBytes | undefined, b: AddrBytes | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** isZero is true for the unspecified address (and for an empty one). */
export function isZero(a: AddrBytes): boolean {
  return a.every((b) => b === 0);
}

/** bitAt is bit i of a, counting from the most significant bit of the first byte (addr_bit_set). */
export function bitAt(a: AddrBytes, i: number): number {
  return ((a[i >> 3] ?? 0) >> (7 - (i & 7))) & 1;
}

/** inPrefix is true when addr lies inside prefix/len. */
export function inPrefix(addr: AddrBytes, prefix: AddrBytes, len: number): boolean {
  return sameAddr(maskAddr(addr, len), maskAddr(prefix, len));
}

/** firstDiff is the index of the first bit where a and b differ, or the address length in bits (__ipv6_addr_diff). */
export function firstDiff(a: AddrBytes, b: AddrBytes): number {
  for (let i = 0; i < a.length * 8; i++) if (bitAt(a, i) !== bitAt(b, i)) return i;
  return a.length * 8;
}

/** u32 reads an IPv4 address as the kernel's host-order key. */
export function u32(a: AddrBytes): number {
  return (((a[0] ?? 0) << 24) | ((a[1] ?? 0) << 16) | ((a[2] ?? 0) << 8) | (a[3] ?? 0)) >>> 0;
}

/** fromU32 is the inverse of u32. */
export function fromU32(v: number): AddrBytes {
  return Uint8Array.of((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff);
}
