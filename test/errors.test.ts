import { describe, expect, it } from 'vitest';

import {
  InvalidArgumentError,
  PodnetError,
  PodnetSystemError,
  errorFromNative,
  isAlreadyExists,
  isNotFound,
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
