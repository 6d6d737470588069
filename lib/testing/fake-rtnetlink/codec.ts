/**
 * Codec helpers of the fake NETLINK_ROUTE kernel: the framing, attribute codec and replies are the ones every fake
 * kernel shares (lib/testing/netlink-kernel/), re-exported for the route files; this file adds what rtnetlink needs on
 * top: address bytes and prefixes.
 */
import { isIPv4, isIPv6 } from 'node:net';

import type { Attr } from '../netlink-kernel/codec.js';

export { formatAddr } from '../netlink-kernel/address.js';
export {
  type Attr,
  type AttrList,
  type NlMsg,
  MsgWriter,
  align4,
  parseAttrs,
  readBytes,
  readU32,
  readU8,
  splitMessages,
  u16attr,
  u32attr,
} from '../netlink-kernel/codec.js';
export { type ExtAck, type KernelError, type ReplyTo, ack, attrOffset, errorReply, fail } from '../netlink-kernel/replies.js';

/** readIfname copies a name attribute as nla_strscpy into an IFNAMSIZ buffer does: up to the first NUL, 15 bytes. */
export function readIfname(a: Attr): string {
  const end = a.off + Math.min(a.len, 15);
  let stop = a.off;
  while (stop < end && a.buf[stop] !== 0) stop++;
  return a.buf.toString('latin1', a.off, stop);
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
