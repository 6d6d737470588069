/**
 * Addresses as text, in the two forms podnet writes. formatIp is RFC 5952's canonical form (lowercase, the first
 * longest run of two or more zero groups compressed, IPv4-mapped addresses dotted): ipset listings, the agent and
 * the CNI server write it. formatIpNtop is what glibc's inet_ntop writes, and so what nft and iproute2 print: the
 * same, except that an IPv4-compatible address (`::10.1.2.3`) is dotted too. nftables listings write keys with
 * formatIpNtop; rtnetlink's listings are formatted in the addon by inet_ntop itself (the address crosses the N-API
 * boundary as text with the rest of the object, and no other rule applies there), and
 * test/address/ntop-rtnetlink.test.ts holds the two to the same text for v4, v6, v4-mapped, v4-compatible and
 * zero-compressed addresses.
 */
import { isIpv4Compatible, isIpv4Mapped } from './family.js';

/** formatIp renders bytes in canonical form (RFC 5952 for IPv6: lowercase, longest zero run compressed). */
export function formatIp(family: 4 | 6, bytes: Uint8Array, offset = 0): string {
  if (family === 4) return `${bytes[offset]}.${bytes[offset + 1]}.${bytes[offset + 2]}.${bytes[offset + 3]}`;
  // RFC 5952 section 5: IPv4-mapped addresses keep the dotted quad.
  if (isIpv4Mapped(bytes, offset)) {
    return `::ffff:${bytes[offset + 12]}.${bytes[offset + 13]}.${bytes[offset + 14]}.${bytes[offset + 15]}`;
  }
  return ipv6Hex(bytes, offset);
}

/**
 * ipv6Hex writes 16 bytes as RFC 5952's hex groups, lowercase, the first longest run of two or more zero groups
 * compressed to `::`, with no dotted form for any address class (formatIp adds those).
 */
export function ipv6Hex(bytes: Uint8Array, offset = 0): string {
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push((bytes[offset + i * 2]! << 8) | bytes[offset + i * 2 + 1]!);
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(':');
  if (bestStart < 0) return hex(words);
  return `${hex(words.slice(0, bestStart))}::${hex(words.slice(bestStart + bestLen))}`;
}

/**
 * formatIpNtop writes an address as glibc's inet_ntop does (and so nft and iproute2): formatIp's form, and also the
 * IPv4-compatible form dotted (`::10.1.2.3`). inet_ntop's test for seven zero groups (`::0.0.0.2`) can never hold,
 * so `::2` stays hex, as do SIIT (`::ffff:0:a01:203`) and NAT64 (`64:ff9b::a01:203`) addresses.
 */
export function formatIpNtop(family: 4 | 6, bytes: Uint8Array, offset = 0): string {
  if (family === 6 && isIpv4Compatible(bytes, offset)) {
    return `::${bytes[offset + 12]}.${bytes[offset + 13]}.${bytes[offset + 14]}.${bytes[offset + 15]}`;
  }
  return formatIp(family, bytes, offset);
}
