// apply starts iptables-restore while iptables-save runs (NetnsRunner.start), one such waiting restore at a time in
// the process. Concurrent applies in many namespaces must all land: the one that got the early start and the ones
// that fell back to save-then-restore alike, and a waiting restore must never hold up the saves of the others.
import { expect, it } from 'vitest';

import { Iptables, NetnsRunner, RuleSet } from '../../lib/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

function rulesFor(n: number): RuleSet {
  const rules = new RuleSet().chain('filter', 'PODNET_T').append('filter', 'INPUT', ['-j', 'PODNET_T']);
  for (let i = 0; i < 50; i++) rules.append('filter', 'PODNET_T', ['-s', `10.${n}.0.${i}/32`, '-j', 'ACCEPT']);
  return rules;
}

describePrivileged('apply with the restore started during the save', () => {
  for (const backend of ['nft', 'legacy'] as const) {
    it(`lands concurrent applies in 6 namespaces, each in sync, twice over (${backend})`, async () => {
      await withNetns(async (...all) => {
        const clients = await Promise.all(all.map((ns) => Iptables.open({ netns: ns.path, backend, timeoutMs: 20_000 })));
        for (let round = 0; round < 2; round++) {
          await Promise.all(clients.map((ipt, n) => ipt.apply(rulesFor(n))));
          for (const [n, ipt] of clients.entries()) expect((await ipt.verify(rulesFor(n))).inSync).toBe(true);
        }
      }, 6);
    });
  }

  it('lets one restore wait for its input at a time and frees the slot once the input is given', async () => {
    await withNetns(async (ns) => {
      const runner = new NetnsRunner(ns.path, { timeoutMs: 20_000 });
      const first = runner.start(['iptables-nft-restore', '--noflush']);
      expect(first).toBeDefined();
      // One waiting restore at a time: a second start falls back (undefined) until the first has its input.
      expect(runner.start(['iptables-nft-restore', '--noflush'])).toBeUndefined();
      first!.end('');
      expect((await first!.result).exitCode).toBe(0);
      const again = runner.start(['iptables-nft-restore', '--noflush']);
      expect(again).toBeDefined();
      again!.end('*filter\n:PODNET_X - [0:0]\nCOMMIT\n');
      expect((await again!.result).exitCode).toBe(0);
      const ipt = await Iptables.open({ netns: ns.path, backend: 'nft' });
      expect(Object.keys((await ipt.save()).tables.filter?.chains ?? {})).toContain('PODNET_X');
    });
  });
});
