// A child killed with SIGKILL mid-restore, on the real kernel (issue 15). Iptables.apply's iptables-restore is
// started for real and given its input but for the final COMMIT, so its transaction is open; then it is killed from
// outside. iptables-restore commits a table only at COMMIT (nft: one netlink batch; legacy: one table replace), so
// the kill must leave the rules exactly as they were. Found: apply rejects with IptablesRestoreError (exit -1, stderr
// naming SIGKILL), the child is reaped, iptables-save shows the state from before, the client goes on.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

import { Iptables, IptablesRestoreError, RuleSet, runInNetns } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';
import { InterceptingRunner, rawSave, restoreProcess, waitingForInput, withoutCommit } from './helpers/iptables.js';
import { zombies } from './helpers/process.js';

const FOREIGN = '*filter\n-A INPUT -s 10.1.0.0/16 -j ACCEPT\n-A OUTPUT -o lo -j ACCEPT\nCOMMIT\n';

/** Two versions of one rule set: the same jump from INPUT, different rules in the owned chain. */
function rules(version: 1 | 2): RuleSet {
  const set = new RuleSet().chain('filter', 'PODNET_K').append('filter', 'INPUT', ['-j', 'PODNET_K']);
  if (version === 1) return set.append('filter', 'PODNET_K', ['-p', 'tcp', '--dport', '8080', '-j', 'ACCEPT']);
  return set
    .append('filter', 'PODNET_K', ['-p', 'udp', '--dport', '53', '-j', 'ACCEPT'])
    .append('filter', 'PODNET_K', ['-p', 'tcp', '--dport', '9090', '-j', 'DROP']);
}

// 128 KiB of comment lines (iptables-restore skips them) ahead of the real input: twice the pipe's capacity, so the
// restore has read past them, not merely been handed them, when it is seen waiting for more with that much read.
const PADDING = '# podnet fault test: padding\n'.repeat(4520);

/** Whether the lock file is held (flock --nonblock fails): iptables-legacy-restore holds it from its first table. */
async function lockHeld(file: string): Promise<boolean> {
  return (await runInNetns(undefined, ['flock', '--nonblock', file, 'true'])).exitCode !== 0;
}

for (const backend of ['nft', 'legacy'] as const) {
  describePrivileged(
    `iptables-restore killed with SIGKILL mid-transaction (${backend})`,
    () => {
      it('rejects with IptablesRestoreError, reaps the child and leaves the rules as they were; the client goes on', async () => {
        const dir = mkdtempSync(join(tmpdir(), 'podnet-kill-'));
        try {
          const lockFile = join(dir, 'xtables.lock');
          using tns = new TestNetns(`kill-${backend}`);
          const runner = new InterceptingRunner(tns.path, { timeoutMs: 60_000, env: { LC_ALL: 'C', XTABLES_LOCKFILE: lockFile } });
          const ipt = await Iptables.open({ runner, backend });
          await ipt.restore(FOREIGN);
          await ipt.apply(rules(1));
          const before = await rawSave(runner, backend);
          const parsedBefore = await ipt.save();
          expect(before).toContain('-A PODNET_K -p tcp -m tcp --dport 8080 -j ACCEPT');

          let killed = 0;
          runner.interceptNextRestore(async (input, program) => {
            const open = PADDING + withoutCommit(input);
            program.write(open);
            const pid = await restoreProcess();
            await waitingForInput(pid, PADDING.length);
            if (backend === 'legacy') {
              // Hard proof that the transaction is open: the restore read its table and took the lock for it.
              expect(await lockHeld(lockFile)).toBe(true);
            }
            process.kill(pid, 'SIGKILL');
            killed = pid;
            // The apply's own restore (it declares the owned chain), not the create (`-N`) apply tries first on a
            // namespace that may be new (refused here: the chain exists) nor the runs that learn canonical forms.
          }, (input) => /^:PODNET_K /m.test(input));
          const err = await rejection(ipt.apply(rules(2)));
          expect(runner.intercepted).toBe(1);
          expect(err).toBeInstanceOf(IptablesRestoreError);
          expect(err).toMatchObject({ code: 'ERR_IPTABLES_RESTORE', exitCode: -1 });
          expect((err as IptablesRestoreError).stderr).toContain(`iptables-${backend}-restore: killed by SIGKILL`);

          // Reaped (no zombie, the pid is gone), nothing committed, the lock released with the process.
          expect(killed).toBeGreaterThan(0);
          expect(zombies()).toEqual([]);
          expect(await rawSave(runner, backend)).toBe(before);
          expect(await ipt.save()).toEqual(parsedBefore);
          if (backend === 'legacy') expect(await lockHeld(lockFile)).toBe(false);

          await ipt.apply(rules(2));
          expect((await ipt.verify(rules(2))).inSync).toBe(true);
          expect(await rawSave(runner, backend)).toContain('-A PODNET_K -p tcp -m tcp --dport 9090 -j DROP');
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });
    },
    missingBinary(`iptables-${backend}-restore`, `iptables-${backend}-save`, 'flock'),
  );
}
