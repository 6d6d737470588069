/**
 * nftExpr: the common matches and statements as expression lists, built the way nft builds them (its
 * `--debug=netlink` shows the same lists), so podnet's own rules need no rule text. Each helper returns an array;
 * a rule's `exprs` takes them as they are (`[nftExpr.l4proto('tcp'), nftExpr.counter(), nftExpr.accept()]`).
 * Matches on ip/ip6 fields carry nft's `meta nfproto` dependency and port matches its `meta l4proto` one, so they
 * mean the same in inet, ip and ip6 tables. Values the kernel keeps in host byte order (marks, uids, ct state and
 * zone) are written in this host's order, network fields in network order.
 */
import { endianness } from 'node:os';

import { checkArray, checkInteger, checkString, invalidType, invalidValue } from '../validate.js';
import type { NftCmpOp, NftExpr } from './expr-types.js';
import { addressKey } from './address-key.js';

const LITTLE = endianness() === 'LE';
const IFNAME_BYTES = 16;
const L4 = { tcp: 6, udp: 17, icmp: 1, icmpv6: 58, sctp: 132 } as const;
const NFPROTO = { ipv4: 2, ipv6: 10 } as const;
const CT_STATES = { invalid: 1, established: 2, related: 4, new: 8, untracked: 64 } as const;
/** Offsets of the address fields in the IPv4 and IPv6 headers, and of the ports in TCP and UDP. */
const ADDR_FIELDS = {
  'ip saddr': { nfproto: NFPROTO.ipv4, offset: 12, len: 4 },
  'ip daddr': { nfproto: NFPROTO.ipv4, offset: 16, len: 4 },
  'ip6 saddr': { nfproto: NFPROTO.ipv6, offset: 8, len: 16 },
  'ip6 daddr': { nfproto: NFPROTO.ipv6, offset: 24, len: 16 },
} as const;
const PORT_FIELDS = {
  'tcp sport': { l4: L4.tcp, offset: 0 },
  'tcp dport': { l4: L4.tcp, offset: 2 },
  'udp sport': { l4: L4.udp, offset: 0 },
  'udp dport': { l4: L4.udp, offset: 2 },
} as const;
/** NF_NAT_RANGE_PROTO_SPECIFIED, as nft sets it for `redirect to :PORT`. */
const NAT_PROTO_SPECIFIED = 2;

/** NftAddrField is an address field nftExpr.addr matches: 'ip saddr', 'ip daddr', 'ip6 saddr' or 'ip6 daddr'. */
export type NftAddrField = keyof typeof ADDR_FIELDS;
/** NftPortField is a port field nftExpr.port matches: 'tcp sport', 'tcp dport', 'udp sport' or 'udp dport'. */
export type NftPortField = keyof typeof PORT_FIELDS;
/** NftCtState is a conntrack state: 'invalid', 'established', 'related', 'new' or 'untracked'. */
export type NftCtState = keyof typeof CT_STATES;

/** NftMatchOptions are the options of a match: `not: true` negates it (nft's `!=`). */
export interface NftMatchOptions {
  /** Negate the match. */
  not?: boolean;
}

function op(options: NftMatchOptions | undefined): NftCmpOp {
  if (options === undefined) return 'eq';
  if (typeof options !== 'object' || options === null) throw invalidType('options', 'an object', options);
  if (options.not !== undefined && typeof options.not !== 'boolean') throw invalidType('options.not', 'a boolean', options.not);
  return options.not ? 'neq' : 'eq';
}

function u32(name: string, value: unknown): number {
  return checkInteger(name, value, 0, 0xffffffff);
}

function host32(v: number): Buffer {
  const b = Buffer.alloc(4);
  if (LITTLE) b.writeUInt32LE(v >>> 0);
  else b.writeUInt32BE(v >>> 0);
  return b;
}

function host16(v: number): Buffer {
  const b = Buffer.alloc(2);
  if (LITTLE) b.writeUInt16LE(v);
  else b.writeUInt16BE(v);
  return b;
}

function be16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
}

function field<T extends object>(name: string, value: unknown, table: T): T[keyof T] {
  if (typeof value !== 'string' || !Object.hasOwn(table, value)) {
    throw invalidValue(name, `one of ${Object.keys(table).map((k) => `'${k}'`).join(', ')}`, value);
  }
  return table[value as keyof T];
}

function meta(key: 'l4proto' | 'nfproto' | 'mark' | 'skuid' | 'iifname' | 'oifname'): NftExpr {
  return { type: 'meta', key, dreg: 1 };
}

function nfprotoDep(nfproto: number): NftExpr[] {
  return [meta('nfproto'), { type: 'cmp', sreg: 1, op: 'eq', data: Buffer.from([nfproto]) }];
}

function l4Dep(l4: number): NftExpr[] {
  return [meta('l4proto'), { type: 'cmp', sreg: 1, op: 'eq', data: Buffer.from([l4]) }];
}

function ifname(name: string, value: unknown): Buffer {
  const s = checkString(name, value, IFNAME_BYTES - 1);
  const b = Buffer.alloc(IFNAME_BYTES);
  b.write(s, 'utf8');
  return b;
}

/** `REG & mask OP value` on register 1, without the bitwise when the mask is all ones (or not given). */
function masked(mask: number | undefined, value: number, cmp: NftCmpOp): NftExpr[] {
  const out: NftExpr[] = [];
  if (mask !== undefined && mask !== 0xffffffff) out.push({ type: 'bitwise', sreg: 1, dreg: 1, op: 'bool', len: 4, mask: host32(mask), xor: host32(0) });
  out.push({ type: 'cmp', sreg: 1, op: cmp, data: host32(value) });
  return out;
}

function addrMatch(what: unknown, value: unknown, options?: NftMatchOptions): NftExpr[] {
  const f = field('field', what, ADDR_FIELDS);
  if (typeof value !== 'string') throw invalidType('address', 'an address or address/prefix', value);
  const [addr, prefixText, extra] = value.split('/');
  if (extra !== undefined) throw invalidValue('address', 'an address or address/prefix', value);
  const key = addressKey('address', addr, f.len);
  const bits = f.len * 8;
  const prefix = prefixText === undefined ? bits : /^\d+$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!Number.isInteger(prefix) || prefix < 1 || prefix > bits) throw invalidValue('address', `a prefix of 1 to ${bits} bits`, value);
  const out: NftExpr[] = [...nfprotoDep(f.nfproto), { type: 'payload', base: 'network', offset: f.offset, len: f.len, dreg: 1 }];
  if (prefix < bits) {
    const mask = Buffer.alloc(f.len);
    for (let i = 0; i < prefix; i++) mask[i >> 3]! |= 0x80 >> (i & 7);
    for (let i = 0; i < f.len; i++) key[i]! &= mask[i]!;
    out.push({ type: 'bitwise', sreg: 1, dreg: 1, len: f.len, mask, xor: Buffer.alloc(f.len) });
  }
  out.push({ type: 'cmp', sreg: 1, op: op(options), data: key });
  return out;
}

/**
 * nftExpr builds the expression lists of common matches and statements (see the module comment). Each throws
 * InvalidArgumentError on a bad argument.
 */
export const nftExpr = {
  /** `meta l4proto PROTO` (tcp, udp, icmp, icmpv6, sctp or a protocol number). */
  l4proto(proto: keyof typeof L4 | number, options?: NftMatchOptions): NftExpr[] {
    const n = typeof proto === 'number' ? checkInteger('proto', proto, 0, 255) : field('proto', proto, L4);
    return [meta('l4proto'), { type: 'cmp', sreg: 1, op: op(options), data: Buffer.from([n]) }];
  },

  /** `meta nfproto ipv4|ipv6`. */
  nfproto(family: keyof typeof NFPROTO, options?: NftMatchOptions): NftExpr[] {
    return [meta('nfproto'), { type: 'cmp', sreg: 1, op: op(options), data: Buffer.from([field('family', family, NFPROTO)]) }];
  },

  /** `ip saddr ADDR[/PREFIX]` and the like for 'ip saddr', 'ip daddr', 'ip6 saddr', 'ip6 daddr'. */
  addr(what: NftAddrField, address: string, options?: NftMatchOptions): NftExpr[] {
    return addrMatch(what, address, options);
  },

  /** `ip saddr @SET` (with `not`: `!= @SET`): the address is in the named set. */
  addrInSet(what: NftAddrField, set: string, options?: NftMatchOptions): NftExpr[] {
    const f = field('field', what, ADDR_FIELDS);
    const invert = op(options) === 'neq';
    const lookup: NftExpr = invert ? { type: 'lookup', sreg: 1, set, invert } : { type: 'lookup', sreg: 1, set };
    return [...nfprotoDep(f.nfproto), { type: 'payload', base: 'network', offset: f.offset, len: f.len, dreg: 1 }, lookup];
  },

  /** `tcp dport PORT` and the like for 'tcp sport', 'tcp dport', 'udp sport', 'udp dport'. */
  port(what: NftPortField, port: number, options?: NftMatchOptions): NftExpr[] {
    const f = field('field', what, PORT_FIELDS);
    const p = checkInteger('port', port, 0, 0xffff);
    return [...l4Dep(f.l4), { type: 'payload', base: 'transport', offset: f.offset, len: 2, dreg: 1 }, { type: 'cmp', sreg: 1, op: op(options), data: be16(p) }];
  },

  /** `iifname NAME`. */
  iifname(name: string, options?: NftMatchOptions): NftExpr[] {
    return [meta('iifname'), { type: 'cmp', sreg: 1, op: op(options), data: ifname('name', name) }];
  },

  /** `oifname NAME`. */
  oifname(name: string, options?: NftMatchOptions): NftExpr[] {
    return [meta('oifname'), { type: 'cmp', sreg: 1, op: op(options), data: ifname('name', name) }];
  },

  /** `meta mark & MASK == VALUE` (no mask: `meta mark VALUE`). */
  mark(value: number, mask?: number, options?: NftMatchOptions): NftExpr[] {
    return [meta('mark'), ...masked(mask === undefined ? undefined : u32('mask', mask), u32('value', value), op(options))];
  },

  /** `ct mark & MASK == VALUE` (no mask: `ct mark VALUE`). */
  ctMark(value: number, mask?: number, options?: NftMatchOptions): NftExpr[] {
    return [{ type: 'ct', key: 'mark', dreg: 1 }, ...masked(mask === undefined ? undefined : u32('mask', mask), u32('value', value), op(options))];
  },

  /** `meta skuid UID`: the socket's owner. */
  skuid(uid: number, options?: NftMatchOptions): NftExpr[] {
    return [meta('skuid'), { type: 'cmp', sreg: 1, op: op(options), data: host32(u32('uid', uid)) }];
  },

  /** `ct state S1,S2`: any of the states (with `not`: none of them). */
  ctState(states: NftCtState[], options?: NftMatchOptions): NftExpr[] {
    if (!Array.isArray(states) || states.length === 0) throw invalidType('states', 'a non-empty array of ct states', states);
    let bits = 0;
    for (const b of checkArray('states', states, 'a non-empty array of ct states', (s, name) => field(name, s, CT_STATES))) bits |= b;
    return [
      { type: 'ct', key: 'state', dreg: 1 },
      { type: 'bitwise', sreg: 1, dreg: 1, op: 'bool', len: 4, mask: host32(bits), xor: host32(0) },
      { type: 'cmp', sreg: 1, op: op(options) === 'eq' ? 'neq' : 'eq', data: host32(0) },
    ];
  },

  /** `counter`. */
  counter(): NftExpr[] {
    return [{ type: 'counter' }];
  },

  /** `accept`. */
  accept(): NftExpr[] {
    return [{ type: 'verdict', verdict: 'accept' }];
  },

  /** `drop`. */
  drop(): NftExpr[] {
    return [{ type: 'verdict', verdict: 'drop' }];
  },

  /** `return`: back to the chain that jumped here. */
  return(): NftExpr[] {
    return [{ type: 'verdict', verdict: 'return' }];
  },

  /** `jump CHAIN`: on to chain, and back after it. */
  jump(chain: string): NftExpr[] {
    return [{ type: 'verdict', verdict: 'jump', chain }];
  },

  /** `goto CHAIN`: on to chain, not back. */
  goto(chain: string): NftExpr[] {
    return [{ type: 'verdict', verdict: 'goto', chain }];
  },

  /** `redirect to :PORT`. */
  redirect(port: number): NftExpr[] {
    return [{ type: 'immediate', dreg: 1, data: be16(checkInteger('port', port, 1, 0xffff)) }, { type: 'redirect', protoMin: 1, flags: NAT_PROTO_SPECIFIED }];
  },

  /** `snat ip to ADDR` (an IPv6 address: `snat ip6 to ADDR`). */
  snat(address: string): NftExpr[] {
    const key = addressKey('address', address);
    return [{ type: 'immediate', dreg: 1, data: key }, { type: 'nat', nat: 'snat', family: key.length === 4 ? 'ip' : 'ip6', addrMin: 1 }];
  },

  /** `masquerade`. */
  masquerade(): NftExpr[] {
    return [{ type: 'masquerade' }];
  },

  /** `meta mark set VALUE`. */
  setMark(value: number): NftExpr[] {
    return [{ type: 'immediate', dreg: 1, data: host32(u32('value', value)) }, { type: 'meta', key: 'mark', sreg: 1 }];
  },

  /** `meta mark set ct mark`. */
  setMarkFromCtMark(): NftExpr[] {
    return [{ type: 'ct', key: 'mark', dreg: 1 }, { type: 'meta', key: 'mark', sreg: 1 }];
  },

  /** `ct mark set ct mark & MASK | VALUE`: keeps the masked bits and sets VALUE's. */
  setCtMark(mask: number, value: number): NftExpr[] {
    return [
      { type: 'ct', key: 'mark', dreg: 1 },
      // (x & mask) | value as the kernel's (x & mask') ^ value: mask' leaves value's bits to the xor.
      { type: 'bitwise', sreg: 1, dreg: 1, op: 'bool', len: 4, mask: host32((u32('mask', mask) & ~u32('value', value)) >>> 0), xor: host32(value) },
      { type: 'ct', key: 'mark', sreg: 1 },
    ];
  },

  /** `ct zone set ZONE`. */
  setCtZone(zone: number): NftExpr[] {
    return [{ type: 'immediate', dreg: 1, data: host16(checkInteger('zone', zone, 0, 0xffff)) }, { type: 'ct', key: 'zone', sreg: 1 }];
  },
};
