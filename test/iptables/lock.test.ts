// Locks and deadlines with the legacy backend: a held xtables lock ends in a typed timeout after lockWaitSeconds,
// and a run that would wait longer than its deadline is killed and reported. The lock is a per-test file
// (XTABLES_LOCKFILE), so the host's /run/xtables.lock is never touched.
import { spawn } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
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
  NetnsRunner,
  type NetnsSpawnMessage,
} from '../../lib/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';


/**
 * Holds an exclusive flock on file (as iptables-legacy takes it) until release() and resolves once it is held. The
 * holder is its own process group (flock and the sleep it runs), so release() ends both and nothing is left behind.
 * Holding until released, rather than for a fixed time, keeps the tests' bounds independent of how loaded the machine
 * is: an operation that waited for the holder would never finish before release().
 */
async function holdLock(file: string): Promise<{ release: () => Promise<void> }> {
  const holder = spawn('flock', ['--exclusive', '--close', file, 'sleep', '120'], { detached: true, stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => holder.once('exit', () => resolve()));
  const release = async () => {
    try {
      process.kill(-holder.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
    await exited;
  };
  const end = Date.now() + 10_000;
  while (Date.now() < end) {
    const probe = await runInNetns(undefined, ['flock', '--nonblock', file, 'true'], { timeoutMs: 5000 });
    if (probe.exitCode !== 0) return { release };
    await new Promise((r) => setTimeout(r, 20));
  }
  await release();
  throw new Error('the lock was not taken within 10 s');
}

// Upper bounds on how late a deadline fires: far above the deadline, far below anything a loaded machine reaches,
// and they only bound lateness (the lock is held until release(), so waiting for it would never end).
const LATE_MS = 30_000;

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
          const holder = await holdLock(lockFile);
          const started = Date.now();
          const err = await rejection(ipt.apply(RULES)).finally(holder.release);
          const took = Date.now() - started;
          expect(err).toBeInstanceOf(IptablesLockTimeoutError);
          expect(err).toMatchObject({ code: 'ERR_IPTABLES_LOCK_TIMEOUT', reason: 'lock-timeout', exitCode: 4 });
          expect(took).toBeGreaterThanOrEqual(900);
          expect(took).toBeLessThan(LATE_MS);
          // Free again: the same client works.
          await ipt.apply(RULES);
          expect((await ipt.verify(RULES)).inSync).toBe(true);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('lockWaitSeconds 0 does not wait: a held lock ends in IptablesLockTimeoutError, not a hang until the deadline', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'podnet-lock-'));
      try {
        const lockFile = join(dir, 'xtables.lock');
        await withNetns(async (tns) => {
          // The deadline is far beyond the 1 s bounded wait: a restore that waited for the lock (as `--wait=0` makes
          // iptables-legacy-restore do) ends in ProcessTimeoutError instead.
          const ipt = await Iptables.open({ netns: tns.path, backend: 'legacy', lockFile, lockWaitSeconds: 0, timeoutMs: LATE_MS });
          const before = await ipt.save();
          const holder = await holdLock(lockFile);
          // No restore program runs while the lock is held: not waiting is not starting one that waits (a bounded
          // `--wait=1` would show here as a restore that ran and ended with status 4).
          const spawned: string[] = [];
          const onSpawn = (m: unknown) => spawned.push((m as NetnsSpawnMessage).argv[0] ?? '');
          subscribe('podnet:netns:spawn', onSpawn);
          const started = Date.now();
          const err = await rejection(ipt.apply(RULES)).finally(() => {
            unsubscribe('podnet:netns:spawn', onSpawn);
            return holder.release();
          });
          const took = Date.now() - started;
          expect(err).toBeInstanceOf(IptablesLockTimeoutError);
          expect(err).toMatchObject({ code: 'ERR_IPTABLES_LOCK_TIMEOUT', reason: 'lock-timeout', exitCode: 4 });
          expect((err as Error).message).toContain('Another app is currently holding the xtables lock');
          expect(spawned.filter((p) => p.endsWith('-restore'))).toEqual([]);
          expect(took).toBeLessThan(LATE_MS);
          expect(await ipt.save()).toEqual(before);
          // Free again: the same client applies at once, and holds the lock while its restore runs, so another
          // iptables-legacy user waits for it as for iptables itself.
          await ipt.apply(RULES);
          expect((await ipt.verify(RULES)).inSync).toBe(true);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('lockWaitSeconds 0: the runner holds the xtables lock for the restore\'s whole life, so other users wait for it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'podnet-lock-'));
      try {
        const lockFile = join(dir, 'xtables.lock');
        const tryLock = async () => (await runInNetns(undefined, ['flock', '--nonblock', '--conflict-exit-code', '7', lockFile, 'true'])).exitCode;
        await withNetns(async (tns) => {
          const runner = new NetnsRunner(tns.path, { timeoutMs: LATE_MS, env: { XTABLES_LOCKFILE: lockFile }, noWaitLockFile: lockFile });
          const started = runner.start(['iptables-legacy-restore', '--noflush', '--wait=1']);
          expect(started).toBeDefined();
          // The restore waits for its input, under the runner's lock: another taker is refused.
          expect(await tryLock()).toBe(7);
          started!.end('*filter\n:PODNET_LOCKED - [0:0]\nCOMMIT\n');
          expect(await started!.result).toMatchObject({ exitCode: 0 });
          expect(await tryLock()).toBe(0);
          // Other programs (a save) take no lock of the runner's.
          expect((await runner.run(['iptables-legacy-save', '-t', 'filter'])).stdout).toContain(':PODNET_LOCKED');
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
          const holder = await holdLock(lockFile);
          const started = Date.now();
          const err = await rejection(ipt.apply(RULES)).finally(holder.release);
          const took = Date.now() - started;
          expect(err).toBeInstanceOf(ProcessTimeoutError);
          expect(err).toMatchObject({ code: 'ETIMEDOUT', timeoutMs: 700 });
          expect((err as ProcessTimeoutError).argv[0]).toBe('iptables-legacy-restore');
          expect(took).toBeGreaterThanOrEqual(650);
          expect(took).toBeLessThan(LATE_MS);
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
          // With lockWaitSeconds 1 and the lock held until release(), an apply that took the lock would end in
          // IptablesLockTimeoutError: succeeding is the proof, no clock needed.
          const holder = await holdLock(lockFile);
          try {
            await ipt.apply(RULES);
            expect((await ipt.verify(RULES)).inSync).toBe(true);
          } finally {
            await holder.release();
          }
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
  missingBinary('flock', 'iptables-legacy-restore', 'iptables-nft-restore'),
);
