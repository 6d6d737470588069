import { endianness } from 'node:os';

import { describe, expect, it } from 'vitest';

import { Ipset, PodnetError } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { FakeIpsetKernel } from '../../lib/testing/index.js';

// A closed client, and the native *Sync fast path (a function bound to a frame, reaching the handle's session
// without unwrapping the handle): close() must reach it too, re-entry must not mix up two calls' requests or
// results, and what it cannot encode it refuses before sending anything.
describe('a closed ipset client', () => {
  it('refuses every operation with ERR_IPSET_CLOSED and sends nothing', async () => {
    const fake = new FakeIpsetKernel();
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
    const fake = new FakeIpsetKernel();
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

describe('a sync add re-entered from inside its own exchange', () => {
  // A peer runs on the JS thread inside the operation. A sync call made there writes the frame the outer call was
  // made from (another set, another entry, another command) and must then be refused, not wait forever on the
  // session its own thread holds; the outer call must still send what it was called with and report its own result.
  it('refuses the nested call with ERR_IPSET_REENTERED; the outer call is untouched by it', async () => {
    const fake = new FakeIpsetKernel();
    let nested: (() => void) | undefined;
    const nestedErrors: unknown[] = [];
    const peer = {
      exchange(request: Uint8Array): Uint8Array[] {
        const run = nested;
        nested = undefined;
        if (run) {
          try {
            run();
          } catch (err) {
            nestedErrors.push(err);
          }
        }
        return fake.exchange(request);
      },
    };
    const ipset = await Ipset.open({ netlink: peer });
    await ipset.create('outer', { type: 'hash:ip', comment: true });
    await ipset.create('inner-set', { type: 'hash:ip' });
    ipset.addSync('inner-set', { ip: '10.9.9.9' });
    nested = () => ipset.delSync('inner-set', { ip: '10.9.9.9' });
    ipset.addSync('outer', { ip: '10.0.0.1', comment: 'mine' });
    nested = () => ipset.addSync('inner-set', { ip: '10.8.8.8' });
    expect(() => ipset.addSync('outer', { ip: '10.0.0.1', comment: 'again' })).toThrow(
      expect.objectContaining({ code: 'IPSET_ERR_EXIST', set: 'outer' }),
    );
    expect(nestedErrors).toEqual([
      expect.objectContaining({ code: 'ERR_IPSET_REENTERED', errno: -35, syscall: 'ipset' }),
      expect.objectContaining({ code: 'ERR_IPSET_REENTERED' }),
    ]);
    const sets = fake.dump().sets;
    expect(sets.find((set) => set.name === 'outer')?.entries).toEqual([{ ip: '10.0.0.1', comment: 'mine' }]);
    expect(sets.find((set) => set.name === 'inner-set')?.entries).toEqual([{ ip: '10.9.9.9' }]);
    // The session is free again once the outer call is done.
    ipset.delSync('inner-set', { ip: '10.9.9.9' });
    expect(fake.dump().sets.find((set) => set.name === 'inner-set')?.entries).toEqual([]);
    ipset.close();
  });
});

describe('native sync channel', () => {
  const frameLayout = native.ipsetSyncFrame;
  const hostLE = endianness() === 'LE';

  /** Sets the record length in a frame (records are in host byte order). */
  function setRecordLength(f: Buffer, length: number): void {
    new DataView(f.buffer, f.byteOffset, f.length).setUint16(frameLayout.record, length, hostLE);
  }

  /**
   * A frame for an ADD to set name whose record claims a header's length and is otherwise empty: each test breaks
   * one thing, and every call here must be refused before that record is read.
   */
  function frame(name: string): Buffer {
    const f = Buffer.alloc(frameLayout.bytes);
    f[frameLayout.command] = native.ipsetCommands.add;
    f[frameLayout.nameLength] = f.write(name, frameLayout.name);
    setRecordLength(f, 48);
    return f;
  }

  function channelOnFake() {
    const requests: Uint8Array[] = [];
    const fake = new FakeIpsetKernel();
    const handle = new native.IpsetHandle(-1, 1000, (req) => (requests.push(req), fake.exchange(req)));
    return { handle, requests };
  }

  const refused = (message: RegExp) => expect.objectContaining({ code: 'EINVAL', syscall: 'encode', message: expect.stringMatching(message) });

  it("fails on a closed handle's channel with ERR_IPSET_CLOSED, before any request", () => {
    const { handle, requests } = channelOnFake();
    const send = handle.syncChannel(frame('c'));
    handle.close();
    expect(() => send()).toThrow(expect.objectContaining({ code: 'ERR_IPSET_CLOSED', syscall: 'ipset' }));
    expect(requests).toEqual([]);
  });

  it('refuses a malformed frame before any request: name length, record length, command, frame size', () => {
    const { handle, requests } = channelOnFake();
    try {
      for (const length of [0, 32, 255]) {
        const f = frame('c');
        f[frameLayout.nameLength] = length;
        expect(() => handle.syncChannel(f)()).toThrow(refused(/set name/));
      }
      // No record (length 0, or shorter than a record's header): refused, not an add of nothing that succeeds.
      for (const length of [0, 8, 47]) {
        const f = frame('c');
        setRecordLength(f, length);
        expect(() => handle.syncChannel(f)()).toThrow(refused(/no record/));
      }
      const longRecord = frame('c');
      setRecordLength(longRecord, frameLayout.bytes - frameLayout.record + 8);
      expect(() => handle.syncChannel(longRecord)()).toThrow(refused(/past the end/));
      const flush = frame('c');
      flush[frameLayout.command] = native.ipsetCommands.flush;
      expect(() => handle.syncChannel(flush)()).toThrow(refused(/not ADD or DEL/));
      expect(() => handle.syncChannel(Buffer.alloc(frameLayout.bytes - 1))).toThrow(refused(/smaller than/));
      expect(requests).toEqual([]);
    } finally {
      handle.close();
    }
  });
});
