// The deprecated FakeNetlink alias: the same class as FakeIpsetKernel, so code that imports the old name keeps working
// for the release that carries it.
import { describe, expect, it } from 'vitest';

import { Ipset } from '../../lib/index.js';
import { FakeIpsetKernel, FakeNetlink, type FakeNetlinkOptions } from '../../lib/testing/index.js';

describe('FakeNetlink (deprecated alias of FakeIpsetKernel)', () => {
  it('is the same class, so instances of either pass instanceof for both', () => {
    expect(FakeNetlink).toBe(FakeIpsetKernel);
    const options: FakeNetlinkOptions = { now: () => 0 };
    const fake = new FakeNetlink(options);
    expect(fake).toBeInstanceOf(FakeIpsetKernel);
  });

  it('serves an Ipset client like FakeIpsetKernel does', async () => {
    const fake = new FakeNetlink({ now: () => 0 });
    using ipset = await Ipset.open({ netlink: fake });
    await ipset.create('alias', { type: 'hash:ip', family: 'inet' });
    await ipset.add('alias', { ip: '10.0.0.1' });
    expect(await ipset.test('alias', { ip: '10.0.0.1' })).toBe(true);
    expect(fake.dump().sets.map((s) => s.name)).toEqual(['alias']);
  });
});
