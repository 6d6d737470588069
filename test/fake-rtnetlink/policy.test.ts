// Attribute policies: every attribute type of every policy the fake parses with, sent with payloads of many lengths
// and contents, must get the kernel's answer (errno, message, offset and policy TLV, or the request's own later
// error when the attribute passes). The requests are built to fail after parsing, so nothing changes on either side.
import { describe, expect, it } from 'vitest';

import { FakeRtnetlink } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { diff } from './helpers/kernel.js';
import { firstError } from './helpers/replies.js';
import { ACK, CREATE, EXCL, REQ, T, attr, header12, ifinfomsg, msg } from './helpers/requests.js';

/** Each policy set: a request that fails only after its attributes are parsed, and how many types to probe. */
const SETS: { name: string; request: (a: Uint8Array) => Uint8Array; types: number }[] = [
  { name: 'IPv4 routes', request: (a) => msg(T.newroute, REQ | ACK | CREATE | EXCL, Buffer.concat([header12([2, 0, 0, 0, 254, 3, 0, 99]), a])), types: 33 },
  { name: 'IPv6 routes', request: (a) => msg(T.newroute, REQ | ACK | CREATE | EXCL, Buffer.concat([header12([10, 0, 0, 4, 254, 3, 0, 1]), a])), types: 33 },
  { name: 'IPv4 rules', request: (a) => msg(T.newrule, REQ | ACK | CREATE | EXCL, Buffer.concat([header12([2, 200, 0, 0, 100, 0, 0, 1]), a])), types: 32 },
  { name: 'IPv6 rules', request: (a) => msg(T.delrule, REQ | ACK, Buffer.concat([header12([10, 200, 0, 0, 100, 0, 0, 1]), a])), types: 32 },
  { name: 'links', request: (a) => msg(T.getlink, REQ | ACK, Buffer.concat([ifinfomsg(9999), a])), types: 71 },
];

const LENGTHS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 21, 31, 32, 33, 128, 255, 256];

/** payloads are the contents probed for one attribute: letters, zeros, 0xff, NUL-terminated letters. */
function payloads(): Uint8Array[] {
  return LENGTHS.flatMap((n) => [
    Buffer.alloc(n, 0x41),
    Buffer.alloc(n, 0),
    Buffer.alloc(n, 0xff),
    ...(n > 0 ? [Buffer.concat([Buffer.alloc(n - 1, 0x41), Buffer.alloc(1)])] : []),
  ]);
}

describePrivileged(
  'FakeRtnetlink attribute policies against the live kernel',
  () => {
    it.each(SETS.map((s) => [s.name, s] as const))('%s', (_name, set) => {
      const steps = [];
      for (let type = 1; type <= set.types; type++) {
        // One sendmsg per attribute type: each message in it gets its own answer.
        steps.push({ label: `type ${type}`, bytes: Buffer.concat(payloads().map((p) => set.request(attr(type, p)))) });
      }
      const ns = new TestNetns('rp');
      try {
        expect(diff(ns, new FakeRtnetlink(), steps).slice(0, 3)).toEqual([]);
      } finally {
        ns.delete();
      }
    });
  },
  missingBinary('python3'),
);

describe('FakeRtnetlink attribute policies', () => {
  const fake = new FakeRtnetlink();
  const route4 = SETS[0]!.request;
  const rule4 = SETS[2]!.request;
  const link = SETS[4]!.request;

  it.each([
    ['a short u32 (RTA_OIF)', route4(attr(4, Uint8Array.of(1, 2))), -34, 'Attribute failed policy validation', '0c00040000000000000000000c000500ffffffff000000000800010004000000'],
    ['a long u32 is fine, the route type is not', route4(attr(4, Buffer.alloc(8))), -22, 'Invalid route type', undefined],
    ['a strict u32 (RTA_NH_ID) of 8 bytes', route4(attr(30, Buffer.alloc(8))), -22, 'invalid attribute length', '0c00040000000000000000000c000500ffffffff000000000800010004000000'],
    ['a rejected type (RTA_FLOWLABEL for IPv4)', route4(attr(31, Buffer.alloc(4))), -22, 'Unsupported attribute', undefined],
    ['a rule attribute: the message is replaced', rule4(attr(6, Uint8Array.of(1))), -34, 'Error parsing msg', '0c00040000000000000000000c000500ffffffff000000000800010004000000'],
    ['an ifname of 16 bytes', link(attr(3, Buffer.alloc(16, 0x41))), -34, 'Attribute failed policy validation', '080007000f000000080001000b000000'],
    ['a u32 under its minimum (IFLA_GSO_MAX_SIZE)', link(attr(41, Buffer.alloc(4))), -34, 'integer out of range', '0c000400c1000000000000000c000500ffffffff000000000800010004000000'],
    ['a masked u8 with reserved bits set (rule attribute 30)', rule4(attr(30, Uint8Array.of(0xff))), -22, 'Error parsing msg', undefined],
  ])('answers %s', (_name, request, error, text, policy) => {
    const e = firstError(fake.exchange(request));
    expect(e).toMatchObject({ error, msg: text });
    expect(e.policy).toBe(policy);
    // The offending attribute follows nlmsghdr and the fixed header (ifinfomsg is 16 bytes, the others 12).
    expect(e.offset).toBe(text.startsWith('Invalid') ? undefined : request[4] === T.getlink ? 32 : 28);
  });

  it('ignores attributes of type 0, past the policy, and a truncated tail', () => {
    const tail = Uint8Array.of(8, 0, 4, 0);
    const e = firstError(fake.exchange(route4(Buffer.concat([attr(0, Uint8Array.of(1)), attr(40, Uint8Array.of(1)), tail]))));
    expect(e).toMatchObject({ error: -22, msg: 'Invalid route type' });
  });
});
