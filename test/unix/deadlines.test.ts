// Deadlines of accept, receive and send, and close() while they wait. Bounds are on how late a deadline fires
// (at most 10 s after it, a margin no loaded machine reaches), never on how fast anything is.
import { closeSync, openSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';

import { PodnetError, PodnetSystemError } from '../../lib/index.js';
import { SeqpacketServer, SeqpacketSocket } from '../../lib/unix/index.js';
import { rejection } from '../helpers/rejection.js';
import { checkFdsPerTest, socketDir } from './helpers/fds.js';
import { bytes, fillSendBuffer, pair } from './helpers/pair.js';

const nextPath = socketDir();
const DEADLINE = 200;

async function timed(promise: Promise<unknown>): Promise<{ err: unknown; ms: number }> {
  const start = performance.now();
  const err = await rejection(promise);
  return { err, ms: performance.now() - start };
}

function expectTimedOut(result: { err: unknown; ms: number }, syscall: string, path: string): void {
  expect(result.err).toBeInstanceOf(PodnetSystemError);
  expect(result.err).toMatchObject({ code: 'ETIMEDOUT', errno: -110, syscall, path });
  expect((result.err as Error).message).toContain(`${DEADLINE} ms`);
  // not before the deadline (1 ms for clock granularity), and not far after it
  expect(result.ms).toBeGreaterThanOrEqual(DEADLINE - 1);
  expect(result.ms).toBeLessThan(DEADLINE + 10_000);
}

describe('deadlines (any user)', () => {
  checkFdsPerTest();

  it('fails a receive with nothing sent with ETIMEDOUT at its deadline, and the socket still works', async () => {
    using p = await pair(nextPath());
    expectTimedOut(await timed(p.conn.receive({ timeoutMs: DEADLINE })), 'recvmsg', p.server.path);
    await p.client.send(bytes('later'));
    expect((await p.conn.receive({ timeoutMs: 10_000 }))!.data.toString()).toBe('later');
  });

  it('fails a send into a full socket buffer with ETIMEDOUT at its deadline', async () => {
    using p = await pair(nextPath());
    const chunk = Buffer.alloc(8192, 1);
    expect(await fillSendBuffer(p.client, chunk)).toBeGreaterThan(0);
    expectTimedOut(await timed(p.client.send(chunk, { timeoutMs: DEADLINE })), 'sendmsg', p.server.path);
  });

  it('completes a waiting send once the peer reads', async () => {
    using p = await pair(nextPath());
    const chunk = Buffer.alloc(8192, 1);
    const filled = await fillSendBuffer(p.client, chunk);
    const waiting = p.client.send(bytes('end'));
    let count = 0;
    for (;;) {
      const msg = await p.conn.receive({ maxBytes: chunk.length, timeoutMs: 10_000 });
      if (msg!.data.toString() === 'end') break;
      count++;
    }
    await waiting;
    expect(count).toBe(filled);
  });

  it('expires a later receive with a shorter deadline while an earlier one keeps waiting', async () => {
    using p = await pair(nextPath());
    const first = p.conn.receive({ timeoutMs: 60_000 });
    expectTimedOut(await timed(p.conn.receive({ timeoutMs: DEADLINE })), 'recvmsg', p.server.path);
    await p.client.send(bytes('for the first'));
    expect((await first)!.data.toString()).toBe('for the first');
  });

  it('drops a queued send that expired without sending it, and sends the rest in order', async () => {
    using p = await pair(nextPath());
    const chunk = Buffer.alloc(8192, 1);
    const filled = await fillSendBuffer(p.client, chunk);
    const a = p.client.send(bytes('a'));
    const expired = timed(p.client.send(bytes('b'), { timeoutMs: DEADLINE }));
    const c = p.client.send(bytes('c'));
    expectTimedOut(await expired, 'sendmsg', p.server.path);
    const got: string[] = [];
    for (let i = 0; i < filled + 2; i++) got.push((await p.conn.receive({ maxBytes: chunk.length }))!.data.toString());
    await Promise.all([a, c]);
    expect(got.slice(filled)).toEqual(['a', 'c']);
  });

  it('fails an accept without a client with ETIMEDOUT at its deadline', async () => {
    const path = nextPath();
    using server = SeqpacketServer.listen({ path });
    expectTimedOut(await timed(server.accept({ timeoutMs: DEADLINE })), 'accept4', path);
  });

  it('fails a connect to a server whose backlog stays full with ETIMEDOUT at its deadline', async () => {
    const path = nextPath();
    using server = SeqpacketServer.listen({ path, backlog: 1 });
    // The kernel queues backlog + 1 connections before it refuses more.
    const queued: SeqpacketSocket[] = [];
    try {
      let result: { err: unknown; ms: number } | undefined;
      for (let i = 0; i < 16 && !result; i++) {
        const start = performance.now();
        const attempt = SeqpacketSocket.connect(path, { timeoutMs: DEADLINE });
        const socket = await attempt.catch(() => undefined);
        if (socket) queued.push(socket);
        else result = { err: await rejection(attempt), ms: performance.now() - start };
      }
      expect(queued.length).toBeGreaterThan(0);
      expectTimedOut(result!, 'connect', path);
    } finally {
      for (const s of queued) s.close();
    }
    expect(server.closed).toBe(false);
  });
});

describe('close() while operations wait (any user)', () => {
  checkFdsPerTest();

  it('rejects a pending accept with ERR_UNIX_CLOSED', async () => {
    const server = SeqpacketServer.listen({ path: nextPath() });
    const pending = server.accept();
    server.close();
    const err = await rejection(pending);
    expect(err).toBeInstanceOf(PodnetError);
    expect(err).toMatchObject({ code: 'ERR_UNIX_CLOSED' });
  });

  it('rejects pending receives with ERR_UNIX_CLOSED, and later calls too', async () => {
    using p = await pair(nextPath());
    const pending = [p.conn.receive(), p.conn.receive({ timeoutMs: 60_000 })];
    p.conn.close();
    for (const r of pending) expect(await rejection(r)).toMatchObject({ code: 'ERR_UNIX_CLOSED' });
    expect(await rejection(p.conn.receive())).toMatchObject({ code: 'ERR_UNIX_CLOSED' });
    expect(await rejection(p.conn.send(bytes('x')))).toMatchObject({ code: 'ERR_UNIX_CLOSED' });
    expect(p.conn.closed).toBe(true);
    // the peer sees the end
    expect(await p.client.receive()).toBeNull();
  });

  it('rejects pending sends with ERR_UNIX_CLOSED and closes the fds they had duplicated', async () => {
    using p = await pair(nextPath());
    await fillSendBuffer(p.client, Buffer.alloc(8192, 1));
    const fd = openSync('/dev/null', 'r');
    const pending = [p.client.send(bytes('a'), { fds: [fd] }), p.client.send(bytes('b'), { fds: [fd, fd] })];
    closeSync(fd);
    p.client.close();
    for (const s of pending) expect(await rejection(s)).toMatchObject({ code: 'ERR_UNIX_CLOSED' });
  });

  it('rejects a pending receive with ERR_UNIX_CLOSED when disposed through Symbol.dispose', async () => {
    using p = await pair(nextPath());
    const pending = p.client.receive();
    p.client[Symbol.dispose]();
    expect(await rejection(pending)).toMatchObject({ code: 'ERR_UNIX_CLOSED' });
  });
});
