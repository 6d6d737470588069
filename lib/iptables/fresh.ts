/**
 * Applying a rule set to a namespace that holds none of its chains, without reading the namespace first. apply
 * otherwise reads iptables-save to find the set's rules already in place (and delete them before adding them again);
 * a new pod's namespace has none, and the read costs as much as the restore itself.
 *
 * The kernel tells whether the guess holds, atomically: each owned chain is created with `-N`, which fails when the
 * chain exists (both backends, checked when the block commits), and a failing block changes nothing. The guess is
 * only taken for sets whose every rule outside an owned chain jumps into an owned chain of its table: no such rule
 * can exist while the chain it jumps to does not, so a block whose `-N`s all succeed had nothing of the set's to
 * delete, and writes exactly what the save-first plan would. Any other set (a table without owned chains, a plain
 * rule in a built-in chain, which another writer may hold with the same text) is never guessed about.
 *
 * A refusal anywhere else (a rule line, COMMIT) is final: the `-N`s before it passed, so the save-first plan would
 * write the same lines over the same state and be refused alike. apply reports it, after undoing earlier tables.
 *
 * Tables commit one by one: when a later block fails, the earlier ones hold what this run wrote, over a state that
 * held nothing of the set's there. apply then reads the state and applies as usual (idempotent over what this run
 * wrote), and a rollback takes those tables back to holding nothing of the set's.
 */
import type { IptablesRestoreError } from '../errors.js';
import { type RestoreScript, ScriptBuilder, jumpTarget, ruleLine } from './render.js';
import type { IptablesTable, RuleSetView } from './rule-model.js';
import type { RuleSet } from './rule-set.js';
import type { IptablesState } from './save-parser.js';

/**
 * planCreate is the restore input that applies rules to a namespace holding none of its owned chains, failing in
 * the first table that holds one; undefined when the set is not one that can be applied unread (see above).
 */
export function planCreate(rules: RuleSetView): RestoreScript | undefined {
  const script = new ScriptBuilder();
  for (const table of rules.tables) {
    const owned = rules.ownedChains(table);
    if (owned.length === 0) return undefined;
    const inside: string[] = [];
    const outside: string[] = [];
    for (const rule of rules.rules(table)) {
      if (owned.includes(rule.chain)) {
        inside.push(ruleLine(rule));
        continue;
      }
      const target = jumpTarget(rule.args);
      if (target === undefined || !owned.includes(target)) return undefined;
      outside.push(ruleLine(rule));
    }
    // Every chain is created before any rule: owned chains may jump to each other.
    script.block(table, [...owned.map((chain) => `-N ${chain}`), ...inside, ...outside]);
  }
  return script.build();
}

const plans = new WeakMap<RuleSet, { revision: number; script: RestoreScript | undefined }>();

/**
 * createPlanOf is planCreate of a RuleSet, kept with it until the set changes: an agent applies the same set to every
 * new pod, and writing the script costs a third of what the client does before its run starts.
 */
export function createPlanOf(rules: RuleSet): RestoreScript | undefined {
  const kept = plans.get(rules);
  if (kept?.revision === rules.revision) return kept.script;
  const script = planCreate(rules);
  plans.set(rules, { revision: rules.revision, script });
  return script;
}

/**
 * committedBefore lists the tables of a planCreate script that committed before the block of `failedTable` (every
 * table of the set has a block, in the set's order). Empty when the failing table is unknown: then no table is
 * taken to have committed, so that no rollback deletes chains that may have been there before.
 */
export function committedBefore(rules: RuleSetView, failedTable: string | undefined): IptablesTable[] {
  const at = failedTable === undefined ? -1 : rules.tables.indexOf(failedTable as IptablesTable);
  return at <= 0 ? [] : rules.tables.slice(0, at);
}

/**
 * stateBeforeCreate is what the namespace held before a planCreate run that committed `written`: the state read
 * after it, with those tables holding nothing of the set's. Rollback reads a missing table as exactly that: its
 * owned chains absent, no rule of the set in the others; foreign rules come from the state read after.
 */
export function stateBeforeCreate(after: IptablesState, written: readonly IptablesTable[]): IptablesState {
  if (written.length === 0) return after;
  const tables = { ...after.tables };
  for (const table of written) delete tables[table];
  return { ...after, tables };
}

/**
 * refusedForExisting tells whether a planCreate run was refused because an owned chain exists: the blamed line
 * creates a chain (legacy names no reason), nft says the chain exists (also when another writer created it between
 * its read and its commit), or no line is named, so that the save-first plan decides.
 */
export function refusedForExisting(script: RestoreScript, err: IptablesRestoreError): boolean {
  if (err.reason === 'chain-exists' || err.line === undefined) return true;
  return script.lines[err.line - 1]?.startsWith('-N ') ?? true;
}

/**
 * KnownChains is what one client has seen of a namespace: the owned chains it wrote there, or that a planCreate run
 * found in place. apply guesses (planCreate) only for sets none of whose owned chains it knows of: a namespace it
 * wrote the set into before would refuse the guess, at the cost of a whole restore run. Knowing too much only costs
 * the read the guess saves (another writer deleted the chains); knowing too little, one refused run.
 */
export class KnownChains {
  readonly #chains = new Set<string>();

  /** some tells whether any owned chain of rules is known to be in place. */
  some(rules: RuleSetView): boolean {
    return ownedChainKeys(rules).some((key) => this.#chains.has(key));
  }

  /** add records the owned chains of rules as in place. */
  add(rules: RuleSetView): void {
    for (const key of ownedChainKeys(rules)) this.#chains.add(key);
  }

  /** delete forgets the owned chains of rules (they are being removed). */
  delete(rules: RuleSetView): void {
    for (const key of ownedChainKeys(rules)) this.#chains.delete(key);
  }
}

/** ownedChainKeys names each owned chain of rules as "table/chain". */
function ownedChainKeys(rules: RuleSetView): string[] {
  return rules.tables.flatMap((table) => rules.ownedChains(table).map((chain) => `${table}/${chain}`));
}
