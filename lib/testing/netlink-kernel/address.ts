/**
 * Address text of the fake kernels' snapshots: the same bytes render the same way in every fake. IPv6 is RFC 5952's
 * hex form for every address class (an IPv4-mapped address stays hex: a snapshot shows bytes, not their class).
 */
import { ipv6Hex } from '../../address/format.js';

/** formatAddr renders 4 or 16 address bytes as text, IPv6 compressed as RFC 5952 says. */
export function formatAddr(a: Uint8Array): string {
  if (a.length === 4) return a.join('.');
  return ipv6Hex(a);
}
