// Bad arguments are refused in TypeScript with InvalidArgumentError naming the argument, before any native call:
// nothing is created, nothing is sent.
import { closeSync, existsSync, openSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Netns } from '../../lib/index.js';
import { SEQPACKET_MAX_BYTES, SeqpacketServer, SeqpacketSocket } from '../../lib/unix/index.js';
import { rejection } from '../helpers/rejection.js';
import { checkFdsPerTest, socketDir } from './helpers/fds.js';
import { bytes, pair } from './helpers/pair.js';

const nextPath = socketDir();

function closedFd(): number {
  const fd = openSync('/dev/null', 'r');
  closeSync(fd);
  return fd;
}

function closedNetns(): Netns {
  const ns = Netns.current();
  ns.close();
  return ns;
}

describe('argument checks (any user)', () => {
  checkFdsPerTest();

  it.each([
    ['a path over 107 bytes', () => ({ path: `/tmp/${'x'.repeat(103)}` }), 'options.path', 'ERR_INVALID_ARG_VALUE'],
    ['an empty path', () => ({ path: '' }), 'options.path', 'ERR_INVALID_ARG_VALUE'],
    ['a path with NUL', () => ({ path: '/tmp/a\0b' }), 'options.path', 'ERR_INVALID_ARG_VALUE'],
    ['no path', () => ({}), 'options.path', 'ERR_INVALID_ARG_TYPE'],
    ['a mode over 0o777', (p: string) => ({ path: p, mode: 0o1000 }), 'options.mode', 'ERR_INVALID_ARG_VALUE'],
    ['a negative mode', (p: string) => ({ path: p, mode: -1 }), 'options.mode', 'ERR_INVALID_ARG_VALUE'],
    ['a mode as a string', (p: string) => ({ path: p, mode: '600' }), 'options.mode', 'ERR_INVALID_ARG_TYPE'],
    ['a backlog of 0', (p: string) => ({ path: p, backlog: 0 }), 'options.backlog', 'ERR_INVALID_ARG_VALUE'],
  ])('listen refuses %s', (_name, options, argument, code) => {
    const path = nextPath();
    let err: unknown;
    try {
      SeqpacketServer.listen((options as (p: string) => never)(path));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ code, argument });
    expect(existsSync(path)).toBe(false);
  });

  it('accepts a path of exactly 107 bytes', () => {
    const base = nextPath();
    const path = base + 'p'.repeat(107 - Buffer.byteLength(base));
    using server = SeqpacketServer.listen({ path });
    expect(existsSync(server.path)).toBe(true);
  });

  it.each([
    ['a string', () => 'text', 'data', 'ERR_INVALID_ARG_TYPE'],
    ['an array', () => [1, 2], 'data', 'ERR_INVALID_ARG_TYPE'],
    ['no bytes', () => new Uint8Array(0), 'data', 'ERR_INVALID_ARG_VALUE'],
    ['more than 64 KiB', () => new Uint8Array(SEQPACKET_MAX_BYTES + 1), 'data', 'ERR_INVALID_ARG_VALUE'],
  ])('send refuses data that is %s', async (_name, data, argument, code) => {
    using p = await pair(nextPath());
    const err = await rejection(p.client.send(data() as Uint8Array));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ code, argument });
  });

  it.each([
    ['a negative fd', () => [-1], 'options.fds[0]', 'ERR_INVALID_ARG_VALUE'],
    ['a fractional fd', () => [1.5], 'options.fds[0]', 'ERR_INVALID_ARG_VALUE'],
    ['an fd as a string', () => ['1'], 'options.fds[0]', 'ERR_INVALID_ARG_TYPE'],
    ['a closed fd', () => [0, closedFd()], 'options.fds[1]', 'ERR_INVALID_ARG_VALUE'],
    ['a closed Netns', () => [closedNetns()], 'options.fds[0]', 'ERR_INVALID_ARG_VALUE'],
    ['not an array', () => 3, 'options.fds', 'ERR_INVALID_ARG_TYPE'],
    ['more than 253 fds', () => new Array(254).fill(0), 'options.fds', 'ERR_INVALID_ARG_VALUE'],
  ])('send refuses fds with %s', async (_name, fds, argument, code) => {
    using p = await pair(nextPath());
    const err = await rejection(p.client.send(bytes('x'), { fds: fds() as number[] }));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ code, argument });
    // nothing was sent
    await expect(rejection(p.conn.receive({ timeoutMs: 0 }))).resolves.toMatchObject({ code: 'ETIMEDOUT' });
  });

  it.each([
    ['maxBytes 0', { maxBytes: 0 }, 'options.maxBytes'],
    ['maxBytes over 64 KiB', { maxBytes: SEQPACKET_MAX_BYTES + 1 }, 'options.maxBytes'],
    ['maxFds over 253', { maxFds: 254 }, 'options.maxFds'],
    ['a negative timeout', { timeoutMs: -1 }, 'options.timeoutMs'],
    ['a fractional timeout', { timeoutMs: 0.5 }, 'options.timeoutMs'],
  ])('receive refuses %s', async (_name, options, argument) => {
    using p = await pair(nextPath());
    const err = await rejection(p.conn.receive(options));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument });
  });

  it('refuses bad connect and accept arguments', async () => {
    expect(await rejection(SeqpacketSocket.connect('x'.repeat(108)))).toMatchObject({ argument: 'path' });
    expect(await rejection(SeqpacketSocket.connect(nextPath(), { timeoutMs: 2 ** 31 }))).toMatchObject({
      argument: 'options.timeoutMs',
    });
    using server = SeqpacketServer.listen({ path: nextPath() });
    expect(await rejection(server.accept({ timeoutMs: -5 }))).toMatchObject({ argument: 'options.timeoutMs' });
    expect(await rejection(server.accept('soon' as never))).toMatchObject({ argument: 'options', code: 'ERR_INVALID_ARG_TYPE' });
  });
});
