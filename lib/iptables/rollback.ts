/**
 * Rollback of an apply whose later table failed. iptables-restore commits each `*table ... COMMIT` block on its own,
 * so when a later block fails the earlier ones stay; apply then undoes them with a second restore. Other writers
 * (kube-proxy, a CNI plugin, an admin's `iptables -A`) may have changed the same built-in chains meanwhile, so the
 * undo is planned against the state read after the failure and touches only the set's own rules:
 *
 * - An owned chain is the set's alone and apply wrote it whole (declared, so flushed, then filled): it gets its
 *   earlier rules back, or is deleted when it did not exist before.
 * - In every other chain, the set's rules (jumps into owned chains, copies of its rules for that chain) are deleted
 *   one by one by their exact text, never by position or flush, and the set's rules the chain held before are
 *   inserted again where they were among the other rules. No other rule is deleted or moved.
 *
 * A chain that already reads as before (a table whose block never committed) gets no line, so rolling back a table
 * that did not change is harmless. A foreign rule with exactly the text of one of the set's rules counts as the set's.
 */
import { renderArgs } from './quote.js';
import { type RestoreScript, ScriptBuilder, jumpTarget, sameArgs } from './render.js';
import type { IptablesTable, RuleSetView } from './rule-model.js';
import type { IptablesState, TableState } from './save-parser.js';

/**
 * planRollback is the restore input that undoes, in each of tables, what applying rules over `before` wrote, against
 * `current` (the state read after the failed apply). Empty when nothing is left to undo.
 */
export function planRollback(
  rules: RuleSetView,
  before: IptablesState,
  current: IptablesState,
  tables: readonly IptablesTable[],
): RestoreScript {
  const script = new ScriptBuilder();
  for (const table of tables) script.block(table, undoTable(rules, table, before.tables[table], current.tables[table]));
  return script.build();
}

function undoTable(rules: RuleSetView, table: IptablesTable, old: TableState | undefined, now: TableState | undefined): string[] {
  const owned = rules.ownedChains(table);
  const specs = rules.rules(table);
  const mine = (chain: string, args: readonly string[]): boolean => {
    const target = jumpTarget(args);
    if (target !== undefined && owned.includes(target)) return true;
    return specs.some((s) => s.chain === chain && sameArgs(s.args, args));
  };

  // Owned chains are flushed first and refilled last, and new ones deleted after that: in between, the other chains'
  // jumps into them are put back as they were (or deleted), so that -X finds no reference of the set's.
  const declare: string[] = [];
  const refill: string[] = [];
  const drop: string[] = [];
  for (const chain of owned) {
    const was = old?.chains[chain];
    const is = now?.chains[chain];
    if (was === undefined && is === undefined) continue;
    if (was !== undefined && is !== undefined && sameRuleList(was.rules, is.rules)) continue;
    declare.push(`:${chain} - [0:0]`);
    for (const args of was?.rules ?? []) refill.push(`-A ${chain} ${renderArgs(args)}`);
    if (was === undefined) drop.push(`-X ${chain}`);
  }

  const others = new Set<string>();
  for (const spec of specs) if (!owned.includes(spec.chain)) others.add(spec.chain);
  for (const state of [old, now]) {
    for (const [chain, { rules: list }] of Object.entries(state?.chains ?? {})) {
      if (!owned.includes(chain) && list.some((args) => mine(chain, args))) others.add(chain);
    }
  }
  const middle: string[] = [];
  for (const chain of others) {
    const present = now?.chains[chain]?.rules;
    // A chain that is not there now holds nothing of the set's to delete, and nothing can be put back into it.
    if (present === undefined) continue;
    middle.push(...undoChain(chain, old?.chains[chain]?.rules ?? [], present, (args) => mine(chain, args)));
  }
  return [...declare, ...middle, ...refill, ...drop];
}

/**
 * undoChain turns a chain that is not the set's from `present` back to the set's rules of `earlier`, leaving every
 * other rule where it is: each of the set's rules now there is deleted by its text, then each of the set's rules
 * from `earlier` is inserted after as many other rules as preceded it there (other writers append, so these keep
 * their places), or appended when that is the end.
 */
function undoChain(
  chain: string,
  earlier: readonly (readonly string[])[],
  present: readonly (readonly string[])[],
  mine: (args: readonly string[]) => boolean,
): string[] {
  const kept = present.filter((args) => !mine(args));
  const target: (readonly string[])[] = [...kept];
  const inserts: string[] = [];
  let othersSeen = 0;
  let inserted = 0;
  for (const args of earlier) {
    if (!mine(args)) {
      othersSeen++;
      continue;
    }
    const at = Math.min(othersSeen, kept.length) + inserted;
    target.splice(at, 0, args);
    inserted++;
    inserts.push(at === target.length - 1 ? `-A ${chain} ${renderArgs(args)}` : `-I ${chain} ${at + 1} ${renderArgs(args)}`);
  }
  if (sameRuleList(target, present)) return [];
  const deletes = present.filter(mine).map((args) => `-D ${chain} ${renderArgs(args)}`);
  return [...deletes, ...inserts];
}

function sameRuleList(a: readonly (readonly string[])[], b: readonly (readonly string[])[]): boolean {
  return a.length === b.length && a.every((args, i) => sameArgs(args, b[i]!));
}
