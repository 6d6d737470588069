/**
 * Writing, checking and removing an NftRuleset (nft-rules.ts) through an Nftables client. apply is one transaction:
 * every table of the ruleset added, flushed and refilled, every owned table it does not want deleted, all in one
 * batch (all or nothing). verify lists the tables back and compares them with what was meant; reconcile applies
 * only when they differ, so applying twice is a no-op.
 */
import { isNotFound } from '../errors.js';
import type { Nftables } from '../nftables/client.js';
import type { NftChain, NftExpr, NftRule, NftSet } from '../nftables/index.js';
import type { NftRuleset, NftRulesetTable } from './nft-rules.js';

const FAMILY = 'inet' as const;

/** NftDrift names one object that is missing or unexpected: a table, a chain, a set, or a rule of a chain. */
export interface NftDrift {
  /** The table (family inet). */
  table: string;
  /** The chain, for a chain or one of its rules. */
  chain?: string;
  /** The set, for a set. */
  set?: string;
  /** A rule's expressions (as the ruleset has them for missing, as listed for unexpected). */
  rule?: NftExpr[];
}

/** NftVerifyResult says whether a namespace holds the ruleset exactly, and what differs. */
export interface NftVerifyResult {
  /** Whether every table, set, chain and rule is there as meant, in order, and nothing else is in the owned tables. */
  inSync: boolean;
  /** Tables, sets, chains and rules of the ruleset that are not there (or not as meant). */
  missing: NftDrift[];
  /** Owned tables the ruleset does not want, and chains and rules in its tables that it does not have. */
  unexpected: NftDrift[];
  /** Chains holding exactly the ruleset's rules, in another order. */
  reordered: { table: string; chain: string }[];
}

/**
 * applyNftRuleset writes the ruleset in one transaction: each of its tables added, flushed (every rule of every
 * chain gone) and refilled with its sets, chains and rules; each owned table it does not want deleted (added first,
 * so a missing one is no error). Rejects with NftablesError naming the op the kernel refused; then nothing changed.
 */
export async function applyNftRuleset(nft: Nftables, ruleset: NftRuleset): Promise<void> {
  const tx = nft.transaction();
  for (const t of ruleset.tables) {
    tx.addTable({ family: FAMILY, name: t.name }).flushTable({ family: FAMILY, name: t.name });
    for (const s of t.sets) tx.addSet(s);
    for (const c of t.chains) tx.addChain(c);
    for (const r of t.rules) tx.addRule(r);
  }
  // Unwanted tables go last, so the wanted ones get the handles `nft -f` of the same rules gives them.
  const wanted = new Set(ruleset.tables.map((t) => t.name));
  for (const name of ruleset.owned) {
    if (!wanted.has(name)) tx.addTable({ family: FAMILY, name }).deleteTable({ family: FAMILY, name });
  }
  await nft.run(tx);
}

/**
 * removeNftRuleset deletes every owned table of the ruleset in one transaction (with their chains, rules and sets);
 * tables already gone are fine. Rejects with NftablesError when the kernel refuses.
 */
export async function removeNftRuleset(nft: Nftables, ruleset: Pick<NftRuleset, 'owned'>): Promise<void> {
  const tx = nft.transaction();
  for (const name of ruleset.owned) tx.addTable({ family: FAMILY, name }).deleteTable({ family: FAMILY, name });
  await nft.run(tx);
}

/** A listed or meant expression in one canonical form: what the kernel adds on its own (counts, ranges) left out. */
function canonical(e: NftExpr): unknown {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e)) {
    if (v === undefined) continue;
    out[k] = v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v;
  }
  switch (e.type) {
    case 'counter':
      return { type: 'counter' };
    case 'bitwise':
      // The kernel takes a missing op as the boolean one, and lists it without.
      delete out.op;
      break;
    case 'lookup':
      out.invert = e.invert === true;
      break;
    case 'nat':
      // One address (or port) becomes the range min..min, and an address range says so (NF_NAT_RANGE_MAP_IPS).
      if (e.addrMin !== undefined) {
        out.addrMax = e.addrMax ?? e.addrMin;
        out.flags = (e.flags ?? 0) | 1;
      }
      if (e.protoMin !== undefined) out.protoMax = e.protoMax ?? e.protoMin;
      break;
    case 'redirect':
    case 'masquerade':
      if (e.protoMin !== undefined) out.protoMax = e.protoMax ?? e.protoMin;
      break;
    default:
      break;
  }
  // Keys in one order: a listed expression's fields come in the decoder's order, a meant one's in the builder's.
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** ruleKey is a rule's expressions in canonical form, for comparing a listed rule with a meant one. */
export function ruleKey(exprs: readonly NftExpr[]): string {
  return JSON.stringify(exprs.map(canonical));
}

function sameChain(have: NftChain, want: NftRulesetTable['chains'][number]): boolean {
  if (want.type === undefined) return have.type === undefined && have.hook === undefined;
  return have.type === want.type && have.hook === want.hook && have.priority === want.priority && (have.policy ?? 'accept') === (want.policy ?? 'accept');
}

function sameSet(have: NftSet, want: NftRulesetTable['sets'][number]): boolean {
  return have.type === want.type && have.comment === want.comment;
}

interface Listed {
  chains: NftChain[];
  sets: NftSet[];
  rules: NftRule[];
}

async function list(nft: Nftables, table: string): Promise<Listed | undefined> {
  const ref = { family: FAMILY, name: table };
  try {
    const [chains, sets, rules] = await Promise.all([nft.chains(ref), nft.sets(ref), nft.rules(ref)]);
    // Only this table's: a listing is asked for by table, and what else comes back is no business of this one.
    const own = <T extends { table: string }>(xs: T[]): T[] => xs.filter((o) => o.table === table);
    return { chains: own(chains), sets: own(sets), rules: own(rules) };
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

function diffTable(t: NftRulesetTable, have: Listed | undefined, result: NftVerifyResult): void {
  if (!have) {
    result.missing.push({ table: t.name });
    for (const s of t.sets) result.missing.push({ table: t.name, set: s.name });
    for (const c of t.chains) result.missing.push({ table: t.name, chain: c.name });
    for (const r of t.rules) result.missing.push({ table: t.name, chain: r.chain, rule: r.exprs.flat() });
    return;
  }
  for (const s of t.sets) {
    const found = have.sets.find((x) => x.name === s.name);
    if (!found || !sameSet(found, s)) result.missing.push({ table: t.name, set: s.name });
  }
  const wantedChains = new Set(t.chains.map((c) => c.name));
  for (const c of have.chains) if (!wantedChains.has(c.name)) result.unexpected.push({ table: t.name, chain: c.name });
  for (const c of t.chains) {
    const found = have.chains.find((x) => x.name === c.name);
    if (!found || !sameChain(found, c)) result.missing.push({ table: t.name, chain: c.name });
    const wanted = t.rules.filter((r) => r.chain === c.name).map((r) => r.exprs.flat());
    const listed = have.rules.filter((r) => r.chain === c.name).map((r) => r.exprs);
    diffRules(t.name, c.name, wanted, listed, result);
  }
  for (const r of have.rules) {
    if (!wantedChains.has(r.chain)) result.unexpected.push({ table: t.name, chain: r.chain, rule: r.exprs });
  }
}

function diffRules(table: string, chain: string, wanted: NftExpr[][], listed: NftExpr[][], result: NftVerifyResult): void {
  const wantKeys = wanted.map(ruleKey);
  const haveKeys = listed.map(ruleKey);
  if (wantKeys.length === haveKeys.length && wantKeys.every((k, i) => k === haveKeys[i])) return;
  const pool = new Map<string, number>();
  for (const k of haveKeys) pool.set(k, (pool.get(k) ?? 0) + 1);
  let differs = false;
  wantKeys.forEach((k, i) => {
    const left = pool.get(k) ?? 0;
    if (left > 0) pool.set(k, left - 1);
    else {
      differs = true;
      result.missing.push({ table, chain, rule: wanted[i]! });
    }
  });
  const room = new Map<string, number>();
  for (const k of wantKeys) room.set(k, (room.get(k) ?? 0) + 1);
  haveKeys.forEach((k, i) => {
    const left = room.get(k) ?? 0;
    if (left > 0) room.set(k, left - 1);
    else {
      differs = true;
      result.unexpected.push({ table, chain, rule: listed[i]! });
    }
  });
  if (!differs) result.reordered.push({ table, chain });
}

/**
 * verifyNftRuleset compares what the namespace holds with the ruleset; it changes nothing. Rejects with
 * NftablesError when a listing fails (a missing table is reported as missing, not thrown).
 */
export async function verifyNftRuleset(nft: Nftables, ruleset: NftRuleset): Promise<NftVerifyResult> {
  const result: NftVerifyResult = { inSync: true, missing: [], unexpected: [], reordered: [] };
  const wanted = new Set(ruleset.tables.map((t) => t.name));
  const present = new Set((await nft.tables(FAMILY)).map((t) => t.name));
  for (const name of ruleset.owned) {
    if (!wanted.has(name) && present.has(name)) result.unexpected.push({ table: name });
  }
  for (const t of ruleset.tables) diffTable(t, present.has(t.name) ? await list(nft, t.name) : undefined, result);
  result.inSync = result.missing.length === 0 && result.unexpected.length === 0 && result.reordered.length === 0;
  return result;
}

/** reconcileNftRuleset applies the ruleset when verify finds drift; resolves whether it did. Rejects as both do. */
export async function reconcileNftRuleset(nft: Nftables, ruleset: NftRuleset): Promise<{ changed: boolean }> {
  if ((await verifyNftRuleset(nft, ruleset)).inSync) return { changed: false };
  await applyNftRuleset(nft, ruleset);
  return { changed: true };
}
