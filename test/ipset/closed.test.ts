import { describe, expect, it } from 'vitest';

import { Ipset, PodnetError } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { FakeNetlink } from '../../lib/testing/index.js';

// A closed client, and the native *Sync fast path that reaches a handle's session without unwrapping the handle:
// close() must reach it too, and what it cannot encode it refuses before sending anything.
describe('a closed ipset client', () => {
  it('refuses every operation with ERR_IPSET_CLOSED and sends nothing', async () => {
    const fake = new FakeNetlink();
    const ipset = await Ipset.open({ netlink: fake });
    await ipset.create('c', { type: 'hash:ip' });
    ipset.addSync('c', { ip: '10.0.0.1' });
    ipset.close();
    expect(() => ipset.addSync('c', { ip: '10.0.0.2' })).toThrow(expect.objectContaining({ code: 'ERR_IPSET_CLOSED' }));
    expect(() => ipset.delSync('c', { ip: '10.0.0.1' })).toThrow(PodnetError);
    await expect(ipset.add('c', { ip: '10.0.0.3' })).rejects.toMatchObject({ code: 'ERR_IPSET_CLOSED' });
    expect(fake.dump().sets.find((set) => set.name === 'c')?.entries.map((e) => e.ip)).toEqual(['10.0.0.1']);
  });
});

describe('native ipsetAdtSync', () => {
  // No record is needed: every call here must fail before its records are read.
  const record = (bytes: number[]): Uint8Array => Uint8Array.from(bytes);

  it("fails on a closed handle's reference with ERR_IPSET_CLOSED, before any request", () => {
    const requests: Uint8Array[] = [];
    const fake = new FakeNetlink();
    const handle = new native.IpsetHandle(-1, 1000, (req) => (requests.push(req), fake.exchange(req)));
    const ref = handle.syncRef();
    handle.close();
    expect(() => native.ipsetAdtSync(ref, native.ipsetCommands.add, 'c', record([]), 0)).toThrow(
      expect.objectContaining({ code: 'ERR_IPSET_CLOSED', syscall: 'ipset' }),
    );
    expect(requests).toEqual([]);
  });

  it('refuses a set name over 31 bytes rather than truncating it, before any request', () => {
    const requests: Uint8Array[] = [];
    const fake = new FakeNetlink();
    const handle = new native.IpsetHandle(-1, 1000, (req) => (requests.push(req), fake.exchange(req)));
    try {
      const ref = handle.syncRef();
      expect(() => native.ipsetAdtSync(ref, native.ipsetCommands.add, 'n'.repeat(32), record([]), 0)).toThrow(
        expect.objectContaining({ code: 'EINVAL', syscall: 'encode' }),
      );
      expect(() => native.ipsetAdtSync(ref, native.ipsetCommands.add, 'c', record([]), 1)).toThrow(
        expect.objectContaining({ code: 'EINVAL' }),
      );
      expect(requests).toEqual([]);
    } finally {
      handle.close();
    }
  });
});
