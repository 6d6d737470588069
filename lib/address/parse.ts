/**
 * Strict IP address parsing, shared by every layer that takes an address as text (ipset entries, rtnetlink specs,
 * the agent's rules, the CNI server). Only canonical textual forms are accepted: no shortened IPv4 ("10.1"), no
 * leading zeros ("010.0.0.1", which some parsers read as octal), no zone ids ("fe80::1%eth0": the kernel objects
 * these feed store addresses, not scopes).
 */

/** A parsed address: family 4 or 6 and its bytes (IPv4 in the first 4 of 16). */
export interface ParsedIp {
  family: 4 | 6;
  bytes: Uint8Array;
}

const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/**
 * parseIpv4 writes the 4 bytes of a dotted quad into out at offset and returns out, or undefined when text is not a
 * canonical dotted quad. Char-code scanning: this runs once per entry of 100k-entry batches.
 */
export function parseIpv4(text: string, out: Uint8Array = new Uint8Array(16), offset = 0): Uint8Array | undefined {
  const len = text.length;
  if (len < 7 || len > 15) return undefined;
  let part = 0;
  let value = 0;
  let digits = 0;
  for (let i = 0; i < len; i++) {
    const c = text.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || part === 3) return undefined;
      out[offset + part++] = value;
      value = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && value === 0) return undefined; // leading zero
      value = value * 10 + (c - 48);
      if (value > 255) return undefined;
      digits++;
    } else {
      return undefined;
    }
  }
  if (digits === 0 || part !== 3) return undefined;
  out[offset + 3] = value;
  return out;
}

/** parseIpv6 returns the 16 bytes of an IPv6 address (with "::" and a trailing dotted quad allowed), or undefined. */
export function parseIpv6(text: string): Uint8Array | undefined {
  if (text.length < 2 || text.length > 45 || text.includes('%')) return undefined;
  const out = new Uint8Array(16);
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parseSide = (side: string, allowV4: boolean): number[] | undefined => {
    if (side === '') return [];
    const groups = side.split(':');
    const words: number[] = [];
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i]!;
      if (allowV4 && i === groups.length - 1 && g.includes('.')) {
        const v4 = parseIpv4(g);
        if (!v4) return undefined;
        words.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!HEX_GROUP.test(g)) return undefined;
        words.push(parseInt(g, 16));
      }
    }
    return words;
  };
  let words: number[];
  if (halves.length === 2) {
    const head = parseSide(halves[0]!, false);
    const tail = parseSide(halves[1]!, true);
    if (!head || !tail || head.length + tail.length > 7) return undefined;
    words = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    const all = parseSide(text, true);
    if (!all || all.length !== 8) return undefined;
    words = all;
  }
  for (let i = 0; i < 8; i++) {
    out[i * 2] = words[i]! >> 8;
    out[i * 2 + 1] = words[i]! & 0xff;
  }
  return out;
}

/** parseIp parses either family, or returns undefined. */
export function parseIp(text: string): ParsedIp | undefined {
  if (text.includes(':')) {
    const bytes = parseIpv6(text);
    return bytes ? { family: 6, bytes } : undefined;
  }
  const bytes = parseIpv4(text);
  return bytes ? { family: 4, bytes } : undefined;
}
