// Rollback of a multi-table apply whose later table fails: iptables-restore commits each table block on its own, so
// apply undoes the earlier tables itself. Other writers change the same built-in chains meanwhile; the undo must
// delete and put back only the set's own rules, never flush a chain and refill it from the state read before (which
// lost the rules others added in between). Plans first, then the fake and the kernel with both backends, with rules
// added between the apply's steps (through a runner that wraps the real one) and by a concurrent `iptables -A` loop.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import {
  Iptables,
  IptablesRestoreError,
  NetnsRunner,
  RuleSet,
  runInNetns,
  type IptablesRunner,
  type IptablesState,
} from '../../lib/index.js';
import { parseSave } from '../../lib/iptables/text.js';
import { planRollback } from '../../lib/iptables/rollback.js';
import { FakeIptables } from '../../lib/testing/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';

const MESH = new RuleSet()
  .chain('nat', 'MESH_IN')
  .append('nat', 'PREROUTING', ['-j', 'MESH_IN'])
  .append('nat', 'MESH_IN', ['-p', 'tcp', '-j', 'REDIRECT', '--to-ports', '15006']);

const NAT_HEAD = ':PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]';

describe('planRollback', () => {
  const before = parseSave(`*nat
${NAT_HEAD}
:MESH_IN - [0:0]
-A PREROUTING -s 10.1.0.0/16 -j ACCEPT
-A PREROUTING -j MESH_IN
-A PREROUTING -s 10.2.0.0/16 -j ACCEPT
-A MESH_IN -p tcp -j RETURN
COMMIT
`);

  it('deletes the set’s rules by their text and puts the earlier ones back in place, leaving rules added since', () => {
    // The apply refilled MESH_IN and moved the jump to the end; 10.3.0.0/16 was added by someone else meanwhile.
    const after = parseSave(`*nat
${NAT_HEAD}
:MESH_IN - [0:0]
-A PREROUTING -s 10.1.0.0/16 -j ACCEPT
-A PREROUTING -s 10.2.0.0/16 -j ACCEPT
-A PREROUTING -s 10.3.0.0/16 -j ACCEPT
-A PREROUTING -j MESH_IN
-A MESH_IN -p tcp -j REDIRECT --to-ports 15006
COMMIT
`);
    expect(planRollback(MESH, before, after, ['nat']).text).toBe(
      [
        '*nat',
        ':MESH_IN - [0:0]',
        '-D PREROUTING -j MESH_IN',
        '-I PREROUTING 2 -j MESH_IN',
        '-A MESH_IN -p tcp -j RETURN',
        'COMMIT',
        '',
      ].join('\n'),
    );
  });

  it('deletes an owned chain that did not exist, after the jumps into it', () => {
    const after = parseSave(`*nat
${NAT_HEAD}
:MESH_IN - [0:0]
-A PREROUTING -s 10.3.0.0/16 -j ACCEPT
-A PREROUTING -j MESH_IN
-A MESH_IN -p tcp -j REDIRECT --to-ports 15006
COMMIT
`);
    expect(planRollback(MESH, { tables: {} }, after, ['nat']).text).toBe(
      '*nat\n:MESH_IN - [0:0]\n-D PREROUTING -j MESH_IN\n-X MESH_IN\nCOMMIT\n',
    );
  });

  it('has nothing to do for a table that reads as before, whatever others appended', () => {
    const after = parseSave(`*nat
${NAT_HEAD}
:MESH_IN - [0:0]
-A PREROUTING -s 10.1.0.0/16 -j ACCEPT
-A PREROUTING -j MESH_IN
-A PREROUTING -s 10.2.0.0/16 -j ACCEPT
-A PREROUTING -s 10.3.0.0/16 -j ACCEPT
-A MESH_IN -p tcp -j RETURN
COMMIT
`);
    expect(planRollback(MESH, before, after, ['nat']).text).toBe('');
  });

  it('never writes -F: no chain is flushed', () => {
    const after = parseSave(`*nat\n${NAT_HEAD}\n:MESH_IN - [0:0]\n-A PREROUTING -j MESH_IN\n-A MESH_IN -j RETURN\nCOMMIT\n`);
    expect(planRollback(MESH, before, after, ['nat']).lines.filter((l) => l.startsWith('-F'))).toEqual([]);
  });
});

// The set applied first, and a new version of it whose last table (nat) fails: a jump to a chain that does not exist.
function good(): RuleSet {
  return new RuleSet()
    .chain('filter', 'PODNET_RB')
    .append('filter', 'INPUT', ['-j', 'PODNET_RB'])
    .insert('filter', 'FORWARD', 1, ['-j', 'PODNET_RB'])
    .append('filter', 'PODNET_RB', ['-s', '10.0.0.1/32', '-j', 'ACCEPT'])
    .chain('nat', 'PODNET_RBN')
    .append('nat', 'PREROUTING', ['-j', 'PODNET_RBN']);
}

function failing(): RuleSet {
  return new RuleSet()
    .chain('filter', 'PODNET_RB')
    .chain('filter', 'PODNET_RB2')
    .append('filter', 'INPUT', ['-j', 'PODNET_RB'])
    .insert('filter', 'FORWARD', 1, ['-j', 'PODNET_RB'])
    .append('filter', 'OUTPUT', ['-j', 'PODNET_RB2'])
    .append('filter', 'PODNET_RB', ['-s', '10.0.0.2/32', '-j', 'ACCEPT'])
    .append('filter', 'PODNET_RB2', ['-j', 'RETURN'])
    .chain('nat', 'PODNET_RBN')
    .append('nat', 'PREROUTING', ['-j', 'PODNET_RBN'])
    .append('nat', 'PODNET_RBN', ['-j', 'PODNET_NOPE']);
}

const BASE = '*filter\n-A INPUT -s 10.1.0.0/16 -j ACCEPT\n-A FORWARD -s 10.1.0.0/16 -j ACCEPT\nCOMMIT\n';

function foreignRule(n: number): string[] {
  return ['-s', `10.77.${n >> 8}.${n & 255}/32`, '-j', 'ACCEPT'];
}

/** withForeignInput is before with the foreign rules appended to filter INPUT. */
function withForeignInput(before: IptablesState, foreign: string[][]): IptablesState {
  const copy = structuredClone(before);
  copy.tables.filter!.chains.INPUT!.rules.push(...foreign);
  return copy;
}

type Writer = (args: string[]) => Promise<boolean>;

/**
 * interleaving wraps inner so that, while armed, a foreign rule is appended to filter INPUT right after each failed
 * restore (the apply's; earlier tables committed) and right after the iptables-save that follows it (the rollback's
 * read): both windows of a rollback. It has no start(), so apply runs each program through run().
 */
function interleaving(inner: IptablesRunner, write: Writer) {
  const state = { armed: false, acknowledged: [] as string[][], n: 0 };
  let afterFailure = false;
  const add = async () => {
    const args = foreignRule(state.n++);
    if (await write(args)) state.acknowledged.push(args);
  };
  const runner: IptablesRunner = {
    async run(argv, stdin) {
      const result = await inner.run(argv, stdin);
      if (!state.armed) return result;
      const program = argv[0] ?? '';
      if (program.endsWith('-restore') && !argv.includes('--version') && result.exitCode !== 0) {
        afterFailure = true;
        await add();
      } else if (program.endsWith('-save') && afterFailure) {
        afterFailure = false;
        await add();
      }
      return result;
    },
  };
  return { runner, state };
}

async function failingAppliesKeepForeignRules(open: () => Promise<Iptables>, state: { armed: boolean; acknowledged: string[][] }): Promise<void> {
  const ipt = await open();
  await ipt.restore(BASE);
  await ipt.apply(good());
  const before = await ipt.save();
  state.armed = true;
  for (let i = 0; i < 4; i++) {
    // A client of its own each time, as a pod's agent call has: one that wrote the chains before would not try the
    // unread create again (KnownChains), and its window would go untested.
    const err = await rejection((await open()).apply(failing()));
    expect(err).toBeInstanceOf(IptablesRestoreError);
    expect(err).toMatchObject({ table: 'nat' });
    expect((err as IptablesRestoreError).rollbackError).toBeUndefined();
  }
  state.armed = false;
  expect(await ipt.save()).toEqual(withForeignInput(before, state.acknowledged));
  // Every window of each failing apply saw a write: after its unread create (refused: PODNET_RB exists), after the
  // read that follows, after the failed restore, and after the rollback's read.
  expect(state.acknowledged).toHaveLength(16);
  expect((await ipt.verify(good())).inSync).toBe(true);
}

describe('rollback keeps rules others add between the apply’s steps (fake)', () => {
  for (const backend of ['nft', 'legacy'] as const) {
    it(`keeps every acknowledged foreign rule over 4 failed applies (fake ${backend})`, async () => {
      const fake = new FakeIptables();
      const restore = `iptables-${backend}-restore`;
      const { runner, state } = interleaving(fake, async (args) => {
        const r = await fake.run([restore, '--noflush'], `*filter\n-A INPUT ${args.join(' ')}\nCOMMIT\n`);
        return r.exitCode === 0;
      });
      await failingAppliesKeepForeignRules(() => Iptables.open({ runner, backend }), state);
    });
  }
});

/** lockEnv gives legacy programs a lock file of the test's own, so the host's /run/xtables.lock is never taken. */
function withLockDir<T>(fn: (env: Record<string, string>, lockFile: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'podnet-rollback-'));
  const lockFile = join(dir, 'xtables.lock');
  return fn({ LC_ALL: 'C', XTABLES_LOCKFILE: lockFile }, lockFile).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** iptablesAppend is `iptables -A INPUT args` of backend, as another program on the node runs it (argv, no shell). */
function iptablesAppend(backend: 'nft' | 'legacy', netns: string, env: Record<string, string>): Writer {
  return async (args) => {
    const argv = [`iptables-${backend}`, ...(backend === 'legacy' ? ['--wait=30'] : []), '-A', 'INPUT', ...args];
    const result = await runInNetns(netns, argv, { env, timeoutMs: 60_000 });
    return result.exitCode === 0;
  };
}

describePrivileged(
  'rollback keeps rules others add (kernel)',
  () => {
    for (const backend of ['nft', 'legacy'] as const) {
      it(`keeps every acknowledged foreign rule added between the apply's steps, over 4 failed applies (${backend})`, async () => {
        await withLockDir((env, lockFile) =>
          withNetns(async (tns) => {
            const inner = new NetnsRunner(tns.path, { timeoutMs: 30_000, env: { XTABLES_LOCKFILE: lockFile } });
            const { runner, state } = interleaving(inner, iptablesAppend(backend, tns.path, env));
            await failingAppliesKeepForeignRules(() => Iptables.open({ runner, backend, lockFile }), state);
          }),
        );
      });

      it(`keeps every rule a concurrent iptables -A loop acknowledged while applies fail (${backend})`, async () => {
        await withLockDir((env, lockFile) =>
          withNetns(async (tns) => {
            const ipt = await Iptables.open({ netns: tns.path, backend, lockFile, timeoutMs: 30_000 });
            await ipt.restore(BASE);
            await ipt.apply(good());
            const before = await ipt.save();
            const write = iptablesAppend(backend, tns.path, env);
            const acknowledged: string[][] = [];
            let stop = false;
            const loop = (async () => {
              for (let n = 0; !stop; n++) {
                const args = foreignRule(n);
                if (await write(args)) acknowledged.push(args);
              }
            })();
            try {
              for (let i = 0; i < 12; i++) {
                const err = await rejection(ipt.apply(failing()));
                expect(err).toMatchObject({ code: 'ERR_IPTABLES_RESTORE', table: 'nat' });
              }
            } finally {
              stop = true;
              await loop;
            }
            expect(acknowledged.length).toBeGreaterThan(0);
            expect(await ipt.save()).toEqual(withForeignInput(before, acknowledged));
          }),
        );
      });
    }
  },
  missingBinary('iptables-nft', 'iptables-legacy', 'iptables-nft-restore', 'iptables-legacy-restore'),
);
