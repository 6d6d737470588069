/**
 * Writing, checking and removing an NftRuleset through a client (Nftables.apply / verify / reconcile / remove call
 * these). apply is one transaction, so a refused object leaves every table as it was.
 */
import { NftablesGenerationError, isGenerationChanged, isNotFound } from '../errors.js';
import { type ListedTable, type NftVerifyResult, type Remake, diffTable, ownedDrift } from './ruleset-diff.js';
import { type NftRulesetTable, ownedNotWanted } from './ruleset.js';
import type { NftTransaction } from './transaction.js';
import type { NftChain, NftElement, NftFamily, NftRule, NftSet, NftTable, NftTableRef } from './types.js';

/** The client calls a ruleset needs (Nftables has them; named here so this file does not import the client). */
export interface RulesetClient {
  transaction(): NftTransaction;
  run(tx: NftTransaction, options?: { generation?: number }): Promise<void>;
  generation(): Promise<number>;
  tables(family?: NftFamily): Promise<NftTable[]>;
  chains(table: NftTableRef): Promise<NftChain[]>;
  sets(table: NftTableRef): Promise<NftSet[]>;
  rules(table: NftTableRef): Promise<NftRule[]>;
  elements(table: NftTableRef, set: string): Promise<NftElement[]>;
}

/** The elements of a set that reconcile remakes in the same key type, listed to be added back. */
export interface CarriedElements {
  family: NftFamily;
  table: string;
  set: string;
  elements: NftElement[];
}

/** A checked ruleset (checkRuleset's result). */
export interface CheckedRuleset {
  tables: NftRulesetTable[];
  owned: NftTableRef[];
}

const ref = (t: NftTableRef): NftTableRef => ({ family: t.family, name: t.name });

const NOTHING_TO_REMAKE: Remake = { chains: [], sets: [] };

/** How many times reconcile lists and plans again after the kernel refused its batch for a stale generation. */
export const RECONCILE_ATTEMPTS = 5;

/**
 * applyRuleset writes the ruleset in one transaction. Without a listing first it cannot know of chains and sets in
 * its tables that it does not have: those stay, and `remake` (what verify found) names them for deletion. A plan
 * made from a listing passes the generation the listing was read at, so that the kernel refuses the batch (ERESTART)
 * if anything committed since.
 */
export async function applyRuleset(
  nft: RulesetClient,
  ruleset: CheckedRuleset,
  remake: Remake = NOTHING_TO_REMAKE,
  carried: CarriedElements[] = [],
  generation?: number,
): Promise<void> {
  const tx = applyTransaction(nft.transaction(), ruleset, remake, carried);
  await nft.run(tx, generation === undefined ? {} : { generation });
}

/** applyTransaction fills tx with what applyRuleset sends (the same ops for the same ruleset, every time). */
export function applyTransaction(
  tx: NftTransaction,
  ruleset: CheckedRuleset,
  remake: Remake = NOTHING_TO_REMAKE,
  carried: CarriedElements[] = [],
): NftTransaction {
  for (const t of ruleset.tables) {
    tx.addTable(t.comment === undefined ? ref(t) : { ...ref(t), comment: t.comment }).flushTable(ref(t));
    // After the flush no rule refers to them any more, so they can go before their namesakes are added.
    const mine = (o: { family: NftFamily; table: string }): boolean => o.family === t.family && o.table === t.name;
    for (const c of remake.chains.filter(mine)) tx.deleteChain(c);
    for (const s of remake.sets.filter(mine)) tx.deleteSet(s);
    for (const s of t.sets) tx.addSet(s);
    // Into the new set of the same key type, in the same transaction: a set that cannot hold them (a smaller size)
    // fails the whole apply, and the old set and its elements stay.
    for (const c of carried.filter(mine)) if (c.elements.length > 0) tx.addElement(ref({ family: c.family, name: c.table }), c.set, c.elements);
    for (const c of t.chains) tx.addChain(c);
    for (const r of t.rules) tx.addRule(r);
  }
  // Unwanted tables go last, so the wanted ones get the handles `nft -f` of the same rules gives them. Each is added
  // first, so one already gone is no error.
  for (const t of ownedNotWanted(ruleset.tables, ruleset.owned)) tx.addTable(ref(t)).deleteTable(ref(t));
  return tx;
}

/**
 * reconcileRuleset reads the generation, lists, plans and sends the plan carrying that generation. The plan copies
 * what it listed (the elements of a set it remakes), so a write committed between the listing and the batch would be
 * undone by it: the kernel refuses such a batch with ERESTART instead, and it is listed and planned again, up to
 * `attempts` times; then NftablesGenerationError.
 */
export async function reconcileRuleset(nft: RulesetClient, ruleset: CheckedRuleset, attempts = RECONCILE_ATTEMPTS): Promise<{ changed: boolean }> {
  let last: unknown;
  let generation = 0;
  for (let attempt = 0; attempt < attempts; attempt++) {
    // Read before the listing: a commit after it moves the generation the batch is checked against.
    generation = await nft.generation();
    const { result, remake } = await verifyRuleset(nft, ruleset);
    if (result.inSync) return { changed: false };
    try {
      await applyRuleset(nft, ruleset, remake, await carriedElements(nft, remake), generation);
      return { changed: true };
    } catch (err) {
      if (!isGenerationChanged(err)) throw err;
      last = err;
    }
  }
  const netns = (last as { netns?: string } | undefined)?.netns;
  throw new NftablesGenerationError(
    `nftables reconcile: the ruleset changed between its listing and its transaction in each of ${attempts} attempts (another client is writing); nothing was applied, retry`,
    { operation: 'reconcile', netns, attempts, generation },
    { cause: last },
  );
}

export async function removeRuleset(nft: RulesetClient, ruleset: CheckedRuleset): Promise<void> {
  const tx = nft.transaction();
  const done = new Set<string>();
  for (const t of [...ruleset.tables, ...ruleset.owned]) {
    const key = `${t.family} ${t.name}`;
    if (done.has(key)) continue;
    done.add(key);
    tx.addTable(ref(t)).deleteTable(ref(t));
  }
  await nft.run(tx);
}

async function list(nft: RulesetClient, t: NftTableRef): Promise<ListedTable | undefined> {
  try {
    const [chains, sets, rules] = await Promise.all([nft.chains(ref(t)), nft.sets(ref(t)), nft.rules(ref(t))]);
    // Only this table's: a listing is asked for by table, and what else comes back is no business of this one.
    const own = <T extends { table: string }>(xs: T[]): T[] => xs.filter((o) => o.table === t.name);
    return { chains: own(chains), sets: own(sets), rules: own(rules) };
  } catch (err) {
    // Deleted between the table listing and this one.
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** verifyRuleset compares; `remake` is what an apply must delete first for the tables to end as meant. */
/** carriedElements lists the elements of the sets a reconcile remakes in the same key type. */
export async function carriedElements(nft: RulesetClient, remake: Remake): Promise<CarriedElements[]> {
  const out: CarriedElements[] = [];
  for (const s of remake.sets) {
    if (!s.carry) continue;
    out.push({ family: s.family, table: s.table, set: s.name, elements: await nft.elements({ family: s.family, name: s.table }, s.name) });
  }
  return out;
}

export async function verifyRuleset(nft: RulesetClient, ruleset: CheckedRuleset): Promise<{ result: NftVerifyResult; remake: Remake }> {
  const result: NftVerifyResult = { inSync: true, missing: [], unexpected: [], reordered: [] };
  const remake: Remake = { chains: [], sets: [] };
  const families = [...new Set([...ruleset.tables, ...ruleset.owned].map((t) => t.family))];
  const present = new Set<string>();
  for (const family of families) for (const t of await nft.tables(family)) present.add(`${family} ${t.name}`);
  for (const t of ownedNotWanted(ruleset.tables, ruleset.owned)) {
    if (present.has(`${t.family} ${t.name}`)) result.unexpected.push(ownedDrift(t));
  }
  for (const t of ruleset.tables) {
    diffTable(t, present.has(`${t.family} ${t.name}`) ? await list(nft, t) : undefined, result, remake);
  }
  result.inSync = result.missing.length === 0 && result.unexpected.length === 0 && result.reordered.length === 0;
  return { result, remake };
}
