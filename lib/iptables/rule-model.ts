/**
 * The data of iptables rule sets, apart from the class that builds them: the tables and chains iptables knows, a
 * rule, and the read-only view of a rule set that rendering and verifying need. RuleSet implements the view, and the
 * renderer takes the view, so the model and its renderer do not import each other.
 */

/** TABLES are the tables iptables-restore knows. */
export const TABLES = ['filter', 'nat', 'mangle', 'raw', 'security'] as const;
/** IptablesTable is one of TABLES. */
export type IptablesTable = (typeof TABLES)[number];

/** BUILTIN_CHAINS are the built-in chains of each table, in iptables-save order. */
export const BUILTIN_CHAINS: Readonly<Record<IptablesTable, readonly string[]>> = {
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  raw: ['PREROUTING', 'OUTPUT'],
  security: ['INPUT', 'FORWARD', 'OUTPUT'],
};

/** MAX_CHAIN_NAME is the longest user chain name: 28 characters (kernel limit, XT_EXTENSION_MAXNAMELEN - 1 minus the NUL). */
export const MAX_CHAIN_NAME = 28;
/** MAX_RULE_ARGS is the most arguments a rule may have: iptables-restore keeps at most 255 per line, less room for "-A CHAIN". */
export const MAX_RULE_ARGS = 250;

/** RuleSpec is a rule of a RuleSet: appended to its chain, or inserted at a 1-based position. */
export interface RuleSpec {
  /** The table the rule is in. */
  readonly table: IptablesTable;
  /** Its chain. */
  readonly chain: string;
  /** Where it is inserted (1-based), or undefined when it is appended. */
  readonly position: number | undefined;
  /** Its arguments after `-A CHAIN` / `-I CHAIN n`, as iptables-save prints them. */
  readonly args: readonly string[];
}

/** RuleSetView is what is read of a rule set to render, verify or remove it. */
export interface RuleSetView {
  /** The tables it touches, in the order first used. */
  readonly tables: readonly IptablesTable[];
  /** ownedChains lists the chains it owns in table (created, flushed and deleted with it). */
  ownedChains(table: IptablesTable): readonly string[];
  /** isOwned tells whether chain of table is one it owns. */
  isOwned(table: IptablesTable, chain: string): boolean;
  /** rules lists its rules, of one table or all, in the order added. */
  rules(table?: IptablesTable): readonly RuleSpec[];
}
