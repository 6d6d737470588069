// podnet:iptables:run: each program an Iptables client runs, over FakeIptables and over the real programs in a
// throwaway namespace (where podnet:netns:spawn sees the same runs from the spawn layer).
import { describe, expect, it } from 'vitest';

import { DIAGNOSTICS_CHANNELS, Iptables, IptablesRestoreError, type IptablesRunMessage, RuleSet } from '../../lib/index.js';
import { FakeIptables } from '../../lib/testing/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { expectTiming, record } from './recorder.js';

// The plain INPUT rule keeps apply reading iptables-save first (a set of owned chains alone is written unread).
const good = () =>
  new RuleSet()
    .chain('filter', 'PODNET_DIAG')
    .append('filter', 'PODNET_DIAG', ['-s', '10.0.0.1/32', '-j', 'ACCEPT'])
    .append('filter', 'INPUT', ['-s', '10.0.0.2/32', '-j', 'ACCEPT']);
const bad = () => new RuleSet().chain('filter', 'PODNET_DIAG2').append('filter', 'PODNET_DIAG2', ['-j', 'PODNET_NO_SUCH_CHAIN']);

function about(m: IptablesRunMessage) {
  return { kind: m.kind, program: m.argv[0], exitCode: m.exitCode, outcome: m.outcome };
}

/** The same checks against either runner: an apply's runs, then a refused restore's. */
async function checkRuns(ipt: Iptables, restoreProgram: string, saveProgram: string): Promise<void> {
  using rec = record(DIAGNOSTICS_CHANNELS.iptablesRun);
  const before = performance.now();
  await ipt.apply(good());
  const after = performance.now();
  const runs = rec.take();
  expect(runs.length).toBeGreaterThanOrEqual(2);
  for (const run of runs) expectTiming(run, before, after);
  const restores = runs.filter((r) => r.kind === 'restore');
  expect(restores.map(about)).toEqual(restores.map(() => ({ kind: 'restore', program: restoreProgram, exitCode: 0, outcome: 'ok' })));
  expect(restores.some((r) => r.inputBytes > 0 && r.argv.includes('--noflush'))).toBe(true);
  expect(runs.filter((r) => r.kind === 'save').map(about)).toContainEqual({ kind: 'save', program: saveProgram, exitCode: 0, outcome: 'ok' });

  const err = await ipt.apply(bad()).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(IptablesRestoreError);
  const refused = rec.take().filter((r) => r.kind === 'restore' && r.outcome !== 'ok');
  expect(refused.length).toBe(1);
  expect(refused[0]!.outcome).toBe('ERR_EXIT_STATUS');
  expect(refused[0]!.exitCode).toBe((err as IptablesRestoreError).exitCode);
  expect(refused[0]!.error).toBeUndefined();
}

describe('podnet:iptables:run on FakeIptables', () => {
  it('publishes the saves and restores of an apply, and a refused restore with its exit status', async () => {
    const fake = new FakeIptables();
    const ipt = await Iptables.open({ runner: fake, backend: 'nft' });
    await checkRuns(ipt, 'iptables-nft-restore', 'iptables-nft-save');
  });

  it('publishes nothing without a subscriber', async () => {
    const fake = new FakeIptables();
    const ipt = await Iptables.open({ runner: fake, backend: 'nft' });
    const rec = record(DIAGNOSTICS_CHANNELS.iptablesRun);
    rec.stop();
    await ipt.apply(good());
    expect(rec.messages).toEqual([]);
    expect(fake.calls.length).toBeGreaterThan(0);
  });
});

describePrivileged(
  'podnet:iptables:run and podnet:netns:spawn on the kernel',
  () => {
    it('publishes the runs of an apply in a namespace, each also as a spawn in that namespace', async () => {
      await withNetns(async (ns) => {
        const ipt = await Iptables.open({ netns: ns.path, backend: 'nft' });
        using spawns = record(DIAGNOSTICS_CHANNELS.netnsSpawn);
        await checkRuns(ipt, 'iptables-nft-restore', 'iptables-nft-save');
        const seen = spawns.take();
        expect(seen.length).toBeGreaterThanOrEqual(3);
        for (const s of seen) expect(s.netns).toBe(ns.path);
        expect(seen.map((s) => s.argv[0])).toContain('iptables-nft-restore');
        expect(seen.filter((s) => s.outcome !== 'ok').map((s) => [s.argv[0], s.outcome])).toEqual([['iptables-nft-restore', 'ERR_EXIT_STATUS']]);
      });
    });
  },
  missingBinary('iptables-nft-restore'),
);
