// FakeZtunnel against a raw SeqpacketServer playing the node agent: hello, the fd checks of an add, the table rules
// (replace, keep, del, SnapshotSent), scripted faults, disconnects and reconnects, waits, and that every fd it was
// sent is closed again. No root: the only namespace sent is this process's own.
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../lib/errors.js';
import { Netns } from '../../lib/netns.js';
import {
  decodeHello,
  decodeResponse,
  encodeRequest,
  ZdsVersion,
  type ZdsRequest,
  type ZdsWorkloadInfo,
} from '../../lib/proxy/zds-messages.js';
import { FakeZtunnel, type FakeZtunnelOptions } from '../../lib/testing/index.js';
import { SeqpacketServer, type SeqpacketSocket, type SendableFd } from '../../lib/unix/index.js';
import { rejection, thrown } from '../helpers/rejection.js';
import { checkFdsPerTest, fdsTo, openFds } from '../unix/helpers/fds.js';

// Generous: these bound a failure's wait, never how fast the fake must be.
const T = 10_000;

let dir: string;
let path: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'podnet-ztunnel-'));
  path = join(dir, 'ztunnel.sock');
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const pod = (name: string): ZdsWorkloadInfo => ({ name, namespace: 'default', serviceAccount: `${name}-sa` });
const add = (uid: string): ZdsRequest => ({ kind: 'add', uid, workload: pod(uid) });

/** Agent is the node agent's end, by hand: it listens, reads the hello and sends requests one at a time. */
class Agent implements Disposable {
  readonly server: SeqpacketServer;
  readonly conns: SeqpacketSocket[] = [];

  constructor(socketPath: string) {
    this.server = SeqpacketServer.listen({ path: socketPath });
  }

  /** conn is the latest connection. */
  get conn(): SeqpacketSocket {
    const conn = this.conns.at(-1);
    if (!conn) throw new Error('no connection accepted yet');
    return conn;
  }

  /** accept takes the next connection and returns the version of its hello. */
  async accept(): Promise<number> {
    const conn = await this.server.accept({ timeoutMs: T });
    this.conns.push(conn);
    const hello = await conn.receive({ timeoutMs: T });
    if (!hello) throw new Error('EOF instead of a hello');
    expect(hello.fds).toEqual([]);
    return decodeHello(hello.data).version;
  }

  /** request sends req with fds and returns its ack's error. */
  async request(req: ZdsRequest, fds: SendableFd[] = []): Promise<string> {
    return this.raw(encodeRequest(req), fds);
  }

  /** raw sends bytes as they are and returns the ack's error. */
  async raw(bytes: Uint8Array, fds: SendableFd[] = []): Promise<string> {
    await this.conn.send(bytes, { fds, timeoutMs: T });
    return this.ack();
  }

  async ack(): Promise<string> {
    const m = await this.conn.receive({ timeoutMs: T });
    if (!m) throw new Error('EOF instead of an ack');
    expect(m.fds).toEqual([]);
    return decodeResponse(m.data).ack.error;
  }

  [Symbol.dispose](): void {
    for (const conn of this.conns) conn.close();
    this.server.close();
  }
}

/** start listens as the agent and connects a FakeZtunnel to it; [Symbol.dispose] closes both. */
async function start(options?: FakeZtunnelOptions): Promise<{ agent: Agent; zt: FakeZtunnel; hello: number } & Disposable> {
  const agent = new Agent(path);
  try {
    const accepted = agent.accept();
    // Rejected by the cleanup below when connect fails; awaited otherwise.
    accepted.catch(() => undefined);
    const zt = await FakeZtunnel.connect(path, options);
    const hello = await accepted;
    return {
      agent,
      zt,
      hello,
      [Symbol.dispose]() {
        zt.close();
        agent[Symbol.dispose]();
      },
    };
  } catch (err) {
    agent[Symbol.dispose]();
    throw err;
  }
}

/** netFds counts this process's fds on the namespace of ns. */
const netFds = (ns: Netns): number => fdsTo(`net:[${ns.inode}]`).length;

describe('FakeZtunnel (any user)', () => {
  checkFdsPerTest();

  describe('hello', () => {
    it('says hello with V1 by default, then waits for requests without speaking', async () => {
      using s = await start();
      expect(s.hello).toBe(ZdsVersion.V1);
      expect(s.zt.version).toBe(ZdsVersion.V1);
      expect(s.zt.connected).toBe(true);
      expect(s.zt.workloads.size).toBe(0);
      expect(s.zt.received).toEqual([]);
      // The proxy only answers: an idle short read of the agent times out, as the reference's keepalive expects.
      expect(await rejection(s.agent.conn.receive({ timeoutMs: 20 }))).toMatchObject({ code: 'ETIMEDOUT' });
    });

    it('announces a configured version as it is, wrong or not', async () => {
      using s = await start({ version: 7 });
      expect(s.hello).toBe(7);
      expect(s.zt.version).toBe(7);
      s[Symbol.dispose]();
      // proto3 would make this hello empty, which the agent would read as EOF: it arrives as a version 0 instead.
      using t = await start({ version: ZdsVersion.NOT_USED });
      expect(t.hello).toBe(ZdsVersion.NOT_USED);
    });

    it('refuses a version that is not an int32 without connecting, and rejects as connect does for a missing socket', async () => {
      using agent = new Agent(path);
      const err = await rejection(FakeZtunnel.connect(path, { version: 2 ** 31 }));
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ argument: 'version' });
      expect(await rejection(FakeZtunnel.connect(path, { timeoutMs: -1 }))).toMatchObject({ argument: 'options.timeoutMs' });
      expect(await rejection(agent.server.accept({ timeoutMs: 20 }))).toMatchObject({ code: 'ETIMEDOUT' });
      expect(await rejection(FakeZtunnel.connect(join(dir, 'missing.sock')))).toMatchObject({ code: 'ENOENT' });
    });
  });

  describe('add', () => {
    it('records an add with its netns fd under the namespace id, holds the fd and acks with no error', async () => {
      using s = await start();
      using ns = Netns.current();
      const own = netFds(ns);
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      const current = Netns.current();
      expect(ns.id).toBe(current.id);
      current.close();
      expect(s.zt.workloads.get('pod-a')).toEqual({ uid: 'pod-a', workload: pod('pod-a'), netnsId: ns.id });
      expect(s.zt.received).toEqual([{ kind: 'add', uid: 'pod-a', workload: pod('pod-a'), netnsId: ns.id }]);
      expect(s.zt.protocolErrors).toEqual([]);
      expect(netFds(ns)).toBe(own + 1);
      s.zt.close();
      expect(netFds(ns)).toBe(own);
    });

    it('refuses an add without an fd: ack error, protocol error, table unchanged', async () => {
      using s = await start();
      const error = await s.agent.request(add('pod-a'));
      expect(error).toMatch(/no netns fd/);
      expect(s.zt.protocolErrors).toEqual([{ kind: 'missingFd', message: error, request: 'add', uid: 'pod-a' }]);
      expect(s.zt.received).toEqual([{ kind: 'add', uid: 'pod-a', workload: pod('pod-a'), netnsId: undefined }]);
      expect(s.zt.workloads.size).toBe(0);
    });

    it('refuses an add with two fds and closes both', async () => {
      using s = await start();
      using ns = Netns.current();
      const own = netFds(ns);
      const error = await s.agent.request(add('pod-a'), [ns, ns]);
      expect(error).toMatch(/2 fds/);
      expect(s.zt.protocolErrors).toEqual([{ kind: 'extraFds', message: error, request: 'add', uid: 'pod-a' }]);
      expect(s.zt.workloads.size).toBe(0);
      expect(netFds(ns)).toBe(own);
    });

    it('refuses an add whose fd is not a network namespace (a regular file, the mount namespace) and closes it', async () => {
      using s = await start();
      const file = join(dir, 'not-a-netns');
      writeFileSync(file, 'x');
      const fileFd = openSync(file, 'r');
      const mntFd = openSync('/proc/self/ns/mnt', 'r');
      const mnt = openFds().get(mntFd)!;
      try {
        expect(await s.agent.request(add('pod-file'), [fileFd])).toMatch(/not a network namespace/);
        expect(await s.agent.request(add('pod-mnt'), [mntFd])).toMatch(/not a network namespace/);
        expect(fdsTo(file)).toEqual([fileFd]);
        expect(fdsTo(mnt)).toEqual([mntFd]);
      } finally {
        closeSync(fileFd);
        closeSync(mntFd);
      }
      expect(s.zt.protocolErrors.map((e) => [e.kind, e.uid])).toEqual([
        ['notNetns', 'pod-file'],
        ['notNetns', 'pod-mnt'],
      ]);
      expect(s.zt.workloads.size).toBe(0);
    });

    it('replaces the add of a known uid, closing the handle it held', async () => {
      using s = await start();
      using ns = Netns.current();
      const own = netFds(ns);
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      const renamed: ZdsRequest = { kind: 'add', uid: 'pod-a', workload: pod('pod-a2') };
      expect(await s.agent.request(renamed, [ns])).toBe('');
      expect(s.zt.workloads.get('pod-a')?.workload).toEqual(pod('pod-a2'));
      expect(s.zt.workloads.size).toBe(1);
      expect(netFds(ns)).toBe(own + 1);
    });
  });

  describe('malformed messages', () => {
    it('refuses an fd on keep, del and snapshotSent without applying them, and closes it', async () => {
      using s = await start();
      using ns = Netns.current();
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      const own = netFds(ns);
      for (const req of [{ kind: 'keep', uid: 'pod-a' }, { kind: 'del', uid: 'pod-a' }, { kind: 'snapshotSent' }] as const) {
        expect(await s.agent.request(req, [ns])).toMatch(/only an add carries one/);
      }
      expect(netFds(ns)).toBe(own);
      expect(s.zt.protocolErrors.map((e) => [e.kind, e.request, e.uid])).toEqual([
        ['unexpectedFd', 'keep', 'pod-a'],
        ['unexpectedFd', 'del', 'pod-a'],
        ['unexpectedFd', 'snapshotSent', undefined],
      ]);
      // Not applied: the del did not drop it (and the refused snapshot dropped nothing).
      expect([...s.zt.workloads.keys()]).toEqual(['pod-a']);
      expect(s.zt.received.map((m) => m.kind)).toEqual(['add', 'keep', 'del', 'snapshotSent']);
    });

    it('refuses undecodable bytes and a message over 1024 bytes, and goes on answering', async () => {
      using s = await start();
      using ns = Netns.current();
      expect(await s.agent.raw(Uint8Array.of(0xff, 0xff), [ns])).toMatch(/undecodable/);
      // 1024 bytes still fit the buffer (and then do not decode); 1025 do not.
      expect(await s.agent.raw(Buffer.alloc(1024, 0xff))).toMatch(/undecodable/);
      expect(await s.agent.raw(Buffer.alloc(1025, 0xff), [ns])).toMatch(/1025 bytes/);
      expect(s.zt.protocolErrors.map((e) => e.kind)).toEqual(['undecodable', 'undecodable', 'tooLarge']);
      expect(s.zt.received).toEqual([]);
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      expect(s.zt.workloads.has('pod-a')).toBe(true);
    });

    it('refuses a message with more than two fds, closing what arrived', async () => {
      using s = await start();
      using ns = Netns.current();
      const own = netFds(ns);
      expect(await s.agent.request(add('pod-a'), [ns, ns, ns])).toMatch(/more than 2 fds/);
      expect(s.zt.protocolErrors).toMatchObject([{ kind: 'extraFds', request: undefined, uid: undefined }]);
      expect(s.zt.workloads.size).toBe(0);
      expect(netFds(ns)).toBe(own);
    });
  });

  describe('keep, del and SnapshotSent', () => {
    it('del drops a workload and closes its handle; del and keep of unknown uids are acked and change nothing', async () => {
      using s = await start();
      using ns = Netns.current();
      const own = netFds(ns);
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      expect(await s.agent.request(add('pod-b'), [ns])).toBe('');
      expect(netFds(ns)).toBe(own + 2);
      expect(await s.agent.request({ kind: 'del', uid: 'pod-a' })).toBe('');
      expect(netFds(ns)).toBe(own + 1);
      expect(await s.agent.request({ kind: 'del', uid: 'never-added' })).toBe('');
      expect(await s.agent.request({ kind: 'keep', uid: 'never-added' })).toBe('');
      expect([...s.zt.workloads.keys()]).toEqual(['pod-b']);
      expect(s.zt.protocolErrors).toEqual([]);
    });

    it('SnapshotSent drops what the connection did not name; a reconnect keeps the table until then', async () => {
      using s = await start();
      using ns = Netns.current();
      const own = netFds(ns);
      for (const uid of ['pod-a', 'pod-b', 'pod-c']) expect(await s.agent.request(add(uid), [ns])).toBe('');
      expect(await s.agent.request({ kind: 'snapshotSent' })).toBe('');
      expect(s.zt.workloads.size).toBe(3);
      expect(s.zt.snapshots).toBe(1);

      // An agent restart: the proxy connects to the new agent with what it holds.
      s.zt.disconnect();
      const accepted = s.agent.accept();
      await s.zt.reconnect();
      expect(await accepted).toBe(ZdsVersion.V1);
      expect(s.zt.connected).toBe(true);
      expect([...s.zt.workloads.keys()]).toEqual(['pod-a', 'pod-b', 'pod-c']);

      expect(await s.agent.request({ kind: 'keep', uid: 'pod-a' })).toBe('');
      expect(await s.agent.request(add('pod-d'), [ns])).toBe('');
      expect(s.zt.workloads.size).toBe(4);
      expect(await s.agent.request({ kind: 'snapshotSent' })).toBe('');
      expect([...s.zt.workloads.keys()].sort()).toEqual(['pod-a', 'pod-d']);
      expect(s.zt.snapshots).toBe(2);
      expect(netFds(ns)).toBe(own + 2);
      // An add after the snapshot is simply added.
      expect(await s.agent.request(add('pod-e'), [ns])).toBe('');
      expect(s.zt.workloads.has('pod-e')).toBe(true);
    });

    it('a fresh fake starts empty: a keep gives it nothing, and its snapshot holds only what was added', async () => {
      using s = await start();
      using ns = Netns.current();
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      s.zt.close();
      const accepted = s.agent.accept();
      using fresh = await FakeZtunnel.connect(path);
      expect(await accepted).toBe(ZdsVersion.V1);
      expect(fresh.workloads.size).toBe(0);
      expect(await s.agent.request({ kind: 'keep', uid: 'pod-a' })).toBe('');
      expect(await s.agent.request(add('pod-b'), [ns])).toBe('');
      expect(await s.agent.request({ kind: 'snapshotSent' })).toBe('');
      expect([...fresh.workloads.keys()]).toEqual(['pod-b']);
      expect(fresh.received.map((m) => m.kind)).toEqual(['keep', 'add', 'snapshotSent']);
    });
  });

  describe('scripted faults', () => {
    it('failNext: the next count valid requests get the error and change nothing; protocol errors use none up', async () => {
      using s = await start();
      using ns = Netns.current();
      const own = netFds(ns);
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      s.zt.failNext('failed to start listeners', 2);
      const protocol = await s.agent.request(add('pod-x'));
      expect(protocol).toMatch(/no netns fd/);
      expect(await s.agent.request(add('pod-b'), [ns])).toBe('failed to start listeners');
      expect(await s.agent.request({ kind: 'del', uid: 'pod-a' })).toBe('failed to start listeners');
      expect(await s.agent.request(add('pod-c'), [ns])).toBe('');
      expect([...s.zt.workloads.keys()]).toEqual(['pod-a', 'pod-c']);
      // The refused add's handle was closed; it is still in received, with the namespace it carried.
      expect(netFds(ns)).toBe(own + 2);
      expect(s.zt.received.find((m) => m.kind === 'add' && m.uid === 'pod-b')).toMatchObject({ netnsId: ns.id });
      expect(s.zt.protocolErrors).toHaveLength(1);
    });

    it('delayNextAck holds the ack back after applying, and the next ack waits behind it', async () => {
      using s = await start();
      using ns = Netns.current();
      s.zt.delayNextAck(500);
      const before = s.zt.received.length;
      // The agent sends two without waiting: the fake answers one at a time, in order.
      await s.agent.conn.send(encodeRequest(add('pod-a')), { fds: [ns] });
      await s.agent.conn.send(encodeRequest(add('pod-b')));
      const applied = await s.zt.waitFor((m) => m.kind === 'add' && m.uid === 'pod-a', { after: before });
      expect(applied).toMatchObject({ netnsId: ns.id });
      expect(s.zt.workloads.has('pod-a')).toBe(true);
      // Applied but not answered: the agent's short read ends before the held-back ack arrives.
      expect(await rejection(s.agent.conn.receive({ timeoutMs: 20 }))).toMatchObject({ code: 'ETIMEDOUT' });
      expect(s.zt.received).toHaveLength(before + 1);
      expect(await s.agent.ack()).toBe('');
      expect(await s.agent.ack()).toMatch(/no netns fd/);
      expect(s.zt.received.map((m) => m.kind === 'add' && m.uid)).toEqual(['pod-a', 'pod-b']);
    });

    it('an ack held back is never sent when the fake disconnects meanwhile', async () => {
      using s = await start();
      using ns = Netns.current();
      const timers = (): number => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
      const idle = timers();
      s.zt.delayNextAck(60_000);
      await s.agent.conn.send(encodeRequest(add('pod-a')), { fds: [ns] });
      await s.zt.waitFor((m) => m.kind === 'add');
      expect(timers()).toBe(idle + 1);
      s.zt.disconnect();
      expect(await s.agent.conn.receive({ timeoutMs: T })).toBeNull();
      expect(await s.zt.disconnected).toEqual({ reason: 'disconnect' });
      expect(s.zt.workloads.has('pod-a')).toBe(true);
      // The hold was cut short, not left to keep the process alive for a minute.
      expect(timers()).toBe(idle);
    });

    it('refuses bad fault and wait arguments, queueing nothing', async () => {
      const check = (fn: () => unknown, argument: string): void => {
        const err = thrown(fn);
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ argument });
      };
      using s = await start();
      check(() => s.zt.failNext(''), 'error');
      check(() => s.zt.failNext(1 as unknown as string), 'error');
      check(() => s.zt.failNext('x', 0), 'count');
      check(() => s.zt.delayNextAck(-1), 'ms');
      check(() => s.zt.delayNextAck(1, 1.5), 'count');
      expect(thrown(() => s.zt.failNext('x'.repeat(2000)))).toMatchObject({ code: 'ERR_ZDS_MESSAGE_TOO_LARGE' });
      check(() => s.zt.waitFor('add' as never), 'predicate');
      check(() => s.zt.waitForSnapshot({ after: -1 }), 'options.after');
      // Nothing refused was queued: the next request is answered normally.
      using ns = Netns.current();
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
    });
  });

  describe('connections', () => {
    it('disconnect is EOF to the agent and keeps the table; an agent closing is seen as eof', async () => {
      using s = await start();
      using ns = Netns.current();
      const own = netFds(ns);
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      s.zt.disconnect();
      s.zt.disconnect();
      expect(s.zt.connected).toBe(false);
      expect(await s.agent.conn.receive({ timeoutMs: T })).toBeNull();
      expect(await s.zt.disconnected).toEqual({ reason: 'disconnect' });
      expect(s.zt.workloads.has('pod-a')).toBe(true);
      expect(netFds(ns)).toBe(own + 1);

      const accepted = s.agent.accept();
      await s.zt.reconnect();
      await accepted;
      const ended = s.zt.disconnected;
      s.agent.conn.close();
      expect(await ended).toEqual({ reason: 'eof' });
      expect(s.zt.connected).toBe(false);
      expect(s.zt.workloads.has('pod-a')).toBe(true);
    });

    it('reconnect refuses while connected and after close; close ends the connection and is idempotent', async () => {
      using s = await start();
      expect(await rejection(s.zt.reconnect())).toMatchObject({ code: 'ERR_FAKE_ZTUNNEL_CONNECTED' });
      s.zt.close();
      s.zt[Symbol.dispose]();
      expect(s.zt.closed).toBe(true);
      expect(s.zt.connected).toBe(false);
      expect(await s.zt.disconnected).toEqual({ reason: 'close' });
      expect(await s.agent.conn.receive({ timeoutMs: T })).toBeNull();
      expect(await rejection(s.zt.reconnect())).toMatchObject({ code: 'ERR_FAKE_ZTUNNEL_CLOSED' });
    });

    it('closes every fd it was sent: held, replaced, refused and dropped ones, and the socket', async () => {
      const baseline = openFds().size;
      const s = await start();
      const ns = Netns.current();
      for (const uid of ['pod-a', 'pod-b', 'pod-a']) expect(await s.agent.request(add(uid), [ns])).toBe('');
      expect(await s.agent.request(add('pod-c'), [ns, ns])).not.toBe('');
      expect(await s.agent.request({ kind: 'del', uid: 'pod-b' }, [ns])).not.toBe('');
      s.zt.failNext('no');
      expect(await s.agent.request(add('pod-d'), [ns])).toBe('no');
      const own = fdsTo(`net:[${ns.inode}]`);
      ns.close();
      // pod-a and pod-b are held.
      expect(own).toHaveLength(3);
      s.zt.close();
      expect(s.zt.workloads.size).toBe(0);
      expect(fdsTo(`net:[${ns.inode}]`)).toEqual([]);
      expect(await s.agent.conn.receive({ timeoutMs: T })).toBeNull();
      s.agent[Symbol.dispose]();
      expect(openFds().size).toBe(baseline);
    });
  });

  describe('waits', () => {
    it('waitFor finds what was already received, waits past `after`, and rejects at its deadline naming what came', async () => {
      using s = await start();
      using ns = Netns.current();
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      expect(await s.zt.waitFor((m) => m.kind === 'add')).toEqual(s.zt.received[0]);

      const del = s.zt.waitFor((m) => m.kind === 'del', { after: s.zt.received.length });
      const ack = s.agent.request({ kind: 'del', uid: 'pod-a' });
      expect(await del).toEqual({ kind: 'del', uid: 'pod-a' });
      expect(await ack).toBe('');

      const err = await rejection(s.zt.waitFor((m) => m.kind === 'keep', { timeoutMs: 10 }));
      expect(err).toMatchObject({ code: 'ERR_FAKE_ZTUNNEL_TIMEOUT' });
      expect((err as Error).message).toMatch(/no matching message .*add 'pod-a', del 'pod-a'.* within 10 ms/);
    });

    it('waitFor rejects with what its predicate throws, and pending waits reject on close', async () => {
      using s = await start();
      const boom = new Error('boom');
      const throwing = rejection(
        s.zt.waitFor(() => {
          throw boom;
        }),
      );
      const pending = rejection(s.zt.waitFor(() => false));
      const snapshot = rejection(s.zt.waitForSnapshot());
      expect(await s.agent.request({ kind: 'keep', uid: 'pod-a' })).toBe('');
      expect(await throwing).toBe(boom);
      s.zt.close();
      expect(await pending).toMatchObject({ code: 'ERR_FAKE_ZTUNNEL_CLOSED' });
      expect(await snapshot).toMatchObject({ code: 'ERR_FAKE_ZTUNNEL_CLOSED' });
      expect(await rejection(s.zt.waitFor(() => true, { after: 1 }))).toMatchObject({ code: 'ERR_FAKE_ZTUNNEL_CLOSED' });
    });

    it('waitForSnapshot resolves at the next SnapshotSent, applied, or at once for one counted with `after`', async () => {
      using s = await start();
      using ns = Netns.current();
      expect(await s.agent.request(add('pod-a'), [ns])).toBe('');
      s.zt.disconnect();
      const accepted = s.agent.accept();
      await s.zt.reconnect();
      await accepted;

      const next = s.zt.waitForSnapshot().then((n) => ({ n, held: [...s.zt.workloads.keys()] }));
      expect(await s.agent.request({ kind: 'snapshotSent' })).toBe('');
      expect(await next).toEqual({ n: 1, held: [] });
      expect(await s.zt.waitForSnapshot({ after: 0 })).toBe(1);
      const err = await rejection(s.zt.waitForSnapshot({ timeoutMs: 10 }));
      expect(err).toMatchObject({ code: 'ERR_FAKE_ZTUNNEL_TIMEOUT' });
      expect((err as Error).message).toMatch(/no SnapshotSent number 2 \(1 received\) within 10 ms/);
    });
  });
});
