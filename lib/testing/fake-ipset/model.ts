/**
 * The state the fake kernel keeps: sets and their entries. Entries live in a Map keyed by their identity, so a
 * dump lists them in insertion order (the kernel's hash order cannot be reproduced; compare dumps as sets).
 */
import { copyBytes } from '../netlink-kernel/codec.js';
import { AF_INET } from './constants.js';

/** FakeSetType (TypeName inside the fake) is a set type the fake models. */
export type TypeName = 'hash:ip' | 'hash:net' | 'hash:ip,port';

/** Entry is one member of a set, in the kernel's terms. */
export interface Entry {
  /** 4 or 16 bytes, network order; already masked to cidr for hash:net. */
  addr: Uint8Array;
  /** Prefix length (hash:net); the host mask for the other types. */
  cidr: number;
  port: number;
  proto: number;
  nomatch: boolean;
  /** Expiry time in ms of the injected clock; undefined is permanent. */
  expires: number | undefined;
  bytes: bigint;
  packets: bigint;
  comment: string | undefined;
  /** The comment's UTF-8 bytes, encoded at the first dump that needs them (dumps repeat, adds do not). */
  commentBytes: Uint8Array | undefined;
  /** skbinfo values, only in sets created with WITH_SKBINFO (kept apart: most entries never have them). */
  skb: SkbInfo | undefined;
}

/** SkbInfo are the skbmark/skbprio/skbqueue extension values of one entry. */
export interface SkbInfo {
  mark: bigint | undefined;
  prio: number | undefined;
  queue: number | undefined;
}

/** SetState is one set; `index` is the kernel's slot number, which also orders a dump of all sets. */
export interface SetState {
  name: string;
  index: number;
  type: TypeName;
  revision: number;
  family: number;
  hashsize: number;
  maxelem: number;
  bucketsize: number;
  initval: number;
  /** Default timeout in seconds when created with one (0 means entries are permanent unless given one). */
  timeout: number | undefined;
  counters: boolean;
  comment: boolean;
  forceadd: boolean;
  skbinfo: boolean;
  entries: Map<string | number, Entry>;
  /** How many prefixes of each length hash:net holds, most specific first when tested. */
  cidrs: Map<number, number>;
  /** References from outside (iptables -m set), set through FakeIpsetKernel.setReferenced. */
  references: number;
}

/** hostMask is the prefix length of one address of family. */
export function hostMask(family: number): number {
  return family === AF_INET ? 32 : 128;
}

/** maskAddr keeps the first cidr bits of addr (a copy). */
export function maskAddr(addr: Uint8Array, cidr: number): Uint8Array {
  const out = copyBytes(addr, 0, addr.length);
  for (let i = 0; i < out.length; i++) {
    const bits = Math.max(0, Math.min(8, cidr - i * 8));
    out[i] = (out[i] ?? 0) & ((0xff00 >> bits) & 0xff);
  }
  return out;
}

/** addrKey renders an address as a Map key. */
export function addrKey(addr: Uint8Array): string {
  if (addr.length === 4) return String((((addr[0] ?? 0) << 24) | ((addr[1] ?? 0) << 16) | ((addr[2] ?? 0) << 8) | (addr[3] ?? 0)) >>> 0);
  return Buffer.from(addr).toString('hex');
}

/** u32ToAddr turns a host-order IPv4 number into 4 network-order bytes. */
export function u32ToAddr(v: number): Uint8Array {
  return copyBytes(Uint8Array.of((v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff), 0, 4);
}

/** addrToU32 reads 4 network-order bytes as a host-order number. */
export function addrToU32(a: Uint8Array): number {
  return (((a[0] ?? 0) << 24) | ((a[1] ?? 0) << 16) | ((a[2] ?? 0) << 8) | (a[3] ?? 0)) >>> 0;
}

/** entryKey is the identity the kernel compares (mtype_data_equal): address, prefix, port and protocol. */
export function entryKey(type: TypeName, addr: Uint8Array, cidr: number, port: number, proto: number): string | number {
  // Numbers for inet hash:ip: the common big set, and cheaper to hash than strings.
  if (type === 'hash:ip' && addr.length === 4) return addrToU32(addr);
  const a = addrKey(addr);
  if (type === 'hash:net') return `${a}/${cidr}`;
  if (type === 'hash:ip,port') return `${a},${proto}:${port}`;
  return a;
}

/** isExpired tells whether e has timed out at now (ms). */
export function isExpired(e: Entry, now: number): boolean {
  return e.expires !== undefined && e.expires <= now;
}

/** remainingSeconds is what the kernel reports as an entry's TIMEOUT: whole seconds left, at least 1 while alive. */
export function remainingSeconds(e: Entry, now: number): number {
  if (e.expires === undefined) return 0;
  const s = Math.floor((e.expires - now) / 1000);
  return s <= 0 ? 1 : s;
}

/** ipsToCidrs splits [from, to] into the fewest prefixes, lowest first, as ip_set_range_to_cidr does. */
export function ipsToCidrs(from: number, to: number): { ip: number; cidr: number }[] {
  const out: { ip: number; cidr: number }[] = [];
  let ip = from;
  for (;;) {
    let cidr = 32;
    // Widen while ip stays aligned and the block stays inside the range.
    while (cidr > 1) {
      const size = 2 ** (33 - cidr);
      if (ip % size !== 0 || ip + size - 1 > to) break;
      cidr--;
    }
    out.push({ ip, cidr });
    const next = ip + 2 ** (32 - cidr);
    if (next > to || next > 0xffffffff) break;
    ip = next;
  }
  return out;
}
