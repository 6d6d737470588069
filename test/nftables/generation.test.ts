// The ruleset generation on the kernel (a fresh namespace per test) and on FakeNftables, through the same client:
// generation() moves with every commit, a batch that carries a generation the ruleset moved on from is refused whole
// (NftablesGenerationError, nothing applied), and reconcile never undoes a write committed between its listing and
// its transaction. The write is made at a seam, the client's run() that reconcile calls, not by timing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  InvalidArgumentError,
  NftablesGenerationError,
  Nftables,
  isGenerationChanged,
  type NftRuleset,
  type NftRunOptions,
  type NftTransaction,
} from '../../lib/index.js';
import { RECONCILE_ATTEMPTS, type RulesetClient, reconcileRuleset } from '../../lib/nftables/ruleset-ops.js';
import { checkRuleset } from '../../lib/nftables/ruleset.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { privilegeGap } from '../helpers/privileged.js';

/** One nf_tables world that several clients open, as several processes would. */
interface World {
  client(): Promise<Nftables>;
  cleanup(): void;
}

const WORLDS: { name: string; gap: string | undefined; make: () => World }[] = [
  {
    name: 'kernel',
    gap: privilegeGap,
    make: () => {
      const ns = new TestNetns('nftg');
      return { client: () => Nftables.open({ netns: ns.path }), cleanup: () => ns.delete() };
    },
  },
  {
    name: 'FakeNftables',
    gap: undefined,
    make: () => {
      const fake = new FakeNftables();
      return { client: () => Nftables.open({ netlink: fake }), cleanup: () => undefined };
    },
  },
];

const T = { family: 'ip', name: 'pn-gen' } as const;
const SET = 'pods';

function ruleset(size?: number): NftRuleset {
  const set = { family: 'ip', table: T.name, name: SET, type: 'ipv4_addr', ...(size === undefined ? {} : { size }) } as const;
  return { tables: [{ ...T, sets: [set], chains: [], rules: [] }], owned: [] };
}

/** The set's elements in address order (the kernel lists a hash set in its own order). */
async function sorted(nft: Nftables) {
  return (await nft.elements(T, SET)).sort((a, b) => a.address.localeCompare(b.address, 'en', { numeric: true }));
}

/** A RulesetClient over nft whose run() first lets `before` (another client's write) happen; it counts the runs. */
function interleaved(nft: Nftables, before: (run: number) => Promise<void>): RulesetClient & { runs: number } {
  const client = {
    runs: 0,
    transaction: () => nft.transaction(),
    run: async (tx: NftTransaction, options?: NftRunOptions) => {
      client.runs++;
      await before(client.runs);
      return nft.run(tx, options);
    },
    generation: () => nft.generation(),
    tables: (family?: Parameters<Nftables['tables']>[0]) => nft.tables(family),
    chains: (t: Parameters<Nftables['chains']>[0]) => nft.chains(t),
    sets: (t: Parameters<Nftables['sets']>[0]) => nft.sets(t),
    rules: (t: Parameters<Nftables['rules']>[0]) => nft.rules(t),
    elements: (t: Parameters<Nftables['elements']>[0], set: string) => nft.elements(t, set),
  };
  return client;
}

for (const w of WORLDS) {
  describe.skipIf(w.gap !== undefined)(`nftables generation on ${w.name}${w.gap ? ` (${w.gap})` : ''}`, () => {
    let world: World;
    let mine: Nftables;
    let other: Nftables;

    beforeEach(async () => {
      world = w.make();
      mine = await world.client();
      other = await world.client();
    });
    afterEach(() => {
      mine?.close();
      other?.close();
      world?.cleanup();
    });

    it('moves with every commit by any client; a batch at a generation the ruleset left is refused whole, at the current one applied', async () => {
      const before = await mine.generation();
      expect(before).toBeGreaterThan(0);
      expect(await other.generation()).toBe(before);
      await other.run(other.transaction().addTable(T));
      const after = await mine.generation();
      expect(after).not.toBe(before);

      const tx = mine.transaction().addTable({ family: 'ip', name: 'pn-late' });
      const err = await mine.run(tx, { generation: before }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(NftablesGenerationError);
      expect(err).toMatchObject({ code: 'ERESTART', errno: -85, operation: 'run', retryable: true, attempts: 1, generation: before });
      expect(isGenerationChanged(err)).toBe(true);
      expect((await mine.tables('ip')).map((t) => t.name)).toEqual([T.name]);

      await mine.run(tx, { generation: after });
      expect((await mine.tables('ip')).map((t) => t.name).sort()).toEqual(['pn-gen', 'pn-late']);
    });

    it('refuses a generation option that no generation() returns, before anything is sent', async () => {
      const tx = mine.transaction().addTable(T);
      const cases: [string, unknown, string, string][] = [
        ['zero, which the kernel reads as "do not check"', { generation: 0 }, 'ERR_INVALID_ARG_VALUE', 'options.generation'],
        ['past 32 bits', { generation: 2 ** 32 }, 'ERR_INVALID_ARG_VALUE', 'options.generation'],
        ['a fraction', { generation: 1.5 }, 'ERR_INVALID_ARG_VALUE', 'options.generation'],
        ['a string', { generation: '3' }, 'ERR_INVALID_ARG_TYPE', 'options.generation'],
        ['a misspelt key', { generaton: 3 }, 'ERR_INVALID_ARG_VALUE', 'options.generaton'],
      ];
      for (const [name, options, code, argument] of cases) {
        const err = await mine.run(tx, options as NftRunOptions).then(() => undefined, (e: unknown) => e);
        expect(err, name).toBeInstanceOf(InvalidArgumentError);
        expect(err, name).toMatchObject({ code, argument });
      }
      expect(await mine.tables('ip')).toEqual([]);
    });

    it('reconcile keeps an element another client added between its listing and its transaction (a set remade: its size taken away)', async () => {
      // A size can be given to a set in place, not taken away: the set is deleted and made again, its elements copied.
      await mine.apply(ruleset(4096));
      await mine.addElement(T, SET, { address: '10.0.0.7', comment: 'pod-a' });
      const client = interleaved(mine, async (run) => {
        // The other client's add resolves before reconcile's batch is sent: an acknowledged write.
        if (run === 1) await other.addElement(T, SET, { address: '10.0.0.9', comment: 'pod-b' });
      });
      expect(await reconcileRuleset(client, checkRuleset(ruleset()))).toEqual({ changed: true });
      expect(await sorted(mine)).toEqual([
        { address: '10.0.0.7', comment: 'pod-a' },
        { address: '10.0.0.9', comment: 'pod-b' },
      ]);
      expect((await mine.sets(T)).find((s) => s.name === SET)?.size).toBeUndefined();
      // The first batch was planned without the element and refused; the second carried it over.
      expect(client.runs).toBe(2);
      expect(await mine.reconcile(ruleset())).toEqual({ changed: false });
    });

    it(`reconcile gives up after ${RECONCILE_ATTEMPTS} refused plans with a retryable error, having applied nothing and lost nothing`, async () => {
      await mine.apply(ruleset(4096));
      const added: string[] = [];
      const client = interleaved(mine, async (run) => {
        const address = `10.0.1.${run}`;
        await other.addElement(T, SET, { address });
        added.push(address);
      });
      const err = await reconcileRuleset(client, checkRuleset(ruleset())).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(NftablesGenerationError);
      expect(err).toMatchObject({ code: 'ERESTART', errno: -85, operation: 'reconcile', retryable: true, attempts: RECONCILE_ATTEMPTS });
      expect((err as Error).message).toMatch(/changed between its listing and its transaction in each of 5 attempts/);
      expect(client.runs).toBe(RECONCILE_ATTEMPTS);
      expect((await mine.sets(T)).find((s) => s.name === SET)?.size).toBe(4096);
      expect((await sorted(mine)).map((e) => e.address)).toEqual(added);
      // Once the other client is quiet, the same reconcile goes through with everything it added.
      expect(await mine.reconcile(ruleset())).toEqual({ changed: true });
      expect((await mine.sets(T)).find((s) => s.name === SET)?.size).toBeUndefined();
      expect((await sorted(mine)).map((e) => e.address)).toEqual(added);
    });
  });
}
