// rtnetlink's listings write addresses with the addon's inet_ntop, nftables' with formatIpNtop: both must give the
// same text for every class of address, so a key listed by one layer matches an address listed by the other.
import { describe, expect, it } from 'vitest';

import { formatIpNtop, parseIp } from '../../lib/address/index.js';
import { Rtnetlink } from '../../lib/index.js';
import { FakeRtnetlink } from '../../lib/testing/index.js';

const cases: [name: string, address: string, text: string][] = [
  ['IPv4', '192.0.2.7', '192.0.2.7'],
  ['IPv4 with zero octets', '10.0.0.1', '10.0.0.1'],
  ['IPv6 without zero groups', '2001:db8:1:2:3:4:5:6', '2001:db8:1:2:3:4:5:6'],
  ['IPv6 zero-compressed', '2001:db8:0:0:0:0:0:1', '2001:db8::1'],
  ['IPv6, the first of two equal zero runs compressed', '2001:0:0:1:0:0:1:1', '2001::1:0:0:1:1'],
  ['IPv6, one zero group not compressed', '2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
  ['IPv6 all zeros but the last', '::2', '::2'],
  ['IPv4-mapped', '::ffff:10.1.2.3', '::ffff:10.1.2.3'],
  ['IPv4-compatible', '::10.1.2.3', '::10.1.2.3'],
  ['IPv4-compatible, a zero third octet pair', '::0.1.2.3', '::0.1.2.3'],
  ['SIIT', '::ffff:0:a01:203', '::ffff:0:a01:203'],
  ['NAT64', '64:ff9b::a01:203', '64:ff9b::a01:203'],
];

/** hexGroups writes an address as eight uncompressed hex groups (the form every parser takes), IPv4 as it is. */
function hexGroups(family: 4 | 6, bytes: Uint8Array): string {
  if (family === 4) return Array.from(bytes.subarray(0, 4)).join('.');
  return Array.from({ length: 8 }, (_, i) => ((bytes[i * 2]! << 8) | bytes[i * 2 + 1]!).toString(16)).join(':');
}

describe('formatIpNtop and the addon\'s inet_ntop (rtnetlink listings)', () => {
  it.each(cases)('%s: %s is written %s by both', async (_name, address, text) => {
    const parsed = parseIp(address)!;
    expect(formatIpNtop(parsed.family, parsed.bytes)).toBe(text);
    const fake = new FakeRtnetlink();
    fake.addLink({ name: 'eth0' });
    fake.addAddress('eth0', `${hexGroups(parsed.family, parsed.bytes)}/${parsed.family === 4 ? 32 : 128}`);
    const rt = await Rtnetlink.open({ netlink: fake });
    try {
      const listed = await rt.addresses({ link: 'eth0', family: parsed.family });
      expect(listed.map((a) => a.address)).toContain(text);
    } finally {
      rt.close();
    }
  });
});
