// SeqpacketServer: the socket file (mode, stale and live files, a file that is not a socket, unlinking only its own
// file) and accept.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { PodnetError, PodnetSystemError } from '../../lib/index.js';
import { SeqpacketServer, SeqpacketSocket } from '../../lib/unix/index.js';
import { rejection, thrown } from '../helpers/rejection.js';
import { checkFdsPerTest, socketDir } from './helpers/fds.js';
import { bytes } from './helpers/pair.js';

const nextPath = socketDir();

/** A socket file nobody listens on: bound by a process that exited without removing it. */
function staleSocketFile(path: string): void {
  execFileSync('python3', [
    '-c',
    'import socket, sys; s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1])',
    path,
  ]);
}

describe('SeqpacketServer (any user)', () => {
  checkFdsPerTest();

  it('creates the socket file with mode 0o600 by default and exactly the mode asked for (no umask)', () => {
    const a = nextPath();
    const b = nextPath();
    using sa = SeqpacketServer.listen({ path: a });
    using sb = SeqpacketServer.listen({ path: b, mode: 0o666 });
    expect(lstatSync(a).isSocket()).toBe(true);
    expect(statSync(a).mode & 0o777).toBe(0o600);
    expect(statSync(b).mode & 0o777).toBe(0o666);
    expect([sa.mode, sb.mode]).toEqual([0o600, 0o666]);
  });

  it('removes its socket file on close', () => {
    const path = nextPath();
    const server = SeqpacketServer.listen({ path });
    server.close();
    expect(existsSync(path)).toBe(false);
    expect(server.closed).toBe(true);
    server.close();
  });

  it('leaves a file that replaced its socket file alone on close', () => {
    const path = nextPath();
    const server = SeqpacketServer.listen({ path });
    const other = `${path}.other`;
    writeFileSync(other, 'not ours');
    renameSync(other, path);
    server.close();
    expect(existsSync(path)).toBe(true);
    unlinkSync(path);
  });

  it('replaces a stale socket file', async () => {
    const path = nextPath();
    staleSocketFile(path);
    expect(await rejection(SeqpacketSocket.connect(path))).toMatchObject({ code: 'ECONNREFUSED' });
    using server = SeqpacketServer.listen({ path });
    const accepted = server.accept({ timeoutMs: 10_000 });
    using client = await SeqpacketSocket.connect(path);
    using conn = await accepted;
    await client.send(bytes('fresh'));
    expect((await conn.receive())!.data.toString()).toBe('fresh');
  });

  it('refuses a path where a server is listening with EADDRINUSE, and that server keeps its file', async () => {
    const path = nextPath();
    using live = SeqpacketServer.listen({ path });
    const ino = lstatSync(path).ino;
    const err = thrown(() => SeqpacketServer.listen({ path }));
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'EADDRINUSE', errno: -98, syscall: 'bind', path });
    expect(lstatSync(path).ino).toBe(ino);
    // The probe that found it live was a connection, closed at once: the live server sees it end.
    using probe = await live.accept({ timeoutMs: 10_000 });
    expect(await probe.receive()).toBeNull();
  });

  it('refuses a path where a stream listener is, as in use', async () => {
    const path = nextPath();
    const { createServer } = await import('node:net');
    const stream = createServer();
    await new Promise<void>((resolve) => stream.listen(path, resolve));
    try {
      expect(thrown(() => SeqpacketServer.listen({ path }))).toMatchObject({ code: 'EADDRINUSE', path });
      const err = await rejection(SeqpacketSocket.connect(path));
      expect(err).toMatchObject({ code: 'EPROTOTYPE', syscall: 'connect', path });
    } finally {
      await new Promise((resolve) => stream.close(resolve));
    }
  });

  it('refuses a path that is a file but not a socket with EEXIST, and leaves the file', () => {
    const path = nextPath();
    writeFileSync(path, 'keep me');
    const err = thrown(() => SeqpacketServer.listen({ path }));
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'EEXIST', errno: -17, syscall: 'bind', path });
    expect((err as Error).message).toContain('not a socket');
    expect(lstatSync(path).isFile()).toBe(true);
    unlinkSync(path);
  });

  it('fails with ENOENT naming the path when the folder is missing', () => {
    const path = `${nextPath()}.missing/s.sock`;
    expect(thrown(() => SeqpacketServer.listen({ path }))).toMatchObject({ code: 'ENOENT', syscall: 'bind', path });
  });

  it('fails a connect to nothing with ENOENT, and to a stale file with ECONNREFUSED', async () => {
    const missing = nextPath();
    expect(await rejection(SeqpacketSocket.connect(missing))).toMatchObject({
      code: 'ENOENT',
      errno: -2,
      syscall: 'connect',
      path: missing,
    });
    const stale = nextPath();
    staleSocketFile(stale);
    expect(await rejection(SeqpacketSocket.connect(stale))).toMatchObject({ code: 'ECONNREFUSED', syscall: 'connect' });
    unlinkSync(stale);
  });

  it('serves concurrent accepts in call order', async () => {
    const path = nextPath();
    using server = SeqpacketServer.listen({ path });
    const accepts = [server.accept(), server.accept()];
    using first = await SeqpacketSocket.connect(path);
    await first.send(bytes('first'));
    using second = await SeqpacketSocket.connect(path);
    await second.send(bytes('second'));
    const [a, b] = await Promise.all(accepts);
    using ca = a!;
    using cb = b!;
    expect((await ca.receive())!.data.toString()).toBe('first');
    expect((await cb.receive())!.data.toString()).toBe('second');
  });

  it('keeps accepted connections open after the server closed', async () => {
    const path = nextPath();
    const server = SeqpacketServer.listen({ path });
    const accepted = server.accept();
    using client = await SeqpacketSocket.connect(path);
    using conn = await accepted;
    server.close();
    await client.send(bytes('still here'));
    expect((await conn.receive())!.data.toString()).toBe('still here');
  });

  it('rejects accept on a closed server with ERR_UNIX_CLOSED', async () => {
    const server = SeqpacketServer.listen({ path: nextPath() });
    server.close();
    const err = await rejection(server.accept());
    expect(err).toBeInstanceOf(PodnetError);
    expect(err).toMatchObject({ code: 'ERR_UNIX_CLOSED' });
  });
});
