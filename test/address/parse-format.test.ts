import { describe, expect, it } from 'vitest';

import { formatIp, parseIp, unmapIpv4 } from '../../lib/address/index.js';

describe('IP address parsing', () => {
  it.each([
    ['10.0.0.1', 4, '10.0.0.1'],
    ['0.0.0.0', 4, '0.0.0.0'],
    ['255.255.255.255', 4, '255.255.255.255'],
    ['::', 6, '::'],
    ['::1', 6, '::1'],
    ['fe80::1', 6, 'fe80::1'],
    ['2001:DB8:0:0:0:0:0:1', 6, '2001:db8::1'],
    ['2001:db8:0:1:0:0:0:1', 6, '2001:db8:0:1::1'],
    ['1:2:3:4:5:6:7:8', 6, '1:2:3:4:5:6:7:8'],
    ['::ffff:10.0.0.1', 6, '::ffff:10.0.0.1'],
    ['::ffff:a00:1', 6, '::ffff:10.0.0.1'],
    ['64:ff9b::192.0.2.1', 6, '64:ff9b::c000:201'],
    ['fd16:9254:7127:1337:ffff:ffff:ffff:ffff', 6, 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff'],
  ])('accepts %s', (text, family, canonical) => {
    const parsed = parseIp(text);
    expect(parsed?.family).toBe(family);
    expect(formatIp(parsed!.family, parsed!.bytes)).toBe(canonical);
  });

  it.each([
    '', '10.1', '10.0.0', '1.2.3.4.5', '010.0.0.1', '10.0.0.01', '256.0.0.1', '10.0.0.-1', ' 10.0.0.1', '10.0.0.1 ',
    '1e1.0.0.1', '0x10.0.0.1', 'fe80::1%eth0', ':::', '1::2::3', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7', '12345::1',
    'g::1', '::ffff:10.0.0', '::1.2.3.4:1', '10.0.0.1/24', 'localhost',
  ])('refuses %j', (text) => {
    expect(parseIp(text)).toBeUndefined();
  });

  it('unmaps IPv4-mapped IPv6 and leaves everything else alone', () => {
    expect(unmapIpv4('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(unmapIpv4('::FFFF:a01:203')).toBe('10.1.2.3');
    expect(unmapIpv4('10.1.2.3')).toBe('10.1.2.3');
    expect(unmapIpv4('fd00::1')).toBe('fd00::1');
    expect(unmapIpv4('::10.1.2.3')).toBe('::10.1.2.3');
  });
});
