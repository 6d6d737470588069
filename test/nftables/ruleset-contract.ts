// The ruleset contract: Nftables.apply / verify / reconcile / remove of a whole NftRuleset, on the kernel
// (contract-kernel.test.ts) and on FakeNftables (fake-contract.test.ts), through the same client and codec.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { InvalidArgumentError, NftPreparedTransaction, NftablesError, Nftables, nftExpr as x, type NftRuleset } from '../../lib/index.js';
import type { NftablesBackend } from './contract.js';

const IN_SYNC = { inSync: true, missing: [], unexpected: [], reordered: [] };

/** Two tables in two families, so one apply is one transaction across both. */
function ruleset(): NftRuleset {
  const v4 = { family: 'ip', table: 'pn-filter' } as const;
  const v6 = { family: 'ip6', table: 'pn-filter6' } as const;
  return {
    tables: [
      {
        family: 'ip',
        name: v4.table,
        comment: 'podnet test',
        sets: [{ ...v4, name: 'pods', type: 'ipv4_addr', comment: 'pod IPs' }, { ...v4, name: 'blocked', type: 'ipv4_addr', flags: ['timeout'] }],
        chains: [
          { ...v4, name: 'forward', type: 'filter', hook: 'forward', priority: 0, policy: 'drop' },
          { ...v4, name: 'pods-in', comment: 'to pods' },
        ],
        rules: [
          { ...v4, chain: 'forward', exprs: [x.addrInSet('ip daddr', 'pods'), x.jump('pods-in')] },
          { ...v4, chain: 'pods-in', exprs: [x.addrInSet('ip saddr', 'blocked'), x.counter(), x.drop()], comment: 'blocked sources' },
          { ...v4, chain: 'pods-in', exprs: [x.l4proto('tcp'), x.port('tcp dport', 8080), x.counter(), x.accept()] },
        ],
      },
      {
        family: 'ip6',
        name: v6.table,
        sets: [],
        chains: [{ ...v6, name: 'output', type: 'filter', hook: 'output', priority: 10 }],
        rules: [{ ...v6, chain: 'output', exprs: [x.port('udp dport', 53), x.counter(), x.accept()] }],
      },
    ],
    owned: [{ family: 'ip', name: 'pn-old' }],
  };
}

export function nftablesRulesetContract(name: string, backend: () => NftablesBackend): void {
  describe(`nftables ruleset contract: ${name}`, () => {
    let world: NftablesBackend;
    let nft: Nftables;
    const V4 = { family: 'ip', name: 'pn-filter' } as const;

    beforeEach(async () => {
      world = backend();
      nft = await world.open();
    });
    afterEach(() => {
      nft?.close();
      world?.cleanup();
    });

    it('applies tables of two families in one transaction, verifies them, and a second apply is the same state', async () => {
      const r = ruleset();
      expect((await nft.verify(r)).missing).toEqual([
        { family: 'ip', table: 'pn-filter' },
        { family: 'ip', table: 'pn-filter', set: 'pods' },
        { family: 'ip', table: 'pn-filter', set: 'blocked' },
        { family: 'ip', table: 'pn-filter', chain: 'forward' },
        { family: 'ip', table: 'pn-filter', chain: 'pods-in' },
        ...r.tables[0]!.rules.map((rule) => ({ family: 'ip', table: 'pn-filter', chain: rule.chain, rule: rule.exprs.flat() })),
        { family: 'ip6', table: 'pn-filter6' },
        { family: 'ip6', table: 'pn-filter6', chain: 'output' },
        { family: 'ip6', table: 'pn-filter6', chain: 'output', rule: r.tables[1]!.rules[0]!.exprs.flat() },
      ]);
      await nft.apply(r);
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      const handles = (await nft.rules(V4)).map((rule) => rule.handle);
      await nft.apply(r);
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      // Flushed and refilled: the same rules again, under new handles.
      expect((await nft.rules(V4)).map((rule) => rule.handle)).not.toEqual(handles);
      expect((await nft.tables()).map((t) => [t.family, t.name, t.comment])).toEqual([['ip', 'pn-filter', 'podnet test'], ['ip6', 'pn-filter6', undefined]]);
      expect(await nft.reconcile(r)).toEqual({ changed: false });
    });

    it('runs a prepared ruleset as apply writes it, again and again, and on another client too', async () => {
      const r = ruleset();
      const prepared = Nftables.prepare(r);
      expect(prepared).toBeInstanceOf(NftPreparedTransaction);
      await nft.run(prepared);
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      const handles = (await nft.rules(V4)).map((rule) => rule.handle);
      await nft.run(prepared);
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      expect((await nft.rules(V4)).map((rule) => rule.handle)).not.toEqual(handles);
      // The same prepared batch through a second client of the same world: nothing in it belongs to one socket.
      const other = await world.open();
      try {
        await other.run(prepared);
        expect(await other.verify(r)).toEqual(IN_SYNC);
      } finally {
        other.close();
      }
    });

    it('prepares a transaction as it is then: later ops do not reach it, a refusal names the op, a bad op throws', async () => {
      const tx = nft.transaction().addTable(V4).addChain({ family: 'ip', table: V4.name, name: 'c' });
      const prepared = Nftables.prepare(tx);
      tx.addChain({ family: 'ip', table: V4.name, name: 'later' });
      expect(prepared.size).toBe(2);
      await nft.run(prepared);
      expect((await nft.chains(V4)).map((c) => c.name)).toEqual(['c']);
      const refused = Nftables.prepare(nft.transaction().addTable(V4).addChain({ family: 'ip', table: 'missing', name: 'c' }));
      await expect(nft.run(refused)).rejects.toMatchObject({ name: 'NftablesError', code: 'ENOENT', index: 1, object: { family: 'ip', table: 'missing', name: 'c' } });
      expect(() => Nftables.prepare(nft.transaction().addTable({ family: 'ip', name: '' }))).toThrow(InvalidArgumentError);
      expect(() => Nftables.prepare({ tables: 'no' } as unknown as NftRuleset)).toThrow(InvalidArgumentError);
      await expect(nft.run(Nftables.prepare(nft.transaction()))).resolves.toBeUndefined();
      await expect(nft.run({} as NftPreparedTransaction)).rejects.toThrow(InvalidArgumentError);
    });

    it('keeps set elements across an apply (they are not part of the ruleset)', async () => {
      const r = ruleset();
      await nft.apply(r);
      await nft.addElement(V4, 'pods', [{ address: '10.0.0.7', comment: 'pod-a' }]);
      await nft.apply(r);
      expect(await nft.elements(V4, 'pods')).toEqual([{ address: '10.0.0.7', comment: 'pod-a' }]);
      expect(await nft.reconcile(r)).toEqual({ changed: false });
    });

    it('verifies NAT rules written without the flags the kernel adds (a port given, an address given) as in sync', async () => {
      const t = { family: 'ip', table: 'pn-nat' } as const;
      const port = new Uint8Array([0x3a, 0x9e]); // 15006
      const r: NftRuleset = {
        tables: [{
          family: 'ip',
          name: t.table,
          sets: [],
          chains: [
            { ...t, name: 'prerouting', type: 'nat', hook: 'prerouting', priority: -100 },
            { ...t, name: 'postrouting', type: 'nat', hook: 'postrouting', priority: 100 },
          ],
          rules: [
            { ...t, chain: 'prerouting', exprs: [{ type: 'immediate', dreg: 1, data: port }, { type: 'redirect', protoMin: 1 }] },
            {
              ...t,
              chain: 'postrouting',
              exprs: [
                { type: 'immediate', dreg: 1, data: new Uint8Array([169, 254, 7, 127]) },
                { type: 'immediate', dreg: 2, data: port },
                { type: 'nat', nat: 'snat', family: 'ip', addrMin: 1, protoMin: 2 },
              ],
            },
          ],
        }],
      };
      await nft.apply(r);
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      expect(await nft.reconcile(r)).toEqual({ changed: false });
    });

    it('reports a lost rule, a foreign rule, chain and set, a changed policy and a reordered chain; reconcile restores exactly the ruleset', async () => {
      const r = ruleset();
      await nft.apply(r);
      const podsIn = (await nft.rules(V4)).filter((rule) => rule.chain === 'pods-in');
      const tx = nft.transaction()
        .deleteRule({ family: 'ip', table: V4.name, chain: 'pods-in', handle: podsIn[1]!.handle! })
        .addChain({ family: 'ip', table: V4.name, name: 'foreign' })
        .addRule({ family: 'ip', table: V4.name, chain: 'foreign', exprs: [x.counter()] })
        .addSet({ family: 'ip', table: V4.name, name: 'foreign-set', type: 'ipv4_addr' })
        .addChain({ family: 'ip', table: V4.name, name: 'forward', type: 'filter', hook: 'forward', priority: 0, policy: 'accept' })
        .addTable({ family: 'ip', name: 'pn-old' });
      await nft.run(tx);
      const drift = await nft.verify(r);
      expect(drift.inSync).toBe(false);
      expect(drift.missing).toEqual([
        { family: 'ip', table: V4.name, chain: 'forward' },
        { family: 'ip', table: V4.name, chain: 'pods-in', rule: r.tables[0]!.rules[2]!.exprs.flat() },
      ]);
      expect(drift.unexpected).toEqual([
        { family: 'ip', table: 'pn-old' },
        { family: 'ip', table: V4.name, set: 'foreign-set' },
        { family: 'ip', table: V4.name, chain: 'foreign' },
        { family: 'ip', table: V4.name, chain: 'foreign', rule: [{ type: 'counter', packets: 0, bytes: 0 }] },
      ]);
      expect(await nft.reconcile(r)).toEqual({ changed: true });
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      expect((await nft.tables('ip')).map((t) => t.name)).toEqual(['pn-filter']);
      expect(await nft.reconcile(r)).toEqual({ changed: false });

      // The same rules in another order are reported as reordered, not as missing and unexpected.
      const [a, b] = (await nft.rules(V4)).filter((rule) => rule.chain === 'pods-in');
      await nft.run(nft.transaction().deleteRule({ family: 'ip', table: V4.name, chain: 'pods-in', handle: a!.handle! })
        .addRule({ family: 'ip', table: V4.name, chain: 'pods-in', exprs: r.tables[0]!.rules[1]!.exprs, comment: 'blocked sources' }, { after: b!.handle! }));
      expect(await nft.verify(r)).toEqual({ inSync: false, missing: [], unexpected: [], reordered: [{ family: 'ip', table: V4.name, chain: 'pods-in' }] });
      expect(await nft.reconcile(r)).toEqual({ changed: true });
      expect(await nft.verify(r)).toEqual(IN_SYNC);
    });

    it('remakes a chain whose hook changed and a set whose flags changed, in the same transaction', async () => {
      const r = ruleset();
      await nft.apply(r);
      const moved = ruleset();
      moved.tables[0]!.chains[0] = { family: 'ip', table: V4.name, name: 'forward', type: 'filter', hook: 'input', priority: 0, policy: 'accept' };
      moved.tables[0]!.sets[1] = { family: 'ip', table: V4.name, name: 'blocked', type: 'ipv4_addr' };
      // A plain apply cannot change a hook in place: the kernel refuses, and nothing changes.
      await expect(nft.apply(moved)).rejects.toBeInstanceOf(NftablesError);
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      const drift = await nft.verify(moved);
      expect(drift.missing).toEqual([{ family: 'ip', table: V4.name, set: 'blocked' }, { family: 'ip', table: V4.name, chain: 'forward' }]);
      expect(await nft.reconcile(moved)).toEqual({ changed: true });
      expect(await nft.verify(moved)).toEqual(IN_SYNC);
      expect((await nft.chains(V4)).find((c) => c.name === 'forward')).toMatchObject({ hook: 'input', policy: 'accept' });
    });

    it('changes a set size in place, keeping its elements; taking the size away remakes the set', async () => {
      const r = ruleset();
      await nft.apply(r);
      await nft.addElement(V4, 'pods', [{ address: '10.0.0.7', comment: 'pod-a' }]);
      const sized = ruleset();
      sized.tables[0]!.sets[0] = { ...sized.tables[0]!.sets[0]!, size: 4096 };
      expect((await nft.verify(sized)).missing).toEqual([{ family: 'ip', table: V4.name, set: 'pods' }]);
      expect(await nft.reconcile(sized)).toEqual({ changed: true });
      expect(await nft.verify(sized)).toEqual(IN_SYNC);
      expect((await nft.sets(V4)).find((x) => x.name === 'pods')?.size).toBe(4096);
      expect(await nft.elements(V4, 'pods')).toEqual([{ address: '10.0.0.7', comment: 'pod-a' }]);
      // No size wanted: an add cannot take it away, so the set is made again, its elements added back in it.
      expect(await nft.verify(r)).toMatchObject({ missing: [{ family: 'ip', table: V4.name, set: 'pods' }] });
      expect(await nft.reconcile(r)).toEqual({ changed: true });
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      expect((await nft.sets(V4)).find((x) => x.name === 'pods')?.size).toBeUndefined();
      expect(await nft.elements(V4, 'pods')).toEqual([{ address: '10.0.0.7', comment: 'pod-a' }]);
    });

    it('remakes a set whose flags changed with its elements, in one transaction; a size too small for them changes nothing', async () => {
      const r = ruleset();
      await nft.apply(r);
      const mine = [{ address: '10.0.0.7', comment: 'pod-a' }, { address: '10.0.0.8', comment: 'pod-b' }, { address: '10.0.0.9', comment: undefined }];
      await nft.addElement(V4, 'blocked', mine);
      const plain = ruleset();
      plain.tables[0]!.sets[1] = { family: 'ip', table: V4.name, name: 'blocked', type: 'ipv4_addr' };
      const tiny = ruleset();
      tiny.tables[0]!.sets[1] = { family: 'ip', table: V4.name, name: 'blocked', type: 'ipv4_addr', size: 2 };
      const full = await nft.reconcile(tiny).then(() => undefined, (err: unknown) => err);
      expect(full).toMatchObject({ code: 'ENFILE', op: 'addElement' });
      expect(await nft.verify(r)).toEqual(IN_SYNC);
      expect(await nft.reconcile(plain)).toEqual({ changed: true });
      expect(await nft.verify(plain)).toEqual(IN_SYNC);
      const byAddress = (xs: { address: string }[]): { address: string }[] => [...xs].sort((a, b) => (a.address < b.address ? -1 : 1));
      expect(byAddress(await nft.elements(V4, 'blocked'))).toEqual(mine);
    });

    it('remove deletes the tables and the owned ones in one transaction, and again without error', async () => {
      const r = ruleset();
      await nft.apply(r);
      await nft.run(nft.transaction().addTable({ family: 'ip', name: 'pn-old' }).addTable({ family: 'ip', name: 'someone-else' }));
      await nft.remove(r);
      expect((await nft.tables()).map((t) => t.name)).toEqual(['someone-else']);
      await nft.remove(r);
      expect((await nft.verify(r)).missing.filter((d) => d.chain === undefined && d.set === undefined)).toEqual([
        { family: 'ip', table: 'pn-filter' },
        { family: 'ip6', table: 'pn-filter6' },
      ]);
    });

    it('refuses a malformed ruleset with a typed error naming the field, and changes nothing', async () => {
      await nft.apply(ruleset());
      const wrongTable = ruleset();
      wrongTable.tables[1]!.rules[0]!.table = 'pn-filter';
      const wrongFamily = ruleset();
      wrongFamily.tables[0]!.sets[0]!.family = 'inet';
      const noChain = ruleset();
      noChain.tables[0]!.rules[0]!.chain = 'nowhere';
      const twice = ruleset();
      twice.tables.push(twice.tables[0]!);
      const badExpr = ruleset();
      badExpr.tables[0]!.rules[0]!.exprs = [{ type: 'nonsense' } as never];
      for (const [bad, field] of [
        [wrongTable, 'ruleset.tables[1].rules[0].table'],
        [wrongFamily, 'ruleset.tables[0].sets[0].family'],
        [noChain, 'ruleset.tables[0].rules[0].chain'],
        [twice, 'ruleset.tables[2].name'],
        [{ tables: 'x' }, 'ruleset.tables'],
        [{ tables: [], owned: [{ family: 'nope', name: 'x' }] }, 'ruleset.owned[0].family'],
      ] as const) {
        for (const call of [nft.apply(bad as NftRuleset), nft.verify(bad as NftRuleset), nft.reconcile(bad as NftRuleset), nft.remove(bad as NftRuleset)]) {
          await expect(call).rejects.toBeInstanceOf(InvalidArgumentError);
          await expect(call).rejects.toMatchObject({ code: expect.stringMatching(/^ERR_INVALID_ARG_(VALUE|TYPE)$/), message: expect.stringContaining(field) });
        }
      }
      // An expression the transaction refuses is an argument error too, before anything is sent.
      await expect(nft.apply(badExpr)).rejects.toBeInstanceOf(InvalidArgumentError);
      expect(await nft.verify(ruleset())).toEqual(IN_SYNC);
    });
  });
}
