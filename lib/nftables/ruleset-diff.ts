/**
 * Comparing what a namespace lists with an NftRuleset, pure. Rules compare by their expressions in one canonical
 * form (what the kernel adds on its own, counter values and one-value ranges, left out) and by their comments;
 * chains by their kind (base chain type, hook, priority, policy) and comment; sets by key type, flags and size. A set's
 * and a table's comment are written when they are made and not compared: the kernel cannot change them in place,
 * and making a set again would drop its elements.
 */
import type { NftExpr } from './expr-types.js';
import { SET_FLAGS } from './names.js';
import type { NftRulesetTable } from './ruleset.js';
import type { NftChain, NftFamily, NftRule, NftSet, NftTableRef } from './types.js';

/** NftDrift names one object that is missing or unexpected: a table, a chain, a set, or a rule of a chain. */
export interface NftDrift {
  /** The table's family. */
  family: NftFamily;
  /** The table. */
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
  reordered: { family: NftFamily; table: string; chain: string }[];
}

/** ListedTable is what one table lists: its chains, sets and rules (only its own). */
export interface ListedTable {
  chains: NftChain[];
  sets: NftSet[];
  rules: NftRule[];
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
      // One address (or port) becomes the range min..min, and the kernel's init says which were given
      // (NF_NAT_RANGE_MAP_IPS, NF_NAT_RANGE_PROTO_SPECIFIED), so a listed rule carries those flags.
      if (e.addrMin !== undefined) {
        out.addrMax = e.addrMax ?? e.addrMin;
        out.flags = ((out.flags as number | undefined) ?? 0) | 1;
      }
      if (e.protoMin !== undefined) {
        out.protoMax = e.protoMax ?? e.protoMin;
        out.flags = ((out.flags as number | undefined) ?? 0) | 2;
      }
      break;
    case 'redirect':
      if (e.protoMin !== undefined) {
        out.protoMax = e.protoMax ?? e.protoMin;
        out.flags = ((out.flags as number | undefined) ?? 0) | 2;
      }
      break;
    case 'masquerade':
      // nft_masq adds PROTO_SPECIFIED only when it translates a packet, so its listing has no such flag.
      if (e.protoMin !== undefined) out.protoMax = e.protoMax ?? e.protoMin;
      break;
    default:
      break;
  }
  // Keys in one order: a listed expression's fields come in the decoder's order, a meant one's in the builder's.
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** ruleKey is a rule's expressions and comment in canonical form, for comparing a listed rule with a meant one. */
function ruleKey(exprs: readonly NftExpr[], comment?: string): string {
  return JSON.stringify([exprs.map(canonical), comment ?? null]);
}

function sameChain(have: NftChain, want: NftRulesetTable['chains'][number]): boolean {
  if ((have.comment ?? undefined) !== want.comment) return false;
  if (want.type === undefined) return have.type === undefined && have.hook === undefined;
  return have.type === want.type && have.hook === want.hook && have.priority === want.priority && (have.policy ?? 'accept') === (want.policy ?? 'accept');
}

/** Whether a set is of the kind meant: its key type and flags, which cannot change in place. */
function sameSetKind(have: NftSet, want: NftRulesetTable['sets'][number]): boolean {
  const flags = (want.flags ?? []).reduce((bits, f) => bits | SET_FLAGS[f], 0);
  return have.type === want.type && have.flags === flags;
}

/**
 * Whether a set of the kind meant must still be made again: an add changes the size of one that is there, but does
 * not take a size away.
 */
function sizeNeedsRemake(have: NftSet, want: NftRulesetTable['sets'][number]): boolean {
  return want.size === undefined && have.size !== undefined;
}

/**
 * Remake names what an apply must delete before it adds, for the table to end as meant: chains and sets the
 * ruleset does not have, and those it has in another kind (a chain's hook or a set's type cannot change in place).
 * Rules need no entry: apply flushes them all.
 */
export interface Remake {
  chains: { family: NftFamily; table: string; name: string }[];
  /**
   * carry: the set is remade with its key type unchanged (its flags or size differ), so its elements, which are not
   * part of the ruleset but are state someone put there (an agent's owners), are added back in the same transaction.
   */
  sets: { family: NftFamily; table: string; name: string; carry?: boolean }[];
}

/** ownedDrift is the unexpected entry of an owned table that is there but not wanted. */
export function ownedDrift(t: NftTableRef): NftDrift {
  return { family: t.family, table: t.name };
}

/** diffTable adds to result what differs between the meant table and what it lists (undefined: not there). */
export function diffTable(t: NftRulesetTable, have: ListedTable | undefined, result: NftVerifyResult, remake: Remake): void {
  const at = { family: t.family, table: t.name };
  if (!have) {
    result.missing.push(at);
    for (const s of t.sets) result.missing.push({ ...at, set: s.name });
    for (const c of t.chains) result.missing.push({ ...at, chain: c.name });
    for (const r of t.rules) result.missing.push({ ...at, chain: r.chain, rule: r.exprs.flat() });
    return;
  }
  for (const s of t.sets) {
    const found = have.sets.find((x) => x.name === s.name);
    if (!found || !sameSetKind(found, s) || found.size !== s.size) result.missing.push({ ...at, set: s.name });
    if (found && (!sameSetKind(found, s) || sizeNeedsRemake(found, s))) {
      remake.sets.push(found.type === s.type ? { ...at, name: s.name, carry: true } : { ...at, name: s.name });
    }
  }
  const wantedSets = new Set(t.sets.map((s) => s.name));
  for (const s of have.sets) {
    if (wantedSets.has(s.name)) continue;
    result.unexpected.push({ ...at, set: s.name });
    remake.sets.push({ ...at, name: s.name });
  }
  const wantedChains = new Set(t.chains.map((c) => c.name));
  for (const c of have.chains) {
    if (wantedChains.has(c.name)) continue;
    result.unexpected.push({ ...at, chain: c.name });
    remake.chains.push({ ...at, name: c.name });
  }
  for (const c of t.chains) {
    const found = have.chains.find((x) => x.name === c.name);
    if (!found || !sameChain(found, c)) result.missing.push({ ...at, chain: c.name });
    if (found && !sameChain(found, c)) remake.chains.push({ ...at, name: c.name });
    const wanted = t.rules.filter((r) => r.chain === c.name);
    const listed = have.rules.filter((r) => r.chain === c.name);
    diffRules(at, c.name, wanted.map((r) => ({ exprs: r.exprs.flat(), comment: r.comment })), listed, result);
  }
  for (const r of have.rules) {
    if (!wantedChains.has(r.chain)) result.unexpected.push({ ...at, chain: r.chain, rule: r.exprs });
  }
}

interface RuleLike {
  exprs: NftExpr[];
  comment?: string | undefined;
}

function diffRules(at: { family: NftFamily; table: string }, chain: string, wanted: RuleLike[], listed: RuleLike[], result: NftVerifyResult): void {
  const wantKeys = wanted.map((r) => ruleKey(r.exprs, r.comment));
  const haveKeys = listed.map((r) => ruleKey(r.exprs, r.comment));
  if (wantKeys.length === haveKeys.length && wantKeys.every((k, i) => k === haveKeys[i])) return;
  const missing = unmatched(wantKeys, haveKeys);
  const unexpected = unmatched(haveKeys, wantKeys);
  for (const i of missing) result.missing.push({ ...at, chain, rule: wanted[i]!.exprs });
  for (const i of unexpected) result.unexpected.push({ ...at, chain, rule: listed[i]!.exprs });
  // The same rules, each as often, in another order.
  if (missing.length === 0 && unexpected.length === 0) result.reordered.push({ ...at, chain });
}

/** unmatched returns the indexes of keys left once each key of others has taken one equal key (multiset difference). */
function unmatched(keys: readonly string[], others: readonly string[]): number[] {
  const room = new Map<string, number>();
  for (const k of others) room.set(k, (room.get(k) ?? 0) + 1);
  const out: number[] = [];
  keys.forEach((k, i) => {
    const left = room.get(k) ?? 0;
    if (left > 0) room.set(k, left - 1);
    else out.push(i);
  });
  return out;
}
