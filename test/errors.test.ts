import { describe, expect, it } from 'vitest';

import {
  InvalidArgumentError,
  IpsetError,
  KernelError,
  NftablesError,
  PodnetError,
  PodnetSystemError,
  errorFromNative,
  isAlreadyExists,
  isNotFound,
  RtnetlinkError,
  registerNativeErrorKind,
  withCallerStack,
} from '../lib/errors.js';
import { native } from '../lib/native.js';
import { Netns } from '../lib/netns.js';

describe('errors', () => {
  it('builds Node-shaped system errors from native fields', () => {
    const err = errorFromNative({
      kind: 'system',
      message: "ENOENT: no such file or directory, open '/x'",
      code: 'ENOENT',
      errno: -2,
      syscall: 'open',
      path: '/x',
    });
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toBeInstanceOf(PodnetError);
    expect(err).toMatchObject({ name: 'PodnetSystemError', code: 'ENOENT', errno: -2, syscall: 'open', path: '/x' });
  });

  it('lets a layer register its own class for a kind', () => {
    class DemoError extends PodnetError {}
    registerNativeErrorKind('demo-kind', (f) => new DemoError(f.message, f.code));
    expect(errorFromNative({ kind: 'demo-kind', message: 'm', code: 'X' })).toBeInstanceOf(DemoError);
  });

  it.each([
    [{ code: 'ENOENT' }, true, false],
    [{ code: 'ESRCH' }, true, false],
    [{ code: 'EEXIST' }, false, true],
    [{ code: 'IPSET_ERR_EXIST' }, false, true],
    [{ code: 'IPSET_ERR_ENTRY_MISSING' }, true, false],
    [{ code: 'EPERM' }, false, false],
    [null, false, false],
    ['ENOENT', false, false],
  ])('predicates on %j', (err, notFound, exists) => {
    expect(isNotFound(err)).toBe(notFound);
    expect(isAlreadyExists(err)).toBe(exists);
  });

  const cause = new Error('inner');
  it.each([
    ['IpsetError', new IpsetError('m', 'IPSET_ERR_EXIST', -4103, { operation: 'add', set: 's', entry: { ip: '10.0.0.1' }, netns: '/n' }, 'IPSET_ERR_EXIST', { cause }), { ip: '10.0.0.1' }, 'add'],
    ['RtnetlinkError', new RtnetlinkError('m', 'EEXIST', -17, { operation: 'addRoute', object: { table: 100 }, netns: '/n' }, { cause }), { table: 100 }, 'addRoute'],
    ['NftablesError', new NftablesError('m', 'EEXIST', -17, { operation: 'run', object: { op: 'addTable' }, netns: '/n' }, { cause }), { op: 'addTable' }, 'run'],
  ])('%s is a KernelError with the one context shape and its cause', (name, err, object, operation) => {
    expect(err).toBeInstanceOf(KernelError);
    expect(err).toMatchObject({ name, syscall: 'sendmsg', operation, object, netns: '/n' });
    expect(err.cause).toBe(cause);
  });

  it("keeps IpsetError's and PodnetSystemError's command as an alias of operation", () => {
    expect(new IpsetError('m', 'ENOENT', -2, { command: 'del', set: 's' })).toMatchObject({ operation: 'del', command: 'del', set: 's' });
    expect(new PodnetSystemError('m', 'ETIMEDOUT', -110, { command: 'add' })).toMatchObject({ operation: 'add', command: 'add' });
    expect(errorFromNative({ kind: 'system', message: 'm', code: 'ETIMEDOUT', errno: -110, command: 'list' })).toMatchObject({ operation: 'list', command: 'list' });
  });

  it('native code throws the TypeScript classes', () => {
    expect(() => Netns.open('/nonexistent')).toThrow(PodnetSystemError);
  });

  it('attaches the caller stack to async errors', async () => {
    function callSite(): Error {
      return new Error('site');
    }
    const caller = callSite();
    const err = await withCallerStack(Promise.reject(new PodnetError('late', 'X')), caller).catch((e: unknown) => e);
    expect((err as Error).stack).toContain('async call site');
    expect((err as Error).stack).toContain('callSite');
  });

  it('invalid-argument errors carry the argument name', () => {
    const err = new InvalidArgumentError('expected x for y but received z', 'ERR_INVALID_ARG_VALUE', 'y');
    expect(err).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument: 'y', name: 'InvalidArgumentError' });
  });

  it('loaded the build the run asked for', () => {
    const info = native.buildInfo();
    expect(info.napiVersion).toBe(9);
    expect(info.asan).toBe(process.env.PODNET_EXPECT_ASAN === '1');
  });
});
