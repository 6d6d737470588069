/**
 * Address keys: an IPv4 or IPv6 address as the bytes of an nft set key (network order), parsed by lib/address. Its
 * dotted-quad parser is the per-element hot path of a 10k-element add: it validates as it goes and writes the key in
 * place.
 */
import { parseIpv4, parseIpv6 } from '../address/index.js';
import { invalidType, invalidValue } from '../validate.js';

/**
 * writeAddressKey writes an address's key at offset (room for 16 bytes needed) and returns its length, 4 or 16, or
 * 0 when text is not an address node:net's isIP takes, or has a zone (fe80::1%eth0: a set key has no interface, and
 * dropping it would store another address than the one meant).
 */
export function writeAddressKey(out: Uint8Array, offset: number, text: string): number {
  if (parseIpv4(text, out, offset)) return 4;
  const v6 = text.includes(':') ? parseIpv6(text) : undefined;
  if (!v6) return 0;
  out.set(v6, offset);
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
