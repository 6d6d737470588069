// One suite, four targets: the fake modelling each backend, and real iptables-restore with the nft and the legacy
// backend in fresh namespaces. What passes on the fake must hold on the kernel.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, IptablesRestoreError, RuleSet, type IptablesState } from '../../lib/index.js';
import { SCRATCH_PREFIX } from '../../lib/iptables/canonical.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { TARGETS, type TargetKind, backendOf, withTarget } from './targets.js';
import { rejection } from '../helpers/rejection.js';

const REDIRECT = ['-p', 'tcp', '-j', 'REDIRECT', '--to-ports', '15006'];

function istio(): RuleSet {
  return new RuleSet()
    .chain('nat', 'ISTIO_PRERT')
    .chain('nat', 'ISTIO_POSTRT')
    .append('nat', 'PREROUTING', ['-j', 'ISTIO_PRERT'])
    .insert('nat', 'POSTROUTING', 1, ['-j', 'ISTIO_POSTRT'])
    .append('nat', 'ISTIO_PRERT', REDIRECT)
    .append('nat', 'ISTIO_POSTRT', ['-o', 'lo', '-j', 'RETURN']);
}

const FOREIGN = '*nat\n-A PREROUTING -s 10.1.0.0/16 -j ACCEPT\n-A POSTROUTING -o eth0 -j MASQUERADE\nCOMMIT\n';


function nat(state: IptablesState): Record<string, { policy: string | null; rules: string[][] }> | undefined {
  return state.tables.nat?.chains;
}

function contract(kind: TargetKind): void {
  const backend = backendOf(kind);

  it('apply creates the owned chains and rules, in order', async () => {
    await withTarget(kind, async ({ ipt }) => {
      expect(ipt.backend).toBe(backend);
      await ipt.apply(istio());
      expect(nat(await ipt.save())).toEqual({
        PREROUTING: { policy: 'ACCEPT', rules: [['-j', 'ISTIO_PRERT']] },
        INPUT: { policy: 'ACCEPT', rules: [] },
        OUTPUT: { policy: 'ACCEPT', rules: [] },
        POSTROUTING: { policy: 'ACCEPT', rules: [['-j', 'ISTIO_POSTRT']] },
        ISTIO_PRERT: { policy: null, rules: [REDIRECT] },
        ISTIO_POSTRT: { policy: null, rules: [['-o', 'lo', '-j', 'RETURN']] },
      });
    });
  });

  it('applying twice leaves the same state as once, next to foreign rules', async () => {
    await withTarget(kind, async ({ ipt }) => {
      await ipt.restore(FOREIGN);
      await ipt.apply(istio());
      const once = await ipt.save();
      await ipt.apply(istio());
      await ipt.apply(istio());
      expect(await ipt.save()).toEqual(once);
      expect(nat(once)!.PREROUTING!.rules).toEqual([['-s', '10.1.0.0/16', '-j', 'ACCEPT'], ['-j', 'ISTIO_PRERT']]);
      expect(nat(once)!.POSTROUTING!.rules).toEqual([['-j', 'ISTIO_POSTRT'], ['-o', 'eth0', '-j', 'MASQUERADE']]);
    });
  });

  it('recognises rules written otherwise than iptables-save prints them: no duplicates, in sync, removable', async () => {
    await withTarget(kind, async ({ ipt }) => {
      const rules = new RuleSet()
        .chain('filter', 'PODNET_NC')
        .append('filter', 'INPUT', ['-p', 'tcp', '-j', 'PODNET_NC'])
        .append('filter', 'INPUT', ['-p', 'tcp', '--dport', '8080', '-j', 'ACCEPT'])
        .append('filter', 'PODNET_NC', ['-s', '10.0.0.1', '-p', 'tcp', '--dport', '22', '-j', 'RETURN']);
      const before = await ipt.save();
      await ipt.apply(rules);
      const once = await ipt.save();
      await ipt.apply(rules);
      expect(await ipt.save()).toEqual(once);
      expect(once.tables.filter!.chains.INPUT!.rules).toHaveLength(2);
      expect(once.tables.filter!.chains.PODNET_NC!.rules).toHaveLength(1);
      expect(Object.keys(once.tables.filter!.chains).filter((c) => c.startsWith(SCRATCH_PREFIX))).toEqual([]);
      expect(await ipt.verify(rules)).toEqual({ inSync: true, missing: [], unexpected: [], reordered: [] });
      expect(await ipt.reconcile(rules)).toEqual({ changed: false });
      expect(await ipt.remove(rules)).toEqual({ changed: true });
      expect(await ipt.save()).toEqual(before);
    });
  });

  it('verify reports in sync after apply, then exactly what drifted', async () => {
    await withTarget(kind, async ({ ipt }) => {
      const rules = istio();
      await ipt.apply(rules);
      expect(await ipt.verify(rules)).toEqual({ inSync: true, missing: [], unexpected: [], reordered: [] });
      await ipt.restore(
        '*nat\n-A ISTIO_PRERT -j RETURN\n-D PREROUTING -j ISTIO_PRERT\n-A POSTROUTING -j ISTIO_POSTRT\nCOMMIT\n',
      );
      expect(await ipt.verify(rules)).toEqual({
        inSync: false,
        missing: [{ table: 'nat', chain: 'PREROUTING', args: ['-j', 'ISTIO_PRERT'] }],
        unexpected: [
          { table: 'nat', chain: 'ISTIO_PRERT', args: ['-j', 'RETURN'] },
          { table: 'nat', chain: 'POSTROUTING', args: ['-j', 'ISTIO_POSTRT'] },
        ],
        reordered: [],
      });
    });
  });

  it('verify reports a missing owned chain and a reordered one', async () => {
    await withTarget(kind, async ({ ipt }) => {
      const rules = new RuleSet()
        .chain('filter', 'PODNET_A')
        .chain('filter', 'PODNET_B')
        .append('filter', 'PODNET_A', ['-s', '10.0.0.1/32', '-j', 'RETURN'])
        .append('filter', 'PODNET_A', ['-s', '10.0.0.2/32', '-j', 'RETURN'])
        .append('filter', 'PODNET_B', ['-j', 'RETURN']);
      await ipt.restore('*filter\n:PODNET_A - [0:0]\n-A PODNET_A -s 10.0.0.2/32 -j RETURN\n-A PODNET_A -s 10.0.0.1/32 -j RETURN\nCOMMIT\n');
      expect(await ipt.verify(rules)).toEqual({
        inSync: false,
        missing: [
          { table: 'filter', chain: 'PODNET_B', args: null },
          { table: 'filter', chain: 'PODNET_B', args: ['-j', 'RETURN'] },
        ],
        unexpected: [],
        reordered: [{ table: 'filter', chain: 'PODNET_A' }],
      });
    });
  });

  it('reconcile applies only when something differs', async () => {
    await withTarget(kind, async ({ ipt }) => {
      const rules = istio();
      expect(await ipt.reconcile(rules)).toEqual({ changed: true });
      const synced = await ipt.save();
      expect(await ipt.reconcile(rules)).toEqual({ changed: false });
      await ipt.restore('*nat\n-F ISTIO_PRERT\nCOMMIT\n');
      expect(await ipt.reconcile(rules)).toEqual({ changed: true });
      expect(await ipt.save()).toEqual(synced);
      expect((await ipt.verify(rules)).inSync).toBe(true);
    });
  });

  it('remove puts back the state from before apply and is idempotent', async () => {
    await withTarget(kind, async ({ ipt }) => {
      await ipt.restore(FOREIGN);
      const before = await ipt.save();
      await ipt.apply(istio());
      expect(await ipt.remove(istio())).toEqual({ changed: true });
      expect(await ipt.save()).toEqual(before);
      expect(await ipt.remove(istio())).toEqual({ changed: false });
    });
  });

  it('apply is all-or-nothing across tables: a failing later table rolls the earlier ones back', async () => {
    await withTarget(kind, async ({ ipt }) => {
      await ipt.restore(FOREIGN);
      await ipt.apply(new RuleSet().chain('nat', 'ISTIO_PRERT').append('nat', 'PREROUTING', ['-j', 'ISTIO_PRERT']).append('nat', 'ISTIO_PRERT', ['-j', 'RETURN']));
      const before = await ipt.save();
      const failing = istio().append('filter', 'INPUT', ['-j', 'DNAT', '--to-destination', '10.9.9.9']);
      const err = await rejection(ipt.apply(failing));
      expect(err).toBeInstanceOf(IptablesRestoreError);
      expect(err).toMatchObject({ code: 'ERR_IPTABLES_RESTORE', table: 'filter', reason: backend === 'nft' ? 'kernel-rejected' : 'failed' });
      expect(await ipt.save()).toEqual(before);
    });
  });

  it('a failure names its line, table and rule (the whole block when the line is COMMIT)', async () => {
    await withTarget(kind, async ({ ipt }) => {
      const rules = new RuleSet().chain('nat', 'PODNET_X').append('nat', 'PODNET_X', ['-j', 'PODNET_NOPE']);
      const err = (await rejection(ipt.apply(rules))) as IptablesRestoreError;
      expect(err).toBeInstanceOf(IptablesRestoreError);
      expect(err).toMatchObject({ table: 'nat', reason: 'missing-target', exitCode: 2 });
      // A new namespace's apply: the owned chain is created with -N (fresh.ts), and the input is what ran.
      const block = '*nat\n-N PODNET_X\n-A PODNET_X -j PODNET_NOPE\nCOMMIT';
      if (backend === 'legacy') expect(err).toMatchObject({ line: 3, rule: '-A PODNET_X -j PODNET_NOPE' });
      else expect(err).toMatchObject({ line: 4, rule: block });
      expect(err.input).toBe(`${block}\n`);
      expect(await ipt.save()).toEqual({ tables: {} });
    });
  });

  it('deleting a referenced chain fails and changes nothing', async () => {
    await withTarget(kind, async ({ ipt }) => {
      await ipt.restore('*filter\n:PODNET_C - [0:0]\n-A INPUT -j PODNET_C\nCOMMIT\n');
      const before = await ipt.save();
      const err = await rejection(ipt.restore('*filter\n-X PODNET_C\nCOMMIT\n'));
      expect(err).toMatchObject({ line: 2, table: 'filter', reason: backend === 'nft' ? 'chain-busy' : 'failed' });
      expect(await ipt.save()).toEqual(before);
    });
  });

  it('arguments with spaces, quotes and backslashes survive a round trip through iptables-save', async () => {
    await withTarget(kind, async ({ ipt }) => {
      const comments = ['a b', 'say "hi"', "it's", 'back\\slash', 'x" -A INPUT -j DROP "y', 'café ü'];
      const rules = new RuleSet().chain('filter', 'PODNET_Q');
      for (const c of comments) rules.append('filter', 'PODNET_Q', ['-m', 'comment', '--comment', c, '-j', 'RETURN']);
      await ipt.apply(rules);
      const saved = (await ipt.save()).tables.filter!.chains.PODNET_Q!.rules;
      expect(saved).toEqual(comments.map((c) => ['-m', 'comment', '--comment', c, '-j', 'RETURN']));
      expect((await ipt.verify(rules)).inSync).toBe(true);
    });
  });

  it('an argument cannot inject `-A INPUT -j DROP`', async () => {
    await withTarget(kind, async ({ ipt, runs }) => {
      const before = await ipt.save();
      const runsBefore = runs();
      const newline = new RuleSet().append('filter', 'INPUT', ['-m', 'comment', '--comment', 'x\n-A INPUT -j DROP', '-j', 'ACCEPT']);
      expect(() => ipt.apply(newline)).toThrow(InvalidArgumentError);
      expect(runs()).toBe(runsBefore);
      expect(await ipt.save()).toEqual(before);

      // Quotes and a whole restore command inside one argument: rendered quoted, it stays a comment.
      const quoted = 'x" -j DROP -A INPUT -j DROP "';
      await ipt.apply(new RuleSet().append('filter', 'INPUT', ['-m', 'comment', '--comment', quoted, '-j', 'ACCEPT']));
      const input = (await ipt.save()).tables.filter!.chains.INPUT!;
      expect(input.rules).toEqual([['-m', 'comment', '--comment', quoted, '-j', 'ACCEPT']]);
    });
  });
}

describe('iptables contract: fake (nft model)', () => contract('fake-nft'));
describe('iptables contract: fake (legacy model)', () => contract('fake-legacy'));
for (const kind of TARGETS.filter((k) => !k.startsWith('fake'))) {
  describePrivileged(`iptables contract: real ${kind}`, () => contract(kind), missingBinary(`iptables-${kind}-restore`));
}
