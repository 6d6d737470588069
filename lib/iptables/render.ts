/**
 * Restore input for applying, removing and rolling back a RuleSet. Each table is one `*table ... COMMIT` block for
 * `iptables-restore --noflush`, so each table changes atomically; the block map lets an error's line be traced back
 * to its table and text.
 *
 * Idempotence: an owned chain is declared `:NAME - [0:0]`, which creates it or (noflush) flushes it, and its rules
 * are written again, right after the declarations. Rules in chains the set does not own (jumps from built-in
 * chains) are then deleted by the exact text iptables-save printed for them and added again: applying twice never
 * duplicates them, and their order is the rule set's. The owned part comes first because it does not depend on
 * the state: apply can send it before iptables-save has answered.
 */
import type { IptablesTable, RuleSetView, RuleSpec } from './rule-model.js';
import { renderArgs } from './quote.js';
import type { IptablesState, TableState } from './save-parser.js';

/** A block of restore input: lines first..last (1-based, inclusive; last is COMMIT). */
export interface RestoreBlock {
  table: string;
  first: number;
  last: number;
}

/** RestoreScript is restore input with its block map. */
export interface RestoreScript {
  text: string;
  lines: readonly string[];
  blocks: readonly RestoreBlock[];
}

/** ScriptBuilder collects table blocks into a RestoreScript; a block with an empty body is left out. */
export class ScriptBuilder {
  /** The lines so far. */
  readonly lines: string[] = [];
  /** The blocks so far. */
  readonly blocks: RestoreBlock[] = [];

  /** block adds `*table`, body and COMMIT, unless body is empty. */
  block(table: string, body: readonly string[]): void {
    if (body.length === 0) return;
    const first = this.lines.length + 1;
    this.lines.push(`*${table}`, ...body, 'COMMIT');
    this.blocks.push({ table, first, last: this.lines.length });
  }

  /** build returns the script: the lines joined and ended, or '' when there are none. */
  build(): RestoreScript {
    return { text: this.lines.length ? `${this.lines.join('\n')}\n` : '', lines: this.lines, blocks: this.blocks };
  }
}

/** jumpTarget returns the chain or target a rule's `-j`/`-g` names (the last one), if any. */
export function jumpTarget(args: readonly string[]): string | undefined {
  let target: string | undefined;
  for (let i = 0; i < args.length - 1; i++) {
    if (args[i] === '-j' || args[i] === '--jump' || args[i] === '-g' || args[i] === '--goto') target = args[i + 1];
  }
  return target;
}

/** sameArgs tells whether two argument lists are equal, element by element. */
export function sameArgs(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** ruleLine is a rule's restore line: `-A chain args`, or `-I chain position args`. */
export function ruleLine(rule: RuleSpec): string {
  const head = rule.position === undefined ? `-A ${rule.chain}` : `-I ${rule.chain} ${rule.position}`;
  return `${head} ${renderArgs(rule.args)}`;
}

/**
 * ownedRulesOutside lists, per chain the set does not own, the rules currently there that belong to the set: jumps
 * into an owned chain, and copies of the set's own rules for that chain. These are what apply re-creates and remove
 * deletes.
 */
export function ownedRulesOutside(rules: RuleSetView, table: IptablesTable, current: TableState | undefined): [string, string[]][] {
  const found: [string, string[]][] = [];
  if (!current) return found;
  const owned = rules.ownedChains(table);
  const specs = rules.rules(table);
  for (const [chain, state] of Object.entries(current.chains)) {
    if (owned.includes(chain)) continue;
    const mine = specs.filter((s) => s.chain === chain);
    for (const args of state.rules) {
      const target = jumpTarget(args);
      if ((target !== undefined && owned.includes(target)) || mine.some((s) => sameArgs(s.args, args))) {
        found.push([chain, args]);
      }
    }
  }
  return found;
}

/**
 * ownedPart is the beginning of a table's apply body that does not depend on what the namespace holds: the owned
 * chains declared, then their rules. It can reach iptables-restore before iptables-save has answered.
 */
function ownedPart(rules: RuleSetView, table: IptablesTable): string[] {
  const owned = rules.ownedChains(table);
  const body = owned.map((c) => `:${c} - [0:0]`);
  for (const rule of rules.rules(table)) if (owned.includes(rule.chain)) body.push(ruleLine(rule));
  return body;
}

// The owned chains' rules come before the deletions: they touch only owned chains, the deletions only the others,
// so the order between the two does not change the result.
function applyBody(rules: RuleSetView, table: IptablesTable, current: TableState | undefined): string[] {
  const owned = rules.ownedChains(table);
  const body = ownedPart(rules, table);
  for (const [chain, args] of ownedRulesOutside(rules, table, current)) body.push(`-D ${chain} ${renderArgs(args)}`);
  for (const rule of rules.rules(table)) if (!owned.includes(rule.chain)) body.push(ruleLine(rule));
  return body;
}

/**
 * applyPrefix is the start of planApply(rules, state).text for every state: the first table's header and owned
 * part, each line ended. Empty when the rule set is.
 */
export function applyPrefix(rules: RuleSetView): string {
  const table = rules.tables[0];
  if (table === undefined) return '';
  return `${[`*${table}`, ...ownedPart(rules, table)].join('\n')}\n`;
}

/** renderRuleSet is the restore input of a rule set on its own (nothing to delete first). */
export function renderRuleSet(rules: RuleSetView): string {
  return planApply(rules, { tables: {} }).text;
}

/** planApply is the restore input that makes the state hold exactly the rule set's chains and rules. */
export function planApply(rules: RuleSetView, current: IptablesState): RestoreScript {
  const script = new ScriptBuilder();
  for (const table of rules.tables) script.block(table, applyBody(rules, table, current.tables[table]));
  return script.build();
}

/** planRemove deletes the set's rules from chains it does not own, then flushes and deletes its owned chains. */
export function planRemove(rules: RuleSetView, current: IptablesState): RestoreScript {
  const script = new ScriptBuilder();
  for (const table of rules.tables) {
    const state = current.tables[table];
    const body: string[] = [];
    for (const [chain, args] of ownedRulesOutside(rules, table, state)) body.push(`-D ${chain} ${renderArgs(args)}`);
    const existing = rules.ownedChains(table).filter((c) => state?.chains[c] !== undefined);
    // Flush all before deleting any: owned chains may jump to each other.
    for (const chain of existing) body.push(`:${chain} - [0:0]`);
    for (const chain of existing) body.push(`-X ${chain}`);
    script.block(table, body);
  }
  return script.build();
}
