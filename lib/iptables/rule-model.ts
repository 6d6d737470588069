/**
 * The data of iptables rule sets, apart from the class that builds them: the tables and chains iptables knows, a
 * rule, and the read-only view of a rule set that rendering and verifying need. RuleSet implements the view, and the
 * renderer takes the view, so the model and its renderer do not import each other.
 */

/** The tables iptables-restore knows. */
export const TABLES = ['filter', 'nat', 'mangle', 'raw', 'security'] as const;
/** IptablesTable is one of TABLES. */
export type IptablesTable = (typeof TABLES)[number];

/** The built-in chains of each table, in iptables-save order. */
export const BUILTIN_CHAINS: Readonly<Record<IptablesTable, readonly string[]>> = {
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  raw: ['PREROUTING', 'OUTPUT'],
  security: ['INPUT', 'FORWARD', 'OUTPUT'],
};

/** User chain names are at most 28 characters (kernel limit, XT_EXTENSION_MAXNAMELEN - 1 minus the NUL). */
export const MAX_CHAIN_NAME = 28;
/** iptables-restore keeps at most 255 arguments per line; leave room for "-A CHAIN". */
export const MAX_RULE_ARGS = 250;

/** A rule of a RuleSet: appended to its chain, or inserted at a 1-based position. */
export interface RuleSpec {
  readonly table: IptablesTable;
  readonly chain: string;
  readonly position: number | undefined;
  readonly args: readonly string[];
}

/** RuleSetView is what is read of a rule set to render, verify or remove it. */
export interface RuleSetView {
  /** The tables it touches, in the order first used. */
  readonly tables: readonly IptablesTable[];
  /** The chains it owns in table (created, flushed and deleted with it). */
  ownedChains(table: IptablesTable): readonly string[];
  isOwned(table: IptablesTable, chain: string): boolean;
  /** Its rules, of one table or all, in the order added. */
  rules(table?: IptablesTable): readonly RuleSpec[];
}
