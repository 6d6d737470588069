/**
 * The IPv6 address classes that decide how an address is written and whether it stands for an IPv4 one: IPv4-mapped
 * (`::ffff:a.b.c.d`, RFC 4291 2.5.5.2) and IPv4-compatible (`::a.b.c.d`, the deprecated RFC 4291 2.5.5.1 form that
 * glibc's inet_ntop still writes dotted).
 */
import { parseIp } from './parse.js';

/** isIpv4Mapped tells whether 16 IPv6 bytes (from offset) are ::ffff:a.b.c.d. */
export function isIpv4Mapped(bytes: Uint8Array, offset = 0): boolean {
  for (let i = 0; i < 10; i++) if (bytes[offset + i] !== 0) return false;
  return bytes[offset + 10] === 0xff && bytes[offset + 11] === 0xff;
}

/**
 * isIpv4Compatible tells whether 16 IPv6 bytes (from offset) are ::a.b.c.d as inet_ntop sees it: six zero groups
 * then a non-zero seventh (`::2`, with a zero seventh group, is not).
 */
export function isIpv4Compatible(bytes: Uint8Array, offset = 0): boolean {
  for (let i = 0; i < 12; i++) if (bytes[offset + i] !== 0) return false;
  return bytes[offset + 12] !== 0 || bytes[offset + 13] !== 0;
}

/** unmapIpv4 turns "::ffff:a.b.c.d" into "a.b.c.d" and returns any other address unchanged. */
export function unmapIpv4(text: string): string {
  const parsed = parseIp(text);
  if (!parsed || parsed.family === 4 || !isIpv4Mapped(parsed.bytes)) return text;
  const b = parsed.bytes;
  return `${b[12]}.${b[13]}.${b[14]}.${b[15]}`;
}
