// What the fake offers beyond the contract suite: a read-only dump, the record of runs, and the same failure as the
// real runner for a program that is not installed.
import { describe, expect, it } from 'vitest';

import { Iptables, PodnetSystemError, RuleSet, isNotFound } from '../../lib/index.js';
import { FakeIptables } from '../../lib/testing/index.js';

describe('FakeIptables', () => {
  it('dumps a copy that callers cannot use to change its state', async () => {
    const fake = new FakeIptables();
    const ipt = await Iptables.open({ runner: fake, backend: 'nft' });
    await ipt.apply(new RuleSet().chain('filter', 'PODNET_F').append('filter', 'PODNET_F', ['-j', 'RETURN']));
    const dump = fake.dump('nft');
    expect(dump.filter!.PODNET_F).toEqual({ policy: null, rules: [['-j', 'RETURN']] });
    dump.filter!.PODNET_F!.rules.push(['-j', 'DROP']);
    expect(fake.dump('nft').filter!.PODNET_F!.rules).toEqual([['-j', 'RETURN']]);
    expect(fake.dump('legacy')).toEqual({});
  });

  it('records every run with its argv', async () => {
    const fake = new FakeIptables();
    const ipt = await Iptables.open({ runner: fake, backend: 'legacy', lockWaitSeconds: 3 });
    await ipt.apply(new RuleSet().chain('nat', 'PODNET_N'));
    // A namespace without the set's chains is written unread: one restore creating them (see fresh.ts).
    expect(fake.calls).toEqual([
      ['iptables-legacy-restore', '--version'],
      ['iptables-legacy-restore', '--noflush', '--wait=3'],
    ]);
    await ipt.apply(new RuleSet().chain('nat', 'PODNET_N'));
    // The chain is this client's own now: apply reads the table and applies over it, without trying the create.
    expect(fake.calls.slice(2)).toEqual([
      ['iptables-legacy-save', '-t', 'nat'],
      ['iptables-legacy-restore', '--noflush', '--wait=3'],
    ]);
    // Another client of the same namespace does not know: its unread create is refused, then it reads and applies.
    const other = await Iptables.open({ runner: fake, backend: 'legacy', lockWaitSeconds: 3 });
    const from = fake.calls.length;
    await other.apply(new RuleSet().chain('nat', 'PODNET_N'));
    expect(fake.calls.slice(from)).toEqual([
      ['iptables-legacy-restore', '--noflush', '--wait=3'],
      ['iptables-legacy-save', '-t', 'nat'],
      ['iptables-legacy-restore', '--noflush', '--wait=3'],
    ]);
    // After remove(), the set's chains are gone: the next apply creates them unread again.
    await other.remove(new RuleSet().chain('nat', 'PODNET_N'));
    const from2 = fake.calls.length;
    await other.apply(new RuleSet().chain('nat', 'PODNET_N'));
    expect(fake.calls.slice(from2)).toEqual([['iptables-legacy-restore', '--noflush', '--wait=3']]);
  });

  it('sends lockWaitSeconds 0 as --wait=1: iptables-legacy-restore takes --wait=0 as "wait forever"', async () => {
    const fake = new FakeIptables();
    const ipt = await Iptables.open({ runner: fake, backend: 'legacy', lockWaitSeconds: 0 });
    await ipt.apply(new RuleSet().chain('nat', 'PODNET_N'));
    expect(fake.calls.at(-1)).toEqual(['iptables-legacy-restore', '--noflush', '--wait=1']);
  });

  it('apply learns forms only for rules outside owned chains, reads only its one table, and verify learns the rest', async () => {
    const fake = new FakeIptables();
    const ipt = await Iptables.open({ runner: fake, backend: 'nft' });
    const owned = new RuleSet().chain('filter', 'PODNET_O').append('filter', 'PODNET_O', ['-s', '10.0.0.1', '-j', 'DROP']);
    await ipt.apply(owned);
    // Nothing to learn and nothing to read: a new namespace gets the owned chain as given, in one restore.
    expect(fake.calls.slice(1)).toEqual([['iptables-nft-restore', '--noflush']]);
    const from0 = fake.calls.length;
    await ipt.apply(owned);
    // Applied over itself: the client wrote the chain, so it reads the one table without trying the create.
    expect(fake.calls.slice(from0)).toEqual([
      ['iptables-nft-save', '-t', 'filter'],
      ['iptables-nft-restore', '--noflush'],
    ]);

    const withJump = new RuleSet()
      .chain('filter', 'PODNET_O')
      .append('filter', 'PODNET_O', ['-s', '10.0.0.1', '-j', 'DROP'])
      .append('filter', 'INPUT', ['-j', 'PODNET_O'])
      .chain('nat', 'PODNET_N');
    const from = fake.calls.length;
    await ipt.apply(withJump);
    // PODNET_O is the client's own, so no unread create is tried; the jump is learned (scratch chain in, read back,
    // cleaned up); the plan spans two tables, so the save reads all.
    expect(fake.calls.slice(from)).toEqual([
      ['iptables-nft-restore', '--noflush'],
      ['iptables-nft-save'],
      ['iptables-nft-restore', '--noflush'],
      ['iptables-nft-save'],
      ['iptables-nft-restore', '--noflush'],
    ]);
    const again = fake.calls.length;
    expect(await ipt.verify(withJump)).toMatchObject({ inSync: true });
    // verify compares the owned rule too, so it learns that one now.
    expect(fake.calls.slice(again)).toHaveLength(4);
  });

  it('apply reads everything when its one table cannot be read alone, as legacy without the table module', async () => {
    const fake = new FakeIptables();
    // iptables-legacy-save -t security exits 1 when the kernel has no such table module; the full save works.
    const runner = {
      run: (argv: readonly string[], stdin?: string) =>
        argv[0] === 'iptables-legacy-save' && argv[1] === '-t'
          ? Promise.resolve({ exitCode: 1, stdout: '', stderr: `iptables-legacy-save v1.8.9 (legacy): Cannot initialize: Table does not exist\n` })
          : fake.run(argv, stdin),
    };
    const ipt = await Iptables.open({ runner, backend: 'legacy' });
    // A plain rule in a built-in chain: the set is never applied unread, so apply reads first.
    const rules = new RuleSet().chain('security', 'PODNET_S').append('security', 'PODNET_S', ['-j', 'RETURN']);
    await ipt.apply(rules.append('security', 'INPUT', ['-j', 'ACCEPT']));
    // The last two runs are the apply's (before them the INPUT rule's form is learned).
    expect(fake.calls.slice(-2)).toEqual([['iptables-legacy-save'], ['iptables-legacy-restore', '--noflush', '--wait=5']]);
    expect(fake.dump('legacy').security!.PODNET_S!.rules).toEqual([['-j', 'RETURN']]);
  });

  it('rejects a program it does not know as the real runner does for a missing binary', async () => {
    const err = await new FakeIptables().run(['nft', 'list', 'ruleset']).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ENOENT', syscall: 'execve', path: 'nft' });
    expect(isNotFound(err)).toBe(true);
  });

  it('flushes the tables it restores without --noflush, as iptables-restore does', async () => {
    const fake = new FakeIptables();
    await fake.run(['iptables-nft-restore', '-n'], '*filter\n:PODNET_F - [0:0]\n-A INPUT -j PODNET_F\nCOMMIT\n');
    const result = await fake.run(['iptables-nft-restore'], '*filter\n-A INPUT -j ACCEPT\nCOMMIT\n');
    expect(result.exitCode).toBe(0);
    expect(fake.dump('nft').filter).toEqual({
      INPUT: { policy: 'ACCEPT', rules: [['-j', 'ACCEPT']] },
      FORWARD: { policy: 'ACCEPT', rules: [] },
      OUTPUT: { policy: 'ACCEPT', rules: [] },
    });
  });

  it('answers iptables-save for one table with -t', async () => {
    const fake = new FakeIptables();
    await fake.run(['iptables-nft-restore', '-n'], '*nat\n-A PREROUTING -j ACCEPT\nCOMMIT\n*filter\n-A INPUT -j DROP\nCOMMIT\n');
    const saved = await fake.run(['iptables-nft-save', '-t', 'nat']);
    expect(saved.stdout).toContain('*nat\n');
    expect(saved.stdout).toContain('-A PREROUTING -j ACCEPT\n');
    expect(saved.stdout).not.toContain('*filter');
  });

  it('runs the operations of one client one at a time, in call order', async () => {
    const fake = new FakeIptables();
    let inFlight = 0;
    let maxInFlight = 0;
    // Every run takes a few ms, so that unserialised operations would overlap.
    const slow = {
      async run(argv: readonly string[], stdin?: string) {
        inFlight += 1;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 3));
        try {
          return await fake.run(argv, stdin);
        } finally {
          inFlight -= 1;
        }
      },
    };
    const ipt = await Iptables.open({ runner: slow, backend: 'nft' });
    const sets = [1, 2, 3, 4, 5].map((n) =>
      new RuleSet().chain('filter', 'PODNET_S').append('filter', 'PODNET_S', ['-m', 'comment', '--comment', `v${n}`, '-j', 'RETURN']),
    );
    await Promise.all(sets.map((rules) => ipt.apply(rules)));
    expect(maxInFlight).toBe(1);
    expect(fake.dump('nft').filter!.PODNET_S!.rules).toEqual([['-m', 'comment', '--comment', 'v5', '-j', 'RETURN']]);
  });
});
