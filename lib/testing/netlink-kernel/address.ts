/**
 * Address text of the fake kernels' snapshots: the same bytes render the same way in every fake.
 */

/** formatAddr renders 4 or 16 address bytes as text, IPv6 compressed as RFC 5952 says. */
export function formatAddr(a: Uint8Array): string {
  if (a.length === 4) return a.join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((a[i] ?? 0) << 8) | (a[i + 1] ?? 0));
  // RFC 5952: the longest run (>= 2) of zero groups becomes "::", the first one on a tie.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}
