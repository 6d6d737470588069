/**
 * Comparing a rule set with the state iptables-save reports. Rules compare as exact argument lists in
 * iptables-save's canonical form: a rule written differently (`-s 10.0.0.1` for `-s 10.0.0.1/32`) is reported
 * missing, and reconcile then re-applies it every time (harmless, but not minimal).
 */
import type { IptablesTable, RuleSet } from './rule-set.js';
import { ownedRulesOutside } from './render.js';
import type { IptablesState } from './save-parser.js';

/** RuleRef names a rule (args) or, with args null, an owned chain itself. */
export interface RuleRef {
  /** The table. */
  table: IptablesTable;
  /** The chain. */
  chain: string;
  /** The rule's arguments after `-A CHAIN`, or null for the owned chain itself. */
  args: readonly string[] | null;
}

/** VerifyResult says whether the state holds the rule set, and what differs. */
export interface VerifyResult {
  /** Whether the state holds the rule set exactly (missing, unexpected and reordered are all empty). */
  inSync: boolean;
  /** Owned chains and rules of the set that are not there. */
  missing: RuleRef[];
  /** Rules in owned chains that the set does not have, stale or duplicated jumps into owned chains. */
  unexpected: RuleRef[];
  /** Owned chains holding exactly the set's rules but in another order. */
  reordered: { table: IptablesTable; chain: string }[];
}

const key = (args: readonly string[]): string => JSON.stringify(args);

/** diffRuleSet compares rules with state; pure. */
export function diffRuleSet(rules: RuleSet, state: IptablesState): VerifyResult {
  const result: VerifyResult = { inSync: true, missing: [], unexpected: [], reordered: [] };
  for (const table of rules.tables) {
    const current = state.tables[table];
    for (const chain of rules.ownedChains(table)) {
      const wanted = rules.rules(table).filter((r) => r.chain === chain).map((r) => r.args);
      const have = current?.chains[chain];
      if (!have) {
        result.missing.push({ table, chain, args: null });
        for (const args of wanted) result.missing.push({ table, chain, args });
        continue;
      }
      const pool = new Map<string, number>();
      for (const args of have.rules) pool.set(key(args), (pool.get(key(args)) ?? 0) + 1);
      for (const args of wanted) {
        const left = pool.get(key(args)) ?? 0;
        if (left > 0) pool.set(key(args), left - 1);
        else result.missing.push({ table, chain, args });
      }
      const wantedCount = new Map<string, number>();
      for (const args of wanted) wantedCount.set(key(args), (wantedCount.get(key(args)) ?? 0) + 1);
      const seen = new Map<string, number>();
      for (const args of have.rules) {
        const k = key(args);
        seen.set(k, (seen.get(k) ?? 0) + 1);
        if ((seen.get(k) ?? 0) > (wantedCount.get(k) ?? 0)) result.unexpected.push({ table, chain, args });
      }
      const sameMultiset = have.rules.length === wanted.length && result.missing.every((m) => m.chain !== chain || m.table !== table);
      if (sameMultiset && have.rules.some((args, i) => key(args) !== key(wanted[i]!))) {
        result.reordered.push({ table, chain });
      }
    }

    // Outside owned chains: each rule of the set once; jumps into owned chains only where the set puts them.
    const outside = ownedRulesOutside(rules, table, current);
    const pool = new Map<string, number>();
    for (const [chain, args] of outside) pool.set(`${chain} ${key(args)}`, (pool.get(`${chain} ${key(args)}`) ?? 0) + 1);
    for (const rule of rules.rules(table)) {
      if (rules.isOwned(table, rule.chain)) continue;
      const k = `${rule.chain} ${key(rule.args)}`;
      const left = pool.get(k) ?? 0;
      if (left > 0) pool.set(k, left - 1);
      else result.missing.push({ table, chain: rule.chain, args: rule.args });
    }
    for (const [chain, args] of outside) {
      const k = `${chain} ${key(args)}`;
      const left = pool.get(k) ?? 0;
      if (left > 0) {
        pool.set(k, left - 1);
        result.unexpected.push({ table, chain, args });
      }
    }
  }
  result.inSync = result.missing.length === 0 && result.unexpected.length === 0 && result.reordered.length === 0;
  return result;
}
