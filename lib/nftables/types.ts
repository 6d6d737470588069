/** The nf_tables objects podnet writes and lists (tables, chains, sets, set elements, rules), as plain data. */
import type { NetlinkOpenOptions } from '../netlink/open-options.js';
import type { NftExpr } from './expr-types.js';

/** NftFamily is an nf_tables address family, as nft names it. */
export type NftFamily = 'ip' | 'ip6' | 'inet' | 'arp' | 'bridge' | 'netdev';

/** NftablesOpenOptions configure Nftables.open: a namespace (default: the current one) or a peer, and the deadline. */
export type NftablesOpenOptions = NetlinkOpenOptions;

/** NftTableRef names a table: family and name. */
export interface NftTableRef {
  /** The table's family. */
  family: NftFamily;
  /** The table's name. */
  name: string;
}

/** NftTableSpec describes a table to add: family, name and an optional comment. */
export interface NftTableSpec extends NftTableRef {
  /** A comment, kept as the table's user data (`nft list` prints it). */
  comment?: string;
}

/**
 * NftChainType is a base chain's type. A base chain has type, hook and priority (policy optional); a regular chain
 * has none of them.
 */
export type NftChainType = 'filter' | 'nat' | 'route';
/** NftHook is the netfilter hook a base chain is attached to. */
export type NftHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting' | 'ingress';
/** NftPolicy is what a base chain does with a packet no rule decided on. */
export type NftPolicy = 'accept' | 'drop';

/** NftChainSpec describes a chain to add: a base chain with type, hook and priority, or a regular chain without. */
export interface NftChainSpec {
  /** The table's family. */
  family: NftFamily;
  /** The table's name. */
  table: string;
  /** The chain's name. */
  name: string;
  /** A base chain's type. */
  type?: NftChainType;
  /** A base chain's hook. */
  hook?: NftHook;
  /** A base chain's priority (lower runs first). */
  priority?: number;
  /** A base chain's policy (default accept). */
  policy?: NftPolicy;
  /** A comment, kept as the chain's user data. */
  comment?: string;
}

/** NftSetKeyType is the type of a set's keys: IPv4 or IPv6 addresses. */
export type NftSetKeyType = 'ipv4_addr' | 'ipv6_addr';
/** NftSetFlag is a set flag, as nft names it. */
export type NftSetFlag = 'constant' | 'timeout';

/** NftSetSpec describes a set to add. */
export interface NftSetSpec {
  /** The table's family. */
  family: NftFamily;
  /** The table's name. */
  table: string;
  /** The set's name. */
  name: string;
  /** The type of its keys. */
  type: NftSetKeyType;
  /**
   * The set's flags: `constant` (no element changes once a rule uses it), `timeout` (elements that expire). Not
   * `interval`: podnet's elements are single addresses, and one of those alone in an interval set starts a range that
   * never ends.
   */
  flags?: NftSetFlag[];
  /**
   * The most elements it holds (nft's `size`; ipset's maxelem): an add beyond it fails with ENFILE. The kernel also
   * sizes the set's hash table by it, so a set with a size takes elements faster than one that starts small and
   * grows. An add of the set changes the size of one that is there.
   */
  size?: number;
  /** A comment, kept as the set's user data. */
  comment?: string;
}

/**
 * NftElementSpec is a set element of an address set: the address, and its comment (nft's `comment "..."`, podnet's
 * owner).
 */
export interface NftElementSpec {
  /** The address, of the set's key type. */
  address: string;
  /** The element's comment (podnet's owner), kept as its user data. */
  comment?: string;
}

/** NftListedFamily is a listed object's family: a name, or a number for families podnet does not name. */
export type NftListedFamily = NftFamily | number;

/** NftTable is a table as listed. */
export interface NftTable {
  /** The table's family. */
  family: NftListedFamily;
  /** The table's name. */
  name: string;
  /** The kernel's handle of the table. */
  handle: number | undefined;
  /** NFT_TABLE_F_* flags. */
  flags: number;
  /** How many chains and sets the table holds. */
  use: number;
  /** The comment from its user data. */
  comment: string | undefined;
}

/** NftChain is a chain as listed. */
export interface NftChain {
  /** The table's family. */
  family: NftListedFamily;
  /** The table's name. */
  table: string;
  /** The chain's name. */
  name: string;
  /** The kernel's handle of the chain. */
  handle: number | undefined;
  /** Base chains only; hook numbers podnet does not name stay numbers. */
  type: string | undefined;
  /** A base chain's hook. */
  hook: NftHook | number | undefined;
  /** A base chain's priority. */
  priority: number | undefined;
  /** A base chain's policy. */
  policy: NftPolicy | number | undefined;
  /** How many rules and jumps refer to the chain. */
  use: number;
  /** The comment from its user data. */
  comment: string | undefined;
}

/** NftSet is a set as listed. */
export interface NftSet {
  /** The table's family. */
  family: NftListedFamily;
  /** The table's name. */
  table: string;
  /** The set's name. */
  name: string;
  /** The kernel's handle of the set. */
  handle: number | undefined;
  /** 'ipv4_addr' / 'ipv6_addr', or nft's datatype id for the others. */
  type: NftSetKeyType | number;
  /** The key length in bytes. */
  keyLength: number;
  /** NFT_SET_* flags. */
  flags: number;
  /** The most elements it holds; undefined when it has no limit. */
  size: number | undefined;
  /** The comment from its user data. */
  comment: string | undefined;
}

/** NftElement is a set element as listed. */
export interface NftElement {
  /** The address for ipv4_addr / ipv6_addr sets; other keys as hex. */
  address: string;
  /** The element's comment, when it has one. */
  comment: string | undefined;
}

/**
 * NftRuleSpec is a rule to add: its chain, its expressions (nested arrays, as nftExpr's helpers return them, are
 * flattened), a comment.
 */
export interface NftRuleSpec {
  /** The table's family. */
  family: NftFamily;
  /** The table's name. */
  table: string;
  /** The chain the rule goes into. */
  chain: string;
  /** The rule's expressions, in order. */
  exprs: (NftExpr | NftExpr[])[];
  /** Kept as libnftnl's rule user data: `nft list` prints it as `comment "..."`. */
  comment?: string;
}

/** NftRuleRef names one rule by its handle (listed by rules(), printed by `nft -a list`). */
export interface NftRuleRef {
  /** The table's family. */
  family: NftFamily;
  /** The table's name. */
  table: string;
  /** The rule's chain. */
  chain: string;
  /** The rule's handle. */
  handle: number;
}

/**
 * NftRule is a listed rule: where it is, its handle and comment, its expressions (the ones podnet does not model as
 * 'raw').
 */
export interface NftRule {
  /** The table's family. */
  family: NftListedFamily;
  /** The table's name. */
  table: string;
  /** The rule's chain. */
  chain: string;
  /** The rule's handle. */
  handle: number | undefined;
  /** The comment from its user data. */
  comment: string | undefined;
  /** Its expressions, decoded (the ones podnet does not model as `{ type: 'raw' }`). */
  exprs: NftExpr[];
  /** The NFTA_RULE_EXPRESSIONS attribute as listed. */
  expressions: Buffer;
}

/** NftRawRule is another name for NftRule. */
export type NftRawRule = NftRule;
