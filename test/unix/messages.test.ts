// Round trips over a real SOCK_SEQPACKET pair: messages with 0, 1 and several fds, boundaries, ordering of
// concurrent calls, and how the end of a connection shows.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { Netns, PodnetSystemError } from '../../lib/index.js';
import { SeqpacketServer, SeqpacketSocket } from '../../lib/unix/index.js';
import { rejection } from '../helpers/rejection.js';
import { checkFdsPerTest, fdsTo, isCloexec, openFds, socketDir } from './helpers/fds.js';
import { bytes, fillSendBuffer, pair } from './helpers/pair.js';

const nextPath = socketDir();

/** A temp file opened read-write, closed by dispose. */
function tempFile(name: string): { path: string; fd: number } & Disposable {
  const path = `${nextPath()}.${name}`;
  const fd = openSync(path, 'w+');
  return { path, fd, [Symbol.dispose]: () => closeSync(fd) };
}

describe('SeqpacketSocket messages (any user)', () => {
  checkFdsPerTest();

  it('carries a message without fds', async () => {
    using p = await pair(nextPath());
    await p.client.send(bytes('hello'));
    const msg = await p.conn.receive();
    expect(msg).not.toBeNull();
    expect(msg!.data.toString()).toBe('hello');
    expect(msg!.fds).toEqual([]);
  });

  it('carries one fd that refers to the same open file (shared offset)', async () => {
    using p = await pair(nextPath());
    using file = tempFile('one');
    await p.client.send(bytes('file'), { fds: [file.fd] });
    const msg = await p.conn.receive();
    expect(msg!.data.toString()).toBe('file');
    expect(msg!.fds).toHaveLength(1);
    using received = msg!.fds[0]!;
    expect(received.fd).not.toBe(file.fd);
    expect(isCloexec(received.fd)).toBe(true);
    // Writes at the current offset: one offset for both fds means one open file, not the same path opened twice.
    writeSync(received.fd, 'abc');
    writeSync(file.fd, 'def');
    expect(readFileSync(file.path, 'utf8')).toBe('abcdef');
    const back = Buffer.alloc(6);
    expect(readSync(received.fd, back, 0, 6, 0)).toBe(6);
    expect(back.toString()).toBe('abcdef');
  });

  it('carries several fds in order, given as numbers or as objects with an fd', async () => {
    using p = await pair(nextPath());
    using a = tempFile('a');
    using b = tempFile('b');
    using netns = Netns.current();
    await p.conn.send(bytes('three'), { fds: [a.fd, { fd: b.fd }, netns] });
    const msg = await p.client.receive({ maxFds: 3 });
    expect(msg!.fds).toHaveLength(3);
    const [ra, rb, rn] = msg!.fds;
    try {
      expect(fdsTo(a.path)).toEqual(expect.arrayContaining([a.fd, ra!.fd]));
      expect(fdsTo(b.path)).toEqual(expect.arrayContaining([b.fd, rb!.fd]));
      using received = rn!.toNetns();
      expect(received.equals(netns)).toBe(true);
      expect(rn!.closed).toBe(true);
    } finally {
      for (const fd of msg!.fds) fd.close();
    }
  });

  it('hands a received netns fd to a Netns equal by id to Netns.open of the same namespace', async () => {
    using p = await pair(nextPath());
    using mine = Netns.current();
    await p.client.send(bytes('ns'), { fds: [mine] });
    const msg = await p.conn.receive();
    using netns = msg!.fds[0]!.toNetns();
    using opened = Netns.open('/proc/self/ns/net');
    expect(netns.id).toBe(opened.id);
    expect(netns.equals(opened)).toBe(true);
  });

  it('keeps message boundaries, also for messages sent before any receive', async () => {
    using p = await pair(nextPath());
    const sent = ['a', 'bb', 'ccc', 'x'.repeat(1000), 'e'];
    for (const text of sent) await p.client.send(bytes(text));
    const got: string[] = [];
    for (let i = 0; i < sent.length; i++) got.push((await p.conn.receive())!.data.toString());
    expect(got).toEqual(sent);
  });

  it('takes data from any Uint8Array view without its neighbours', async () => {
    using p = await pair(nextPath());
    const backing = new Uint8Array([1, 2, 3, 4, 5, 6]);
    await p.client.send(backing.subarray(2, 4));
    expect([...(await p.conn.receive())!.data]).toEqual([3, 4]);
  });

  it('serves concurrent receives in call order', async () => {
    using p = await pair(nextPath());
    const pending = [p.conn.receive(), p.conn.receive(), p.conn.receive()];
    for (const text of ['one', 'two', 'three']) await p.client.send(bytes(text));
    const got = await Promise.all(pending);
    expect(got.map((m) => m!.data.toString())).toEqual(['one', 'two', 'three']);
  });

  it('sends concurrent sends in call order', async () => {
    using p = await pair(nextPath());
    const texts = Array.from({ length: 50 }, (_, i) => `message ${i}`);
    await Promise.all(texts.map((t) => p.client.send(bytes(t))));
    const got: string[] = [];
    for (const _ of texts) got.push((await p.conn.receive())!.data.toString());
    expect(got).toEqual(texts);
  });

  it('reports the peer credentials of both ends', async () => {
    using p = await pair(nextPath());
    const me = { pid: process.pid, uid: process.getuid!(), gid: process.getgid!() };
    expect(p.conn.peerCredentials).toEqual(me);
    expect(p.client.peerCredentials).toEqual(me);
    expect(p.conn.path).toBe(p.server.path);
  });

  it('opens every socket close-on-exec', async () => {
    const before = openFds();
    using p = await pair(nextPath());
    const sockets = [...openFds()].filter(([fd, target]) => !before.has(fd) && target.startsWith('socket:'));
    // the listener, the client and the accepted end
    expect(sockets).toHaveLength(3);
    for (const [fd] of sockets) expect(isCloexec(fd)).toBe(true);
    expect(p.server.closed).toBe(false);
  });

  it('delivers what was sent before the peer closed, then null, and null again', async () => {
    using p = await pair(nextPath());
    await p.client.send(bytes('last words'));
    await p.client.send(bytes('really'));
    p.client.close();
    expect((await p.conn.receive())!.data.toString()).toBe('last words');
    expect((await p.conn.receive())!.data.toString()).toBe('really');
    expect(await p.conn.receive()).toBeNull();
    expect(await p.conn.receive()).toBeNull();
  });

  it('resolves a pending receive with null when the peer closes', async () => {
    using p = await pair(nextPath());
    const pending = p.conn.receive();
    p.client.close();
    expect(await pending).toBeNull();
  });

  it('fails a send after the peer closed with EPIPE', async () => {
    using p = await pair(nextPath());
    p.client.close();
    const err = await rejection(p.conn.send(bytes('anyone?')));
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'EPIPE', errno: -32, syscall: 'sendmsg', path: p.server.path });
    // still EPIPE, and the socket still answers
    expect(await rejection(p.conn.send(bytes('again')))).toMatchObject({ code: 'EPIPE' });
  });

  it('fails a receive with ECONNRESET when the peer closed without reading what it was sent', async () => {
    using p = await pair(nextPath());
    await p.conn.send(bytes('never read'));
    p.client.close();
    const err = await rejection(p.conn.receive());
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ECONNRESET', errno: -104, syscall: 'recvmsg' });
    expect(await p.conn.receive()).toBeNull();
  });

  it('sends an fd the caller closes right after send() returned, while the message waits for room', async () => {
    using p = await pair(nextPath());
    const chunk = Buffer.alloc(16 * 1024, 7);
    await fillSendBuffer(p.client, chunk);
    const file = tempFile('late');
    const sending = p.client.send(bytes('with fd'), { fds: [file.fd] });
    file[Symbol.dispose]();
    let msg = await p.conn.receive({ maxBytes: chunk.length });
    while (msg!.data.length === chunk.length) msg = await p.conn.receive({ maxBytes: chunk.length });
    await sending;
    expect(msg!.data.toString()).toBe('with fd');
    using received = msg!.fds[0]!;
    expect(fdsTo(file.path)).toEqual([received.fd]);
  });

  it('connects to a server whose accepts come later (the backlog holds the connection)', async () => {
    const path = nextPath();
    using server = SeqpacketServer.listen({ path, backlog: 2 });
    using client = await SeqpacketSocket.connect(path);
    await client.send(bytes('queued'));
    using conn = await server.accept();
    expect((await conn.receive())!.data.toString()).toBe('queued');
  });
});

describe('the end of the stream', () => {
  it('reads an empty message as an empty message, data after it as data, and null only at the real end', async () => {
    const path = nextPath();
    using server = SeqpacketServer.listen({ path });
    const accepted = server.accept({ timeoutMs: 20_000 });
    // Another implementation sends what podnet's own send() refuses: an empty message, then data, then closes,
    // all before podnet reads anything.
    const peer = spawnSync('python3', ['-c', [
      'import socket, sys',
      's = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)',
      's.connect(sys.argv[1])',
      "s.send(b'')",
      "s.send(b'after')",
      "s.send(b'')",
      's.close()',
    ].join('\n'), path], { encoding: 'utf8', timeout: 20_000 });
    expect(peer.status, peer.stderr).toBe(0);
    using socket = await accepted;
    const first = await socket.receive({ timeoutMs: 20_000 });
    expect(first).not.toBeNull();
    expect(first!.data.byteLength).toBe(0);
    expect(Buffer.from((await socket.receive({ timeoutMs: 20_000 }))!.data).toString()).toBe('after');
    // An empty message with nothing after it but the close cannot be told from the end: it reads as the end.
    expect(await socket.receive({ timeoutMs: 20_000 })).toBeNull();
    expect(await socket.receive({ timeoutMs: 20_000 })).toBeNull();
  });
});
