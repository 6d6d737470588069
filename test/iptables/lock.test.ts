// Locks and deadlines with the legacy backend: a held xtables lock ends in a typed timeout after lockWaitSeconds,
// and a run that would wait longer than its deadline is killed and reported. The lock is a per-test file
// (XTABLES_LOCKFILE), so the host's /run/xtables.lock is never touched.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

import {
  Iptables,
  IptablesLockTimeoutError,
  ProcessTimeoutError,
  RuleSet,
  runInNetns,
  type RunResult,
} from '../../lib/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';


/**
 * Holds an exclusive flock on file for seconds (as iptables-legacy takes it) and resolves once it is held, with the
 * holder's run wrapped so that awaiting this does not wait for the holder to end.
 */
async function holdLock(file: string, seconds: number): Promise<{ done: Promise<RunResult> }> {
  const holder = runInNetns(undefined, ['flock', '--exclusive', file, 'sleep', String(seconds)], { timeoutMs: (seconds + 5) * 1000 });
  const end = Date.now() + 5000;
  while (Date.now() < end) {
    const probe = await runInNetns(undefined, ['flock', '--nonblock', file, 'true'], { timeoutMs: 5000 });
    if (probe.exitCode !== 0) return { done: holder };
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the lock was not taken within 5 s');
}

const RULES = new RuleSet().chain('filter', 'PODNET_L').append('filter', 'PODNET_L', ['-j', 'RETURN']);

describePrivileged(
  'iptables locking and deadlines (legacy)',
  () => {
    it('ends a held lock in IptablesLockTimeoutError after lockWaitSeconds, not a hang', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'podnet-lock-'));
      try {
        const lockFile = join(dir, 'xtables.lock');
        await withNetns(async (tns) => {
          const ipt = await Iptables.open({ netns: tns.path, backend: 'legacy', lockFile, lockWaitSeconds: 1 });
          await ipt.apply(RULES);
          const holder = await holdLock(lockFile, 3);
          const started = Date.now();
          const err = await rejection(ipt.apply(RULES));
          const took = Date.now() - started;
          expect(err).toBeInstanceOf(IptablesLockTimeoutError);
          expect(err).toMatchObject({ code: 'ERR_IPTABLES_LOCK_TIMEOUT', reason: 'lock-timeout', exitCode: 4 });
          expect(took).toBeGreaterThanOrEqual(900);
          expect(took).toBeLessThan(2900);
          await holder.done;
          // Free again: the same client works.
          await ipt.apply(RULES);
          expect((await ipt.verify(RULES)).inSync).toBe(true);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('kills a run that passes its deadline and reports it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'podnet-lock-'));
      try {
        const lockFile = join(dir, 'xtables.lock');
        await withNetns(async (tns) => {
          const ipt = await Iptables.open({ netns: tns.path, backend: 'legacy', lockFile, lockWaitSeconds: 60, timeoutMs: 700 });
          const before = await ipt.save();
          const holder = await holdLock(lockFile, 3);
          const started = Date.now();
          const err = await rejection(ipt.apply(RULES));
          const took = Date.now() - started;
          expect(err).toBeInstanceOf(ProcessTimeoutError);
          expect(err).toMatchObject({ code: 'ETIMEDOUT', timeoutMs: 700 });
          expect((err as ProcessTimeoutError).argv[0]).toBe('iptables-legacy-restore');
          expect(took).toBeGreaterThanOrEqual(650);
          expect(took).toBeLessThan(2500);
          await holder.done;
          expect(await ipt.save()).toEqual(before);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('the nft backend takes no xtables lock', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'podnet-lock-'));
      try {
        const lockFile = join(dir, 'xtables.lock');
        await withNetns(async (tns) => {
          const ipt = await Iptables.open({ netns: tns.path, backend: 'nft', lockFile, lockWaitSeconds: 1 });
          const holder = await holdLock(lockFile, 2);
          const started = Date.now();
          await ipt.apply(RULES);
          expect(Date.now() - started).toBeLessThan(900);
          expect((await ipt.verify(RULES)).inSync).toBe(true);
          await holder.done;
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
  missingBinary('flock', 'iptables-legacy-restore', 'iptables-nft-restore'),
);
