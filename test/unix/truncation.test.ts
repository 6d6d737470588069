// A message that does not fit what receive() accepts is a typed error, never a silent cut, and the fds that came
// with it are closed; the connection stays usable.
import { closeSync, openSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { SeqpacketMessageError } from '../../lib/unix/index.js';
import { rejection } from '../helpers/rejection.js';
import { checkFdsPerTest, fdsTo, socketDir } from './helpers/fds.js';
import { bytes, pair } from './helpers/pair.js';

const nextPath = socketDir();

/** n fds open on a file of their own, closed by dispose. */
function openFiles(n: number): { path: string; fds: number[] } & Disposable {
  const path = `${nextPath()}.file`;
  const fds = Array.from({ length: n }, () => openSync(path, 'w'));
  return { path, fds, [Symbol.dispose]: () => fds.forEach((fd) => closeSync(fd)) };
}

describe('truncated messages (any user)', () => {
  checkFdsPerTest();

  it.each([
    ['one byte over', 1025, 1024, 0],
    ['far over, with an fd', 4000, 1024, 1],
    ['over a small maxBytes, with several fds', 10, 9, 3],
  ])('refuses a message %s with ERR_UNIX_TRUNCATED and its sizes, fds closed', async (_name, size, maxBytes, fdCount) => {
    using p = await pair(nextPath());
    using files = openFiles(fdCount);
    await p.client.send(Buffer.alloc(size, 0x61), { fds: files.fds });
    const err = await rejection(p.conn.receive({ maxBytes, maxFds: 3 }));
    expect(err).toBeInstanceOf(SeqpacketMessageError);
    expect(err).toMatchObject({ code: 'ERR_UNIX_TRUNCATED', syscall: 'recvmsg', size, maxBytes, receivedFds: fdCount });
    expect((err as Error).message).toContain(`${size} bytes`);
    // only the sender's own fds are left on the file
    expect(fdsTo(files.path).sort()).toEqual([...files.fds].sort());
    await p.client.send(bytes('next'));
    expect((await p.conn.receive({ maxBytes }))!.data.toString()).toBe('next');
  });

  it('takes a message of exactly maxBytes', async () => {
    using p = await pair(nextPath());
    await p.client.send(Buffer.alloc(64, 1));
    expect((await p.conn.receive({ maxBytes: 64 }))!.data.length).toBe(64);
  });

  it.each([
    ['two fds over maxFds 1', 2, 1],
    ['three fds over maxFds 1', 3, 1],
    ['one fd with maxFds 0', 1, 0],
    ['many fds over maxFds 4', 40, 4],
  ])('refuses %s with ERR_UNIX_CTRUNC, every fd that arrived closed', async (_name, sent, maxFds) => {
    using p = await pair(nextPath());
    using files = openFiles(sent);
    await p.client.send(bytes('fds'), { fds: files.fds });
    const err = await rejection(p.conn.receive({ maxFds }));
    expect(err).toBeInstanceOf(SeqpacketMessageError);
    expect(err).toMatchObject({ code: 'ERR_UNIX_CTRUNC', syscall: 'recvmsg', maxFds, size: 3 });
    const arrived = (err as SeqpacketMessageError).receivedFds;
    expect(arrived).toBeGreaterThan(maxFds);
    expect(arrived).toBeLessThanOrEqual(sent);
    expect(fdsTo(files.path).sort()).toEqual([...files.fds].sort());
    await p.client.send(bytes('next'), { fds: files.fds.slice(0, maxFds) });
    const msg = await p.conn.receive({ maxFds });
    expect(msg!.fds).toHaveLength(maxFds);
    for (const fd of msg!.fds) fd.close();
  });

  it('takes exactly maxFds fds', async () => {
    using p = await pair(nextPath());
    using files = openFiles(4);
    await p.client.send(bytes('four'), { fds: files.fds });
    const msg = await p.conn.receive({ maxFds: 4 });
    expect(msg!.fds).toHaveLength(4);
    for (const fd of msg!.fds) fd.close();
  });
});
