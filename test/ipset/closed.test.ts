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

describe('a client closed from inside its own sync add', () => {
  it('finishes the add on the session it started with (no use after free), then refuses the next', async () => {
    const fake = new FakeNetlink();
    let closeDuringNext = false;
    let ipset: Ipset | undefined;
    // A peer runs on the JS thread inside the operation; closing there empties the handle under the running add.
    const peer = {
      exchange(request: Uint8Array): Uint8Array[] {
        if (closeDuringNext) {
          closeDuringNext = false;
          ipset!.close();
        }
        return fake.exchange(request);
      },
    };
    ipset = await Ipset.open({ netlink: peer });
    await ipset.create('c', { type: 'hash:ip' });
    const longName = 'n'.repeat(31); // the longest name passes the native name check
    await ipset.create(longName, { type: 'hash:ip' });
    ipset.addSync(longName, { ip: '10.0.0.9' });
    closeDuringNext = true;
    ipset.addSync('c', { ip: '10.0.0.1' });
    expect(() => ipset!.addSync('c', { ip: '10.0.0.2' })).toThrow(expect.objectContaining({ code: 'ERR_IPSET_CLOSED' }));
    const sets = fake.dump().sets;
    expect(sets.find((set) => set.name === 'c')?.entries.map((e) => e.ip)).toEqual(['10.0.0.1']);
    expect(sets.find((set) => set.name === longName)?.entries.map((e) => e.ip)).toEqual(['10.0.0.9']);
  });
});

describe('native ipsetAdtSync', () => {
  // No record is needed: every call here must fail before its records are read.
  const none = new Uint8Array(0);

  it("fails on a closed handle's reference with ERR_IPSET_CLOSED, before any request", () => {
    const requests: Uint8Array[] = [];
    const fake = new FakeNetlink();
    const handle = new native.IpsetHandle(-1, 1000, (req) => (requests.push(req), fake.exchange(req)));
    const ref = handle.syncRef();
    handle.close();
    expect(() => native.ipsetAdtSync(ref, native.ipsetCommands.add, 'c', none, 0)).toThrow(
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
      expect(() => native.ipsetAdtSync(ref, native.ipsetCommands.add, 'n'.repeat(32), none, 0)).toThrow(
        expect.objectContaining({ code: 'EINVAL', syscall: 'encode' }),
      );
      // Whole characters only are copied: a name that crosses the limit inside a multi-byte character must still
      // read as too long, not as its first 31 bytes.
      for (const long of ['a'.repeat(31) + 'é', 'a'.repeat(30) + '😀', 'é'.repeat(16)]) {
        expect(() => native.ipsetAdtSync(ref, native.ipsetCommands.add, long, none, 0)).toThrow(
          expect.objectContaining({ code: 'EINVAL', syscall: 'encode' }),
        );
      }
      expect(() => native.ipsetAdtSync(ref, native.ipsetCommands.add, 'c', none, 1)).toThrow(
        expect.objectContaining({ code: 'EINVAL' }),
      );
      expect(requests).toEqual([]);
    } finally {
      handle.close();
    }
  });
});
