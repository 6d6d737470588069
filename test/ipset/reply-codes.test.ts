// Error codes a peer puts in NLMSG_ERROR and NLMSG_DONE are range-checked: 0 or a negated errno / protocol code of
// at most 16 bits. Anything else (INT_MIN, whose negation is undefined behaviour, a positive code, a huge one) is a
// malformed reply: a typed EBADMSG, the client usable afterwards. Under the ASan/UBSan build (npm run test:asan)
// the INT_MIN cases were an abort before the engine checked them.
import { describe, expect, it } from 'vitest';

import { Ipset, PodnetSystemError } from '../../lib/index.js';
import type { NetlinkPeer } from '../../lib/netlink/peer.js';
import { FakeIpsetKernel } from '../../lib/testing/index.js';

const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;

/** A peer that rewrites the int after the header of every message of one type, once armed. */
class CodePatcher implements NetlinkPeer {
  readonly fake = new FakeIpsetKernel();
  armed: { type: number; code: number } | undefined;

  exchange(request: Uint8Array): Uint8Array[] {
    const replies = this.fake.exchange(request);
    const arm = this.armed;
    if (arm === undefined) return replies;
    this.armed = undefined;
    return replies.map((d) => {
      const out = Uint8Array.from(d);
      const view = new DataView(out.buffer);
      for (let off = 0; off + 20 <= out.length; ) {
        const len = view.getUint32(off, true);
        if (view.getUint16(off + 4, true) === arm.type) view.setInt32(off + 16, arm.code, true);
        if (len < 16) break;
        off += (len + 3) & ~3;
      }
      return out;
    });
  }
}

const badCodes: [string, number][] = [
  ['INT_MIN', -2147483648],
  ['a positive code', 1],
  ['INT_MAX', 2147483647],
  ['a code past 16 bits', -65536],
];

describe('reply error codes out of range', () => {
  for (const [name, code] of badCodes) {
    it(`refuses ${name} in an ACK as a malformed reply and stays usable`, async () => {
      const peer = new CodePatcher();
      using ipset = await Ipset.open({ netlink: peer, timeoutMs: 100 });
      await ipset.create('s', { type: 'hash:ip' });
      peer.armed = { type: NLMSG_ERROR, code };
      const err = await ipset.add('s', { ip: '10.0.0.1' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PodnetSystemError);
      expect(err).toMatchObject({ code: 'EBADMSG', errno: -74, set: 's' });
      expect((err as Error).message).toContain('error code out of range');
      peer.armed = { type: NLMSG_ERROR, code };
      expect(() => ipset.addSync('s', { ip: '10.0.0.2' })).toThrow(expect.objectContaining({ code: 'EBADMSG' }));
      await ipset.add('s', { ip: '10.0.0.3' });
      expect(await ipset.test('s', { ip: '10.0.0.3' })).toBe(true);
    });

    it(`refuses ${name} in NLMSG_DONE of a dump and stays usable`, async () => {
      const peer = new CodePatcher();
      using ipset = await Ipset.open({ netlink: peer, timeoutMs: 100 });
      await ipset.create('s', { type: 'hash:ip' });
      await ipset.add('s', { ip: '10.0.0.1' });
      peer.armed = { type: NLMSG_DONE, code };
      const err = await ipset.list('s').catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'EBADMSG', set: 's' });
      expect((await ipset.list('s')).entries.map((e) => e.ip)).toEqual(['10.0.0.1']);
    });
  }

  it('still passes the largest ipset protocol codes and plain errnos through', async () => {
    const peer = new CodePatcher();
    using ipset = await Ipset.open({ netlink: peer, timeoutMs: 100 });
    await ipset.create('s', { type: 'hash:ip' });
    peer.armed = { type: NLMSG_ERROR, code: -4100 };
    expect(await ipset.destroy('s').catch((e: unknown) => e)).toMatchObject({ code: 'IPSET_ERR_BUSY', errno: -4100 });
    peer.armed = { type: NLMSG_ERROR, code: -1 };
    expect(await ipset.destroy('s').catch((e: unknown) => e)).toMatchObject({ errno: -1 });
  });
});
