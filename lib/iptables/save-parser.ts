/**
 * Parser of iptables-save output into tables -> chains -> (policy, rules). Rules keep iptables-save's canonical
 * argument form (`-s 10.0.0.1/32`, `-m tcp`), so comparisons with a rule set are exact argument lists.
 */
import { PodnetError } from '../errors.js';
import { tokenizeLine } from './quote.js';

/** ChainState is one chain: its policy (null for user chains) and its rules' arguments after `-A CHAIN`. */
export interface ChainState {
  /** The built-in chain's policy (`ACCEPT`, `DROP`), or null for a user chain. */
  policy: string | null;
  /** Each rule's arguments after `-A CHAIN`, in order. */
  rules: string[][];
}

/** TableState maps chain names to chains, in the order iptables-save printed them. */
export interface TableState {
  /** The table's chains by name. */
  chains: Record<string, ChainState>;
}

/** IptablesState maps table names to tables. */
export interface IptablesState {
  /** The tables by name (`filter`, `nat`, ...). */
  tables: Record<string, TableState>;
}

/** IptablesSaveParseError is output that is not iptables-save format; `line` is 1-based. */
export class IptablesSaveParseError extends PodnetError {
  /** The 1-based line of the output that is not iptables-save format. */
  readonly line: number;

  constructor(line: number, detail: string) {
    super(`iptables-save output line ${line}: ${detail}`, 'ERR_IPTABLES_SAVE_PARSE');
    this.line = line;
  }
}

/** parseSave reads iptables-save output. Throws IptablesSaveParseError on anything it does not understand. */
export function parseSave(text: string): IptablesState {
  const state: IptablesState = { tables: {} };
  let table: TableState | undefined;
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const n = i + 1;
    const line = raw.trimEnd();
    if (line === '' || line.startsWith('#')) return;
    if (line.startsWith('*')) {
      if (table) throw new IptablesSaveParseError(n, 'table starts before COMMIT');
      const name = line.slice(1);
      table = { chains: {} };
      state.tables[name] = table;
      return;
    }
    if (!table) throw new IptablesSaveParseError(n, `'${line.slice(0, 40)}' outside a table`);
    if (line === 'COMMIT') {
      table = undefined;
      return;
    }
    if (line.startsWith(':')) {
      const m = /^:(\S+) (\S+)(?: \[\d+:\d+\])?$/.exec(line);
      if (!m) throw new IptablesSaveParseError(n, 'malformed chain line');
      table.chains[m[1]!] = { policy: m[2] === '-' ? null : m[2]!, rules: [] };
      return;
    }
    if (line.startsWith('-A ') || line.startsWith('[')) {
      let tokens: string[];
      try {
        // With -c every rule starts with its counters "[p:b]".
        tokens = tokenizeLine(line.replace(/^\[\d+:\d+\] /, ''));
      } catch {
        throw new IptablesSaveParseError(n, 'unterminated quote');
      }
      const chain = tokens[1];
      const target = chain === undefined ? undefined : table.chains[chain];
      if (!target) throw new IptablesSaveParseError(n, `rule for undeclared chain '${chain ?? ''}'`);
      target.rules.push(tokens.slice(2));
      return;
    }
    throw new IptablesSaveParseError(n, `unexpected line '${line.slice(0, 40)}'`);
  });
  if (table) throw new IptablesSaveParseError(lines.length, 'missing COMMIT');
  return state;
}

/** countRules counts rules (not chain declarations) in a state. */
export function countRules(state: IptablesState): number {
  let n = 0;
  for (const table of Object.values(state.tables)) {
    for (const chain of Object.values(table.chains)) n += chain.rules.length;
  }
  return n;
}

/**
 * withoutPristineTables drops tables that hold nothing: only built-in chains, policy ACCEPT, no rules. Such a table
 * filters nothing, and iptables cannot delete a table once anything created it, so "absent" and "pristine" compare
 * equal this way.
 */
export function withoutPristineTables(state: IptablesState): IptablesState {
  const tables: Record<string, TableState> = {};
  for (const [name, table] of Object.entries(state.tables)) {
    const pristine = Object.values(table.chains).every((c) => c.policy === 'ACCEPT' && c.rules.length === 0);
    if (!pristine) tables[name] = table;
  }
  return { tables };
}
