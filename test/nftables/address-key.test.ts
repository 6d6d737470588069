// The set-key parser (lib/address's, whose dotted-quad parser is the hot path of element adds) must take exactly
// what node:net's isIP calls an address, less a zone: no more and no less.
import { isIP } from 'node:net';

import { describe, expect, it } from 'vitest';

import { parseIpv4 } from '../../lib/address/index.js';
import { parseAddressKey, writeAddressKey } from '../../lib/nftables/address-key.js';

const EDGES = [
  '0.0.0.0', '255.255.255.255', '1.2.3.4', '10.0.0.1', '256.1.1.1', '1.2.3.256', '01.2.3.4', '1.2.3.04', '1.2.3',
  '1.2.3.4.5', '1..2.3', '.1.2.3', '1.2.3.', '1.2.3.4 ', ' 1.2.3.4', '1.2.3.-4', '1.2.3.4/32', '1234.1.1.1',
  '0x1.2.3.4', '१.2.3.4', '', '::', '::1', '::ffff:1.2.3.4', 'fe80::1%eth0', '1.2.3.4%eth0', '000.0.0.0', '99.099.9.9',
];

function randomCandidate(rand: () => number): string {
  const alphabet = '0123456789.:af%x ';
  const parts = Array.from({ length: rand() < 0.5 ? 4 : 1 + Math.floor(rand() * 5) }, () => {
    if (rand() < 0.8) return String(Math.floor(rand() * 280)).padStart(rand() < 0.1 ? 2 : 0, '0');
    return Array.from({ length: Math.floor(rand() * 4) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('');
  });
  return parts.join(rand() < 0.9 ? '.' : ':');
}

function randomIpv6Candidate(rand: () => number): string {
  const group = () => (rand() < 0.1 ? '' : Math.floor(rand() * 0x1ffff).toString(16).slice(0, 1 + Math.floor(rand() * 5)));
  const groups = Array.from({ length: 1 + Math.floor(rand() * 9) }, group);
  if (rand() < 0.3) groups.push(Array.from({ length: 4 }, () => Math.floor(rand() * 300)).join('.'));
  let text = groups.join(':');
  if (rand() < 0.5) {
    const at = Math.floor(rand() * (text.length + 1));
    text = `${text.slice(0, at)}::${text.slice(at)}`;
  }
  return text;
}

describe('address keys', () => {
  it('takes a dotted quad exactly when isIP says IPv4, with its four bytes', () => {
    let seed = 0x2545f491;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    const candidates = [...EDGES, ...Array.from({ length: 20000 }, () => randomCandidate(rand))];
    let accepted = 0;
    for (const c of candidates) {
      const out = new Uint8Array(4);
      const ok = parseIpv4(c, out, 0) !== undefined;
      expect(ok, JSON.stringify(c)).toBe(isIP(c) === 4);
      if (ok) {
        accepted++;
        expect([...out].join('.')).toBe(c);
      }
    }
    expect(accepted).toBeGreaterThan(1000);
  });

  it('parses what isIP takes (less a zone) and nothing else; IPv6 into 16 bytes, at any offset', () => {
    for (const c of EDGES) {
      const key = parseAddressKey(c);
      const want = c.includes('%') ? 0 : isIP(c) === 4 ? 4 : isIP(c) === 6 ? 16 : 0;
      expect(key?.length ?? 0, JSON.stringify(c)).toBe(want);
    }
    expect(isIP('fe80::1%eth0')).toBe(6);
    let seed = 0x1b873593;
    const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    let accepted = 0;
    for (let i = 0; i < 20000; i++) {
      const c = randomIpv6Candidate(rand);
      const key = parseAddressKey(c);
      expect(key?.length ?? 0, JSON.stringify(c)).toBe(isIP(c) === 6 ? 16 : 0);
      if (key) accepted++;
    }
    expect(accepted).toBeGreaterThan(1000);
    const out = new Uint8Array(20).fill(0xee);
    expect(writeAddressKey(out, 3, '::ffff:1.2.3.4')).toBe(16);
    expect([...out.subarray(3, 19)]).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]);
    expect([out[2], out[19]]).toEqual([0xee, 0xee]);
  });
});
