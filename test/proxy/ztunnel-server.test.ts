// ZtunnelServer against a proxy played by hand with podnet's own seqpacket sockets and the ZDS codec: what goes on
// the wire, in which order, with which fd, and what each failure of the proxy does to the call and the connection.
// No root needed: the netns fd is this process's own (/proc/self/ns/net).
import { openSync, closeSync, existsSync } from 'node:fs';
import { once } from 'node:events';

import { afterEach, describe, expect, it } from 'vitest';

import { Netns } from '../../lib/netns.js';
import { ProxyAckError, ProxyError, ZdsError } from '../../lib/proxy/errors.js';
import { ZtunnelServer } from '../../lib/proxy/ztunnel-server.js';
import { decodeRequest, encodeAck, encodeHello, type ZdsRequest } from '../../lib/proxy/zds-messages.js';
import { SeqpacketSocket } from '../../lib/unix/index.js';
import { InvalidArgumentError } from '../../lib/errors.js';
import { checkFdsPerTest, socketDir } from '../unix/helpers/fds.js';

const nextPath = socketDir();
const W = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };
const WAIT = { timeoutMs: 20_000 };

interface Got {
  req: ZdsRequest;
  netnsId: string | undefined;
  fds: number;
}

/** A proxy played by hand: says hello, then reads requests and answers them only when told. */
class HandProxy implements Disposable {
  constructor(readonly socket: SeqpacketSocket) {}

  static async connect(path: string, version = 1): Promise<HandProxy> {
    const socket = await SeqpacketSocket.connect(path, WAIT);
    await socket.send(encodeHello(version), WAIT);
    return new HandProxy(socket);
  }

  async next(timeoutMs = WAIT.timeoutMs): Promise<Got | null> {
    const msg = await this.socket.receive({ timeoutMs, maxFds: 4 });
    if (msg === null) return null;
    let netnsId: string | undefined;
    for (const fd of msg.fds) {
      const ns = fd.toNetns();
      netnsId = ns.id;
      ns.close();
    }
    return { req: decodeRequest(msg.data), netnsId, fds: msg.fds.length };
  }

  async ack(error = ''): Promise<void> {
    await this.socket.send(encodeAck(error), WAIT);
  }

  /** Answers the snapshot of an empty table. */
  async emptySnapshot(): Promise<void> {
    expect((await this.next())?.req).toEqual({ kind: 'snapshotSent' });
    await this.ack();
  }

  /** nothingWithin: no message arrives within ms (an absence: load cannot make it fail falsely). */
  async nothingWithin(ms: number): Promise<void> {
    await expect(this.socket.receive({ timeoutMs: ms })).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  }

  [Symbol.dispose](): void {
    this.socket.close();
  }
}

const servers: ZtunnelServer[] = [];
async function listen(options: Partial<Parameters<typeof ZtunnelServer.listen>[0]> = {}): Promise<ZtunnelServer> {
  const server = await ZtunnelServer.listen({ path: nextPath(), ...options });
  servers.push(server);
  return server;
}

describe('ZtunnelServer', () => {
  checkFdsPerTest();
  // After the fd check's own hook in the file, so it runs before it (after-hooks run as a stack).
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });

  it('takes a V1 hello, counts the proxy and sends the (empty) snapshot, then SnapshotSent is acked', async () => {
    const server = await listen();
    const connected = once(server, 'connected');
    const sent = once(server, 'snapshotSent');
    using proxy = await HandProxy.connect(server.path);
    const [peer] = await connected;
    expect(peer).toMatchObject({ id: 1, pid: process.pid, uid: process.getuid!(), gid: process.getgid!() });
    expect(server.connected).toBe(1);
    await proxy.emptySnapshot();
    expect((await sent)[1]).toEqual({ added: 0, kept: 0, failed: [] });
  });

  it('adds a workload with exactly one fd, of the given namespace, and keeps it in the table', async () => {
    const server = await listen();
    using proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    using ns = Netns.current();
    const added = server.addWorkload('uid-1', W, ns);
    const got = await proxy.next();
    expect(got).toEqual({ req: { kind: 'add', uid: 'uid-1', workload: W }, netnsId: ns.id, fds: 1 });
    await proxy.ack();
    await added;
    expect(server.workloads).toEqual([{ uid: 'uid-1', workload: W, netnsId: ns.id }]);
  });

  it("fails an add the proxy refuses with ProxyAckError carrying the proxy's text, and leaves the table alone", async () => {
    const server = await listen();
    using proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    using ns = Netns.current();
    const added = server.addWorkload('uid-1', W, ns);
    await proxy.next();
    await proxy.ack('failed to start inbound listener');
    const err = await added.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProxyAckError);
    expect(err).toMatchObject({ code: 'ERR_PROXY_ACK', uid: 'uid-1', request: 'add', proxyError: 'failed to start inbound listener' });
    expect(server.workloads).toEqual([]);
    // The connection stays usable.
    const again = server.addWorkload('uid-1', W, ns);
    await proxy.next();
    await proxy.ack();
    await again;
    expect(server.workloads.map((w) => w.uid)).toEqual(['uid-1']);
  });

  it('fails an add at once with a retryable ERR_PROXY_NOT_CONNECTED when no proxy said hello', async () => {
    const server = await listen();
    using ns = Netns.current();
    const err = await server.addWorkload('uid-1', W, ns).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProxyError);
    expect(err).toMatchObject({ code: 'ERR_PROXY_NOT_CONNECTED', uid: 'uid-1', request: 'add', path: server.path });
    expect(server.workloads).toEqual([]);
  });

  it('refuses a proxy that announces another version: logged, connection closed, never counted', async () => {
    const errors: string[] = [];
    const server = await listen({ logger: { error: (m) => errors.push(m) } });
    const disconnected = once(server, 'disconnected');
    using proxy = await HandProxy.connect(server.path, 2);
    expect(await proxy.next()).toBeNull();
    expect((await disconnected)[1]).toMatchObject({ reason: 'refused' });
    expect(server.connected).toBe(0);
    expect(errors.join('\n')).toMatch(/version 2/);
  });

  it('sends a reconnecting proxy the snapshot: Add with fd, Keep without, SnapshotSent, each after the previous ack', async () => {
    const server = await listen();
    using ns = Netns.current();
    server.replaceWorkloads([
      { uid: 'a', workload: W, netns: ns },
      { uid: 'b', workload: { ...W, name: 'web-1' } },
    ]);
    const sent = once(server, 'snapshotSent');
    using proxy = await HandProxy.connect(server.path);
    expect(await proxy.next()).toEqual({ req: { kind: 'add', uid: 'a', workload: W }, netnsId: ns.id, fds: 1 });
    await proxy.nothingWithin(200);
    await proxy.ack();
    expect(await proxy.next()).toEqual({ req: { kind: 'keep', uid: 'b' }, netnsId: undefined, fds: 0 });
    await proxy.nothingWithin(200);
    await proxy.ack();
    expect((await proxy.next())?.req).toEqual({ kind: 'snapshotSent' });
    await proxy.ack();
    expect((await sent)[1]).toEqual({ added: 1, kept: 1, failed: [] });
  });

  it('goes on with the snapshot past an add the proxy refuses, and reports it', async () => {
    const server = await listen();
    using ns = Netns.current();
    server.replaceWorkloads([
      { uid: 'a', workload: W, netns: ns },
      { uid: 'b', workload: W, netns: ns },
    ]);
    const sent = once(server, 'snapshotSent');
    using proxy = await HandProxy.connect(server.path);
    await proxy.next();
    await proxy.ack('netns gone');
    expect((await proxy.next())?.req).toMatchObject({ kind: 'add', uid: 'b' });
    await proxy.ack();
    await proxy.emptySnapshot();
    expect((await sent)[1]).toEqual({ added: 1, kept: 0, failed: ['a'] });
  });

  it('sends an add to the latest proxy only, and a del to every connected proxy', async () => {
    const server = await listen();
    using old = await HandProxy.connect(server.path);
    await old.emptySnapshot();
    const second = once(server, 'connected');
    using latest = await HandProxy.connect(server.path);
    await second;
    await latest.emptySnapshot();
    expect(server.connected).toBe(2);
    using ns = Netns.current();
    const added = server.addWorkload('p', W, ns);
    expect((await latest.next())?.req).toMatchObject({ kind: 'add', uid: 'p' });
    await latest.ack();
    await added;
    await old.nothingWithin(200);
    const deleted = server.delWorkload('p');
    expect((await old.next())?.req).toEqual({ kind: 'del', uid: 'p' });
    expect((await latest.next())?.req).toEqual({ kind: 'del', uid: 'p' });
    await old.ack();
    await latest.ack();
    await deleted;
    expect(server.workloads).toEqual([]);
  });

  it('queues concurrent requests: the next one is sent only after the previous ack', async () => {
    const server = await listen();
    using proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    using ns = Netns.current();
    const calls = ['x', 'y', 'z'].map((uid) => server.addWorkload(uid, W, ns));
    for (const uid of ['x', 'y', 'z']) {
      expect((await proxy.next())?.req).toMatchObject({ kind: 'add', uid });
      if (uid !== 'z') await proxy.nothingWithin(100);
      await proxy.ack();
    }
    await Promise.all(calls);
    expect(server.workloads.map((w) => w.uid)).toEqual(['x', 'y', 'z']);
  });

  it('fails an unanswered add with ETIMEDOUT at the deadline and drops the connection (a late ack would be misread)', async () => {
    const server = await listen({ timeoutMs: 300 });
    using proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    using ns = Netns.current();
    const disconnected = once(server, 'disconnected');
    const added = server.addWorkload('slow', W, ns);
    await proxy.next();
    const err = await added.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProxyError);
    expect(err).toMatchObject({ code: 'ETIMEDOUT', errno: -110, syscall: 'recvmsg', uid: 'slow' });
    expect((await disconnected)[1]).toMatchObject({ reason: 'timeout' });
    expect(await proxy.next()).toBeNull();
    expect(server.connected).toBe(0);
    expect(server.workloads).toEqual([]);
  });

  it('sees a proxy that went away at once, without any call (EOF on the read that is always pending)', async () => {
    const server = await listen();
    const proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    const disconnected = once(server, 'disconnected');
    proxy.socket.close();
    expect((await disconnected)[1]).toEqual({ reason: 'eof' });
    expect(server.connected).toBe(0);
  });

  it('drops a proxy that speaks unasked (a protocol error) and one that answers with bytes that are no ack', async () => {
    const server = await listen();
    using chatty = await HandProxy.connect(server.path);
    await chatty.emptySnapshot();
    const dropped = once(server, 'disconnected');
    await chatty.ack();
    expect((await dropped)[1]).toMatchObject({ reason: 'protocol', error: { code: 'ERR_PROXY_PROTOCOL' } });
    expect(await chatty.next()).toBeNull();

    using garbled = await HandProxy.connect(server.path);
    await garbled.emptySnapshot();
    using ns = Netns.current();
    const added = server.addWorkload('g', W, ns);
    await garbled.next();
    await garbled.socket.send(Buffer.from([0xff, 0xff]), WAIT);
    const err = await added.catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_PROXY_PROTOCOL', uid: 'g', request: 'add' });
    expect((err as Error).cause).toBeInstanceOf(ZdsError);
  });

  it('fails the request waiting for an ack with ERR_PROXY_DISCONNECTED when the proxy goes away', async () => {
    const server = await listen();
    const proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    using ns = Netns.current();
    const added = server.addWorkload('gone', W, ns);
    await proxy.next();
    proxy.socket.close();
    await expect(added).rejects.toMatchObject({ code: 'ERR_PROXY_DISCONNECTED', uid: 'gone' });
    expect(server.workloads).toEqual([]);
  });

  it('holds snapshots with waitForWorkloads until the first replaceWorkloads', async () => {
    const server = await listen({ waitForWorkloads: true });
    using proxy = await HandProxy.connect(server.path);
    await proxy.nothingWithin(300);
    expect(server.connected).toBe(0);
    using ns = Netns.current();
    server.replaceWorkloads([{ uid: 'r', workload: W, netns: ns }]);
    expect((await proxy.next())?.req).toMatchObject({ kind: 'add', uid: 'r' });
    await proxy.ack();
    await proxy.emptySnapshot();
    expect(server.connected).toBe(1);
  });

  it('does not undo a del that came while the snapshot was being sent', async () => {
    const server = await listen();
    using ns = Netns.current();
    server.replaceWorkloads([
      { uid: 'a', workload: W, netns: ns },
      { uid: 'b', workload: W, netns: ns },
    ]);
    using proxy = await HandProxy.connect(server.path);
    expect((await proxy.next())?.req).toMatchObject({ kind: 'add', uid: 'a' });
    const deleted = server.delWorkload('b');
    await proxy.ack();
    expect((await proxy.next())?.req).toEqual({ kind: 'del', uid: 'b' });
    await proxy.ack();
    await deleted;
    await proxy.emptySnapshot();
    expect(server.workloads.map((w) => w.uid)).toEqual(['a']);
  });

  it('close ends connections (waiting calls reject), refuses later calls and removes the socket file', async () => {
    const server = await listen();
    using proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    using ns = Netns.current();
    const added = server.addWorkload('c', W, ns);
    await proxy.next();
    await server.close();
    await expect(added).rejects.toMatchObject({ code: 'ERR_PROXY_DISCONNECTED' });
    expect(await proxy.next()).toBeNull();
    await expect(server.addWorkload('c', W, ns)).rejects.toMatchObject({ code: 'ERR_PROXY_CLOSED' });
    expect(() => server.replaceWorkloads([])).toThrow(expect.objectContaining({ code: 'ERR_PROXY_CLOSED' }));
    expect(existsSync(server.path)).toBe(false);
    await server.close();
  });

  it('refuses bad input before sending anything, and a failed replaceWorkloads changes nothing', async () => {
    const server = await listen();
    using proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    using ns = Netns.current();
    const file = openSync('/proc/self/stat', 'r');
    try {
      await expect(server.addWorkload('f', W, { fd: file })).rejects.toBeInstanceOf(InvalidArgumentError);
    } finally {
      closeSync(file);
    }
    await expect(server.addWorkload('', W, ns)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(server.addWorkload('u', { ...W, namespace: 'a\0b' }, ns)).rejects.toMatchObject({ argument: 'workload.namespace' });
    expect(() => server.replaceWorkloads([{ uid: 'u', workload: { ...W, name: 7 as never } }])).toThrow(
      expect.objectContaining({ argument: 'workloads[0].workload.name' }),
    );
    await expect(server.addWorkload('u', { ...W, name: 'x'.repeat(2000) }, ns)).rejects.toMatchObject({ code: 'ERR_ZDS_MESSAGE_TOO_LARGE' });
    await expect(server.addWorkload('u', W, { fd: 1e9 })).rejects.toBeInstanceOf(InvalidArgumentError);
    server.replaceWorkloads([{ uid: 'keep-me', workload: W, netns: ns }]);
    expect(() =>
      server.replaceWorkloads([
        { uid: 'n', workload: W, netns: ns },
        { uid: 'n', workload: W, netns: ns },
      ]),
    ).toThrow(InvalidArgumentError);
    expect(server.workloads.map((w) => w.uid)).toEqual(['keep-me']);
    await proxy.nothingWithin(200);
  });
  it('reports running out of fds as the system error it is, not as a bad argument, and changes nothing', async () => {
    const server = await listen();
    using ns = Netns.current();
    server.replaceWorkloads([{ uid: 'keep-me', workload: W, netns: ns }]);
    const filler: number[] = [];
    let thrownByHolder: unknown;
    let thrownByHandle: unknown;
    try {
      for (;;) filler.push(openSync('/dev/null', 'r'));
    } catch (err) {
      expect((err as { code?: string }).code).toBe('EMFILE');
      try {
        server.replaceWorkloads([{ uid: 'a', workload: W, netns: { fd: ns.fd } }]);
      } catch (e) {
        thrownByHolder = e;
      }
      try {
        server.replaceWorkloads([{ uid: 'a', workload: W, netns: ns }]);
      } catch (e) {
        thrownByHandle = e;
      }
    } finally {
      for (const fd of filler) closeSync(fd);
    }
    for (const err of [thrownByHolder, thrownByHandle]) {
      expect(err).not.toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ code: 'EMFILE' });
    }
    expect(server.workloads.map((w) => w.uid)).toEqual(['keep-me']);
    // A closed fd is still a bad argument.
    const closed = openSync('/dev/null', 'r');
    closeSync(closed);
    expect(() => server.replaceWorkloads([{ uid: 'a', workload: W, netns: { fd: closed } }])).toThrow(InvalidArgumentError);
  });
  it('keeps at most 16 connections that never say hello, closing the oldest, so a proxy connecting later still gets in', async () => {
    const server = await listen({ timeoutMs: 60_000 });
    const silent: SeqpacketSocket[] = [];
    try {
      for (let i = 0; i < 20; i++) silent.push(await SeqpacketSocket.connect(server.path, WAIT));
      // The four oldest are closed by the server: each reads the end of the stream, the newer ones nothing.
      for (const s of silent.slice(0, 4)) expect(await s.receive(WAIT)).toBeNull();
      for (const s of silent.slice(4)) await expect(s.receive({ timeoutMs: 50 })).rejects.toMatchObject({ code: 'ETIMEDOUT' });
      using proxy = await HandProxy.connect(server.path);
      await proxy.emptySnapshot();
      expect(server.connected).toBe(1);
    } finally {
      for (const s of silent) s.close();
    }
  });

  it("bounds a call's whole wait by its deadline: an add queued behind an unanswered one fails at its own deadline, unsent", async () => {
    const server = await listen({ timeoutMs: 1500 });
    using ns = Netns.current();
    using proxy = await HandProxy.connect(server.path);
    await proxy.emptySnapshot();
    const first = server.addWorkload('a', W, ns).catch((e: unknown) => e);
    const second = server.addWorkload('b', W, ns).catch((e: unknown) => e);
    expect((await proxy.next())?.req).toMatchObject({ kind: 'add', uid: 'a' });
    // A witness due after the second call's deadline (1.5 s from its call) and before the deadline a per-message
    // bound would give it (1.5 s after 'a' is acked at 1 s): timers run in order of their due time.
    let witnessFired = false;
    const witness = setTimeout(() => (witnessFired = true), 2000);
    setTimeout(() => void proxy.ack(), 1000);
    expect(await first).toBeUndefined();
    const err = await second;
    expect(witnessFired).toBe(false);
    clearTimeout(witness);
    expect(err).toBeInstanceOf(ProxyError);
    expect(err).toMatchObject({ code: 'ETIMEDOUT', uid: 'b' });
    // 'b' was either never sent (it waited out its deadline in the queue) or sent with what was left of it.
    expect(server.workloads.map((w) => w.uid)).toEqual(['a']);
  });

  it("tells a connection's events in order: snapshotSent before disconnected, even when the proxy closes right after its ack", async () => {
    const server = await listen();
    const events: string[] = [];
    server.on('snapshotSent', (peer) => events.push(`snapshotSent ${peer.id}`));
    server.on('disconnected', (peer) => events.push(`disconnected ${peer.id}`));
    for (let i = 0; i < 10; i++) {
      const proxy = await HandProxy.connect(server.path);
      expect((await proxy.next())?.req).toEqual({ kind: 'snapshotSent' });
      await proxy.ack();
      proxy.socket.close();
      while (events.filter((e) => e.startsWith('disconnected')).length < i + 1) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const ids = [...new Set(events.map((e) => e.split(' ')[1]))];
    expect(ids).toHaveLength(10);
    for (const id of ids) expect(events.filter((e) => e.endsWith(` ${id}`))).toEqual([`snapshotSent ${id}`, `disconnected ${id}`]);
  });
});
