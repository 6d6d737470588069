// A netlink client's socket in another namespace is opened on the hop thread (XHandle.open), queued behind the hops
// before it, without blocking the JS thread. The handle it resolves to holds a close-on-exec socket of that
// namespace, every thread is back in its own namespace afterwards, and a namespace that cannot be entered rejects
// with the setns error and leaves nothing open.
import { openSync, closeSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { Nftables, Rtnetlink } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { FakeRtnetlink } from '../../lib/testing/index.js';
import { openFds, socketFds } from '../helpers/fds.js';
import { withNetns } from '../helpers/netns.js';
import { expectEveryThreadIn, expectOpenedSockets, expectSpeakFor, withClientPair } from '../helpers/netns-clients.js';
import { describePrivileged } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';


describePrivileged('netlink clients opened on the hop thread', () => {
  it('opens the socket inside the namespace, close-on-exec, and leaves every thread at home', async () => {
    const home = readlinkSync('/proc/self/ns/net');
    await withNetns(async (ns) => {
      const open = async (): Promise<[Rtnetlink, Nftables]> => [
        await Rtnetlink.open({ netns: ns.path }),
        await Nftables.open({ netns: ns.path }),
      ];
      await withClientPair(open, async (rt, nft, before) => {
        expectOpenedSockets(before, 2);
        await expectSpeakFor(ns, rt, nft, 'w');
        expectEveryThreadIn(home);
      });
    });
  });

  it('keeps hops in their own namespaces when many are queued at once, beside hops that are waited for', async () => {
    const home = readlinkSync('/proc/self/ns/net');
    await withNetns(async (...all) => {
      for (const [i, ns] of all.entries()) ns.ip('link', 'add', `podnet-q${i}`, 'type', 'veth', 'peer', 'name', `podnet-p${i}`);
      const before = socketFds();
      const opens = Array.from({ length: 40 }, (_, k) => Rtnetlink.open({ netns: all[k % all.length]!.path }));
      // Waited-for hops (a libuv worker blocked on the hop thread) queue beside them.
      const handles = all.map((ns) => ns.open());
      const inside = handles.map((h) => native.netnsInodeInside(h.fd).then((ino) => [ino, h.inode]));
      const clients = await Promise.all(opens);
      try {
        for (const [k, rt] of clients.entries()) {
          const i = k % all.length;
          expect((await rt.links()).map((l) => l.name).sort()).toEqual(['lo', `podnet-p${i}`, `podnet-q${i}`]);
        }
        for (const [ino, expected] of await Promise.all(inside)) expect(ino).toBe(expected);
        expectEveryThreadIn(home);
      } finally {
        for (const rt of clients) rt.close();
        for (const h of handles) h.close();
      }
      // The clients release their sockets once their queues settle.
      await new Promise((resolve) => setImmediate(resolve));
      expect(socketFds().sort()).toEqual(before.sort());
    }, 4);
  });

  it('rejects with the setns error for an fd that is no namespace, and leaves nothing open', async () => {
    const fd = openSync('/dev/null', 'r');
    try {
      const before = [...openFds().keys()].sort();
      for (const Handle of [native.NftablesHandle, native.RtnetlinkHandle]) {
        const err = await rejection(Handle.open(fd, 1000));
        expect(err).toMatchObject({ code: 'EINVAL', syscall: 'setns' });
      }
      expect([...openFds().keys()].sort()).toEqual(before);
    } finally {
      closeSync(fd);
    }
  });
});

describe('netlink clients opened on a peer', () => {
  it('need no worker: a peer is driven from the JS thread', async () => {
    const fake = new FakeRtnetlink();
    using rt = await Rtnetlink.open({ netlink: fake });
    expect((await rt.links()).map((l) => l.name)).toContain('lo');
  });
});
