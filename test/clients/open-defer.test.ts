// With `defer`, a netlink client in another namespace opens its socket with its first operation, on the hop thread in
// the same hop as that operation's exchange: open() opens no socket, the first operation's socket is of the
// namespace and close-on-exec, operations queued before it is open share one socket and enter the namespace the
// client was made for (its own duplicate of the fd), a namespace that cannot be entered fails the operations (each
// tries again) instead of open(), and closing releases what was opened.
import { closeSync, openSync, readlinkSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Nftables, Rtnetlink } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { FakeNftables, FakeRtnetlink } from '../../lib/testing/index.js';
import { openFds, socketFds } from '../helpers/fds.js';
import { withNetns } from '../helpers/netns.js';
import { expectEveryThreadIn, expectOpenedSockets, expectSpeakFor, withClientPair } from '../helpers/netns-clients.js';
import { describePrivileged } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';

describePrivileged('netlink clients whose socket waits for their first operation', () => {
  it('open no socket until the first operation, which opens it inside the namespace, close-on-exec', async () => {
    const home = readlinkSync('/proc/self/ns/net');
    await withNetns(async (ns) => {
      const open = async (): Promise<[Rtnetlink, Nftables]> => [
        await Rtnetlink.open({ netns: ns.path, defer: true }),
        await Nftables.open({ netns: ns.path, defer: true }),
      ];
      await withClientPair(open, async (rt, nft, before) => {
        expect(socketFds().sort()).toEqual(before.sort());
        await expectSpeakFor(ns, rt, nft, 'd');
        const opened = expectOpenedSockets(before, 2);
        // Later operations use the same socket.
        expect((await nft.tables()).map((t) => t.name)).toEqual(['podnet-d']);
        expect(socketFds().filter((fd) => !before.includes(fd))).toEqual(opened);
        expectEveryThreadIn(home);
      });
    });
  });

  it('open one socket for operations queued on the handle before it is open', async () => {
    await withNetns(async (ns) => {
      ns.ip('link', 'add', 'podnet-d2', 'type', 'veth', 'peer', 'name', 'podnet-d3');
      const h = ns.open();
      const before = socketFds();
      const raw = new native.RtnetlinkHandle(h.fd, 1000, undefined, undefined, true);
      try {
        const all = await Promise.all(Array.from({ length: 8 }, () => raw.links()));
        for (const links of all) expect(links.map((l) => l.name).sort()).toEqual(['lo', 'podnet-d2', 'podnet-d3']);
        expect(socketFds().filter((fd) => !before.includes(fd))).toHaveLength(1);
      } finally {
        raw.close();
        h.close();
      }
      expect(socketFds().sort()).toEqual(before.sort());
    });
  });

  it('enter the namespace they were made for, whatever became of the fd they were given', async () => {
    await withNetns(async (mine, other) => {
      mine.ip('link', 'add', 'podnet-e0', 'type', 'veth', 'peer', 'name', 'podnet-e1');
      const given = mine.open();
      const raw = new native.RtnetlinkHandle(given.fd, 1000, undefined, undefined, true);
      const fd = given.fd;
      given.close();
      // open() takes the lowest free number: the one just closed, now on another namespace.
      const reused = openSync(other.path, 'r');
      try {
        expect(reused).toBe(fd);
        expect((await raw.links()).map((l) => l.name).sort()).toEqual(['lo', 'podnet-e0', 'podnet-e1']);
      } finally {
        raw.close();
        closeSync(reused);
      }
    }, 2);
  });

  it('fail each operation with the setns error for an fd that is no namespace, and leave nothing open', async () => {
    const fd = openSync('/dev/null', 'r');
    try {
      const before = [...openFds().keys()].sort();
      const nft = new native.NftablesHandle(fd, 1000, undefined, undefined, true);
      const rt = new native.RtnetlinkHandle(fd, 1000, undefined, undefined, true);
      for (let attempt = 0; attempt < 2; attempt++) {
        expect(await rejection(nft.tables(1))).toMatchObject({ code: 'EINVAL', syscall: 'setns' });
        expect(await rejection(rt.links())).toMatchObject({ code: 'EINVAL', syscall: 'setns' });
      }
      nft.close();
      rt.close();
      expect([...openFds().keys()].sort()).toEqual(before);
    } finally {
      closeSync(fd);
    }
  });

  it('give the first operation the error of a namespace that has gone since open', async () => {
    let rt: Rtnetlink | undefined;
    await withNetns(async (ns) => {
      rt = await Rtnetlink.open({ netns: ns.path, defer: true });
    });
    // The client holds the namespace open (its own handle), so the hop enters it even after its name is gone.
    expect((await rt!.links()).map((l) => l.name)).toEqual(['lo']);
    rt!.close();
  });
});

describe('the defer option', () => {
  it('is refused unless a boolean, before anything is opened', async () => {
    const before = [...openFds().keys()].sort();
    for (const open of [(o: object) => Rtnetlink.open(o), (o: object) => Nftables.open(o)]) {
      const err = await rejection(open({ netns: '/proc/self/ns/net', defer: 'yes' }));
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', argument: 'options.defer' });
    }
    expect([...openFds().keys()].sort()).toEqual(before);
  });

  it('changes nothing for a client on a peer', async () => {
    using rt = await Rtnetlink.open({ netlink: new FakeRtnetlink(), defer: true });
    expect((await rt.links()).map((l) => l.name)).toContain('lo');
    using nft = await Nftables.open({ netlink: new FakeNftables(), defer: true });
    await nft.apply({ tables: [{ family: 'inet', name: 'podnet-p', sets: [], chains: [], rules: [] }] });
    expect((await nft.tables()).map((t) => t.name)).toEqual(['podnet-p']);
  });
});
