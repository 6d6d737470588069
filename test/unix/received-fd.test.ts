// ReceivedFd owns what arrived: close is idempotent, toNetns hands over only a network namespace, and one dropped
// unclosed is closed by its finalizer. Netns.fromFd takes over a namespace fd.
import { closeSync, fstatSync, openSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';

import { Netns, PodnetError, PodnetSystemError } from '../../lib/index.js';
import { type ReceivedFd } from '../../lib/unix/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { checkFdsPerTest, fdsTo, socketDir } from './helpers/fds.js';
import { bytes, pair, type Pair } from './helpers/pair.js';
import { thrown } from '../helpers/rejection.js';

const nextPath = socketDir();

async function receiveOne(p: Pair, fd: number | { fd: number }): Promise<ReceivedFd> {
  await p.client.send(bytes('fd'), { fds: [fd] });
  return (await p.conn.receive())!.fds[0]!;
}

describe('ReceivedFd (any user)', () => {
  checkFdsPerTest();

  it('closes once; closing again is harmless, and fd then throws ERR_UNIX_FD_CLOSED', async () => {
    using p = await pair(nextPath());
    const file = `${nextPath()}.f`;
    const fd = openSync(file, 'w');
    const received = await receiveOne(p, fd);
    closeSync(fd);
    expect(fdsTo(file)).toEqual([received.fd]);
    received.close();
    received.close();
    received[Symbol.dispose]();
    expect(received.closed).toBe(true);
    expect(fdsTo(file)).toEqual([]);
    expect(thrown(() => received.fd)).toMatchObject({ code: 'ERR_UNIX_FD_CLOSED' });
    expect(thrown(() => received.toNetns())).toMatchObject({ code: 'ERR_UNIX_FD_CLOSED' });
  });

  it('refuses toNetns for an fd that is not a network namespace with ERR_NOT_NETNS, keeping the fd', async () => {
    using p = await pair(nextPath());
    const mnt = openSync('/proc/self/ns/mnt', 'r');
    using received = await receiveOne(p, mnt);
    closeSync(mnt);
    const err = thrown(() => received.toNetns());
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ERR_NOT_NETNS', errno: -22 });
    expect(received.closed).toBe(false);
    expect(received.fd).toBeGreaterThan(2);
  });

  it('hands the fd to the Netns, which closes it; the ReceivedFd is closed from then on', async () => {
    using p = await pair(nextPath());
    using mine = Netns.current();
    const received = await receiveOne(p, mine);
    const fd = received.fd;
    const netns = received.toNetns('pod-netns');
    expect(netns.fd).toBe(fd);
    expect(netns.path).toBe('pod-netns');
    expect(received.closed).toBe(true);
    received.close();
    expect(netns.fd).toBe(fd);
    netns.close();
  });

  it('closes an fd dropped without close when it is garbage collected', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    using p = await pair(nextPath());
    const file = `${nextPath()}.gc`;
    const fd = openSync(file, 'w');
    await (async () => {
      const received = await receiveOne(p, fd);
      expect(fdsTo(file)).toHaveLength(2);
      expect(received.closed).toBe(false);
    })();
    closeSync(fd);
    // FinalizationRegistry callbacks run as tasks some time after a collection: collect until it ran.
    for (let i = 0; i < 200 && fdsTo(file).length > 0; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(fdsTo(file)).toEqual([]);
  });
});

describe('Netns.fromFd (any user)', () => {
  checkFdsPerTest();

  it('takes over a namespace fd and closes it on close', () => {
    using opened = Netns.current();
    const fd = openSync('/proc/self/ns/net', 'r');
    const netns = Netns.fromFd(fd);
    expect(netns.equals(opened)).toBe(true);
    expect(netns.path).toBe(`/proc/self/fd/${fd}`);
    netns.close();
    expect(fdsTo(`net:[${opened.inode}]`)).toEqual([opened.fd]);
  });

  it.each([
    ['a regular file', '/proc/self/status'],
    ['a mount namespace', '/proc/self/ns/mnt'],
  ])('refuses %s with ERR_NOT_NETNS and leaves the fd open, the caller\'s', (_name, path) => {
    const fd = openSync(path, 'r');
    try {
      expect(thrown(() => Netns.fromFd(fd))).toMatchObject({ code: 'ERR_NOT_NETNS' });
      expect(() => fstatSync(fd)).not.toThrow();
    } finally {
      closeSync(fd);
    }
  });

  it('refuses a closed fd with EBADF and a bad number before any native call', () => {
    const fd = openSync('/dev/null', 'r');
    closeSync(fd);
    expect(thrown(() => Netns.fromFd(fd))).toMatchObject({ code: 'EBADF', syscall: 'fstatfs' });
    expect(thrown(() => Netns.fromFd(-1))).toBeInstanceOf(PodnetError);
    expect(thrown(() => Netns.fromFd(-1))).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument: 'fd' });
  });
});

describePrivileged('ReceivedFd of another namespace (root)', () => {
  checkFdsPerTest();

  it('hands a received fd of a fresh namespace to a Netns equal by id to Netns.open(path)', async () => {
    await withNetns(async (ns) => {
      using p = await pair(nextPath());
      using sent = ns.open();
      using current = Netns.current();
      const received = await receiveOne(p, sent);
      using netns = received.toNetns(ns.path);
      using opened = Netns.open(ns.path);
      expect(netns.id).toBe(opened.id);
      expect(netns.equals(current)).toBe(false);
      using reopened = netns.reopen();
      expect(reopened.equals(opened)).toBe(true);
    });
  });
});
