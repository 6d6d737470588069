// Every netlink client refuses an open option it does not know: a misspelt `netlink` or `netns` would otherwise open
// the client on the kernel of the current namespace, the machine's own.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Ipset, Nftables, Rtnetlink } from '../lib/index.js';
import { FakeNftables } from '../lib/testing/index.js';
import { rejection } from './helpers/rejection.js';

describe('netlink open options', () => {
  it('refuses an unknown key by name on every client, before opening anything', async () => {
    const fake = new FakeNftables();
    for (const open of [(o: object) => Nftables.open(o as never), (o: object) => Rtnetlink.open(o as never), (o: object) => Ipset.open(o as never)]) {
      for (const [options, argument] of [
        [{ peer: fake }, 'options.peer'],
        [{ ns: '/run/netns/x' }, 'options.ns'],
        [{ netlink: fake, timeoutMS: 5 }, 'options.timeoutMS'],
      ] as const) {
        const err = await rejection(open(options));
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument });
      }
    }
    expect(fake.dump().tables).toEqual([]);
    // Ipset's own option is still an option.
    const err = await rejection(Ipset.open({ receiveBufferBytes: 0 }));
    expect(err).toMatchObject({ argument: 'options.receiveBufferBytes' });
  });
});
