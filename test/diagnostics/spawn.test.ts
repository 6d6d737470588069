// podnet:netns:spawn: each program runInNetns and startInNetns ran in a throwaway namespace, with its exit or the
// code of the error it ended with.
import { expect, it } from 'vitest';

import { DIAGNOSTICS_CHANNELS, type NetnsSpawnMessage, runInNetns, startInNetns } from '../../lib/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { expectTiming, record } from './recorder.js';

function about(m: NetnsSpawnMessage) {
  return { argv: m.argv, netns: m.netns, exitCode: m.exitCode, signal: m.signal, outcome: m.outcome };
}

describePrivileged('podnet:netns:spawn', () => {
  it('publishes a run that exits 0, one that exits 1, and a started one fed through stdin', async () => {
    await withNetns(async (ns) => {
      using rec = record(DIAGNOSTICS_CHANNELS.netnsSpawn);
      const before = performance.now();
      const shown = await runInNetns(ns.path, ['ip', '-o', 'link', 'show', 'lo']);
      expect(shown.exitCode).toBe(0);
      expect((await runInNetns(ns.path, ['false'])).exitCode).toBe(1);
      const cat = startInNetns(ns.path, ['cat']);
      cat.end('hello');
      expect((await cat.result).stdout).toBe('hello');
      const after = performance.now();
      const messages = rec.take();
      expect(messages.map(about)).toEqual([
        { argv: ['ip', '-o', 'link', 'show', 'lo'], netns: ns.path, exitCode: 0, signal: null, outcome: 'ok' },
        { argv: ['false'], netns: ns.path, exitCode: 1, signal: null, outcome: 'ERR_EXIT_STATUS' },
        { argv: ['cat'], netns: ns.path, exitCode: 0, signal: null, outcome: 'ok' },
      ]);
      for (const m of messages) expectTiming(m, before, after);
    });
  });

  it('publishes a missing program, a missing namespace and a deadline with their error codes', async () => {
    await withNetns(async (ns) => {
      using rec = record(DIAGNOSTICS_CHANNELS.netnsSpawn);
      const missing = await runInNetns(ns.path, ['podnet-no-such-program']).catch((e: unknown) => e);
      const gone = await runInNetns(`${ns.path}-gone`, ['true']).catch((e: unknown) => e);
      const late = await runInNetns(ns.path, ['sleep', '30'], { timeoutMs: 50 }).catch((e: unknown) => e);
      const codes = [missing, gone, late].map((e) => (e as { code: string }).code);
      expect(codes).toEqual(['ENOENT', 'ENOENT', 'ETIMEDOUT']);
      const messages = rec.take();
      expect(messages.map((m) => [m.argv[0], m.netns, m.outcome, m.exitCode])).toEqual([
        ['podnet-no-such-program', ns.path, 'ENOENT', undefined],
        ['true', `${ns.path}-gone`, 'ENOENT', undefined],
        ['sleep', ns.path, 'ETIMEDOUT', undefined],
      ]);
      expect(messages.map((m) => m.error)).toEqual([missing, gone, late]);
    });
  });

  it('publishes nothing for arguments refused before anything starts', async () => {
    using rec = record(DIAGNOSTICS_CHANNELS.netnsSpawn);
    await expect(runInNetns(undefined, [])).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
    expect(() => startInNetns(undefined, ['cat'], { timeoutMs: -1 })).toThrow();
    expect(rec.messages).toEqual([]);
  });
});
