/**
 * Address keys: an IPv4 or IPv6 address as the bytes of an nft set key (network order). The dotted-quad parser is
 * the per-element hot path of a 10k-element add, so it validates as it goes instead of asking isIP first.
 */
import { isIP } from 'node:net';

import { invalidType, invalidValue } from '../validate.js';

/**
 * writeDottedQuad writes a dotted quad's four bytes at offset and returns 4, or 0 (nothing written) when text is not
 * one exactly as isIP takes it: four decimal octets of at most 255, no leading zeros, nothing else.
 */
export function writeDottedQuad(out: Uint8Array, offset: number, text: string): number {
  const n = text.length;
  if (n < 7 || n > 15) return 0;
  let part = 0;
  let value = 0;
  let digits = 0;
  let first = 0;
  for (let i = 0; i <= n; i++) {
    const c = i === n ? 46 : text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || part > 3 || (digits > 1 && first === 48)) return 0;
      out[offset + part++] = value;
      value = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits === 0) first = c;
      value = value * 10 + (c - 48);
      if (++digits > 3 || value > 255) return 0;
    } else {
      return 0;
    }
  }
  return part === 4 ? 4 : 0;
}

function ipv6Bytes(text: string): Buffer {
  let s = text;
  // A dotted IPv4 tail becomes two groups.
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const b = dotted[2]!.split('.').map(Number);
    s = `${dotted[1]}${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/**
 * writeAddressKey writes an address's key at offset (room for 16 bytes needed) and returns its length, 4 or 16, or
 * 0 when text is not an address isIP takes, or has a zone.
 */
export function writeAddressKey(out: Uint8Array, offset: number, text: string): number {
  if (writeDottedQuad(out, offset, text) === 4) return 4;
  // Not a plain dotted quad: isIP decides, so what is taken is exactly what node:net calls an address, less a zone
  // (fe80::1%eth0): a set key has no interface, and dropping it would store another address than the one meant.
  if (isIP(text) !== 6 || text.includes('%')) return 0;
  out.set(ipv6Bytes(text), offset);
  return 16;
}

/** The key bytes of an IPv4 or IPv6 address in network order, or undefined when value is not one. */
export function parseAddressKey(value: string): Buffer | undefined {
  const out = Buffer.allocUnsafe(16);
  const n = writeAddressKey(out, 0, value);
  return n === 0 ? undefined : out.subarray(0, n);
}

/** An address's key bytes in network order; the family must match the set's when known. */
export function addressKey(name: string, value: unknown, keyLength?: number): Buffer {
  if (typeof value !== 'string') throw invalidType(name, 'an IPv4 or IPv6 address', value);
  const key = parseAddressKey(value);
  if (key === undefined) throw invalidValue(name, 'an IPv4 or IPv6 address', value);
  if (keyLength !== undefined && key.length !== keyLength) {
    throw invalidValue(name, `an IPv${keyLength === 4 ? 4 : 6} address (the set's type)`, value);
  }
  return key;
}
