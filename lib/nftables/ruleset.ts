/**
 * NftRuleset: the whole of what some tables should hold, as data. Nftables.apply writes it in one transaction (each
 * table added, flushed and refilled, each owned table it no longer wants deleted), verify lists it back and says
 * what differs, reconcile applies only on drift. A ruleset owns its tables outright: apply flushes them, so rules
 * that someone else put there are gone afterwards, and verify reports them as unexpected.
 */
import { checkArray, checkOptions, invalidType, invalidValue } from '../validate.js';
import { FAMILIES } from './names.js';
import type { NftChainSpec, NftFamily, NftRuleSpec, NftSetSpec, NftTableRef, NftTableSpec } from './types.js';

/** NftRulesetTable is one table as meant: its sets, its chains and, in chain order, its rules. */
export interface NftRulesetTable extends NftTableSpec {
  /** Sets the table keeps; their elements are not part of the ruleset (apply leaves them as they are). */
  sets: NftSetSpec[];
  /** The table's base and regular chains. */
  chains: NftChainSpec[];
  /** The rules, each appended to its chain in this order. */
  rules: NftRuleSpec[];
}

/**
 * NftRuleset is what a namespace should hold: `tables`, each flushed and refilled when applied, and `owned`, every
 * table this kind of ruleset may have written; an owned table not in `tables` (a feature switched off) is deleted
 * on apply and reported by verify while it is there.
 */
export interface NftRuleset {
  /** The tables the namespace should hold. */
  tables: NftRulesetTable[];
  /** Tables this ruleset may have written before; those not in `tables` are deleted on apply (default: none). */
  owned?: NftTableRef[];
}

const tableKey = (family: NftFamily, name: string): string => `${family} ${name}`;

function checkRef(name: string, value: unknown): NftTableRef {
  const t = checkOptions<NftTableRef>(name, value);
  if (typeof t.family !== 'string' || !Object.hasOwn(FAMILIES, t.family)) {
    throw invalidValue(`${name}.family`, `one of ${Object.keys(FAMILIES).join(', ')}`, t.family);
  }
  if (typeof t.name !== 'string') throw invalidType(`${name}.name`, 'a table name', t.name);
  return { family: t.family, name: t.name };
}

/** checkList returns a dense copy of an array whose every index holds something (holes refused by index). */
function checkList<T>(name: string, value: unknown): T[] {
  return checkArray(name, value, 'an array', (item) => item as T);
}

/**
 * checkRuleset checks the ruleset's shape: every set, chain and rule names the table it is listed under (a set in
 * the wrong table would be written there and compared here), no table or chain twice, every rule's chain one of
 * its table's. The objects' own fields are checked by the transaction apply builds. Throws InvalidArgumentError.
 */
export function checkRuleset(value: unknown): { tables: NftRulesetTable[]; owned: NftTableRef[] } {
  const r = checkOptions<NftRuleset>('ruleset', value);
  const tables = checkList<NftRulesetTable>('ruleset.tables', r.tables);
  const seen = new Set<string>();
  for (const [i, t] of tables.entries()) {
    const at = `ruleset.tables[${i}]`;
    const ref = checkRef(at, t);
    const key = tableKey(ref.family, ref.name);
    if (seen.has(key)) throw invalidValue(`${at}.name`, 'a table listed once', ref.name);
    seen.add(key);
    const chains = new Set<string>();
    for (const [field, list] of [['sets', t.sets], ['chains', t.chains], ['rules', t.rules]] as const) {
      for (const [j, o] of checkList<NftSetSpec | NftChainSpec | NftRuleSpec>(`${at}.${field}`, list).entries()) {
        const obj = checkOptions<{ family: unknown; table: unknown }>(`${at}.${field}[${j}]`, o);
        if (obj.family !== ref.family) throw invalidValue(`${at}.${field}[${j}].family`, `'${ref.family}' (its table's)`, obj.family);
        if (obj.table !== ref.name) throw invalidValue(`${at}.${field}[${j}].table`, `'${ref.name}' (its table's)`, obj.table);
        if (field === 'chains') {
          const c = o as NftChainSpec;
          if (chains.has(c.name)) throw invalidValue(`${at}.chains[${j}].name`, 'a chain listed once', c.name);
          chains.add(c.name);
        }
        if (field === 'rules' && !chains.has((o as NftRuleSpec).chain)) {
          throw invalidValue(`${at}.rules[${j}].chain`, 'one of its table\'s chains', (o as NftRuleSpec).chain);
        }
      }
    }
  }
  const owned = r.owned === undefined ? [] : checkList<NftTableRef>('ruleset.owned', r.owned).map((o, i) => checkRef(`ruleset.owned[${i}]`, o));
  return { tables, owned };
}

/** ownedNotWanted is each owned table the ruleset does not list in `tables`: apply deletes them. */
export function ownedNotWanted(tables: readonly NftRulesetTable[], owned: readonly NftTableRef[]): NftTableRef[] {
  const wanted = new Set(tables.map((t) => tableKey(t.family, t.name)));
  return owned.filter((o) => !wanted.has(tableKey(o.family, o.name)));
}
