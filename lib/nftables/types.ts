/** The nf_tables objects podnet writes and lists (tables, chains, sets, set elements, rules), as plain data. */
import type { NetlinkOpenOptions } from '../netlink/open-options.js';
import type { NftExpr } from './expr-types.js';

/** An nf_tables address family, as nft names it. */
export type NftFamily = 'ip' | 'ip6' | 'inet' | 'arp' | 'bridge' | 'netdev';

/** Nftables.open options: a namespace (default: the current one) or a NetlinkPeer, and the deadline per answer. */
export type NftablesOpenOptions = NetlinkOpenOptions;

/** Which table: family and name. */
export interface NftTableRef {
  family: NftFamily;
  name: string;
}

export interface NftTableSpec extends NftTableRef {
  comment?: string;
}

/** A base chain has type, hook and priority (policy optional); a regular chain has none of them. */
export type NftChainType = 'filter' | 'nat' | 'route';
export type NftHook = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting' | 'ingress';
export type NftPolicy = 'accept' | 'drop';

export interface NftChainSpec {
  family: NftFamily;
  table: string;
  name: string;
  type?: NftChainType;
  hook?: NftHook;
  priority?: number;
  policy?: NftPolicy;
  comment?: string;
}

export type NftSetKeyType = 'ipv4_addr' | 'ipv6_addr';
export type NftSetFlag = 'constant' | 'interval' | 'timeout';

export interface NftSetSpec {
  family: NftFamily;
  table: string;
  name: string;
  type: NftSetKeyType;
  flags?: NftSetFlag[];
  comment?: string;
}

/** A set element of an address set: the address, and its comment (nft's `comment "..."`, podnet's owner). */
export interface NftElementSpec {
  address: string;
  comment?: string;
}

/** Families podnet does not name are listed by number. */
export type NftListedFamily = NftFamily | number;

export interface NftTable {
  family: NftListedFamily;
  name: string;
  handle: number | undefined;
  flags: number;
  /** How many chains and sets the table holds. */
  use: number;
  comment: string | undefined;
}

export interface NftChain {
  family: NftListedFamily;
  table: string;
  name: string;
  handle: number | undefined;
  /** Base chains only; hook numbers podnet does not name stay numbers. */
  type: string | undefined;
  hook: NftHook | number | undefined;
  priority: number | undefined;
  policy: NftPolicy | number | undefined;
  /** How many rules and jumps refer to the chain. */
  use: number;
  comment: string | undefined;
}

export interface NftSet {
  family: NftListedFamily;
  table: string;
  name: string;
  handle: number | undefined;
  /** 'ipv4_addr' / 'ipv6_addr', or nft's datatype id for the others. */
  type: NftSetKeyType | number;
  keyLength: number;
  flags: number;
  comment: string | undefined;
}

export interface NftElement {
  /** The address for ipv4_addr / ipv6_addr sets; other keys as hex. */
  address: string;
  comment: string | undefined;
}

/** A rule to add: its chain, its expressions (nested arrays, as nftExpr's helpers return them, are flattened), a comment. */
export interface NftRuleSpec {
  family: NftFamily;
  table: string;
  chain: string;
  exprs: (NftExpr | NftExpr[])[];
  /** Kept as libnftnl's rule user data: `nft list` prints it as `comment "..."`. */
  comment?: string;
}

/** One rule by its handle (listed by rules(), printed by `nft -a list`). */
export interface NftRuleRef {
  family: NftFamily;
  table: string;
  chain: string;
  handle: number;
}

/** A listed rule: where it is, its handle and comment, its expressions (the ones podnet does not model as 'raw'). */
export interface NftRule {
  family: NftListedFamily;
  table: string;
  chain: string;
  handle: number | undefined;
  comment: string | undefined;
  exprs: NftExpr[];
  /** The NFTA_RULE_EXPRESSIONS attribute as listed. */
  expressions: Buffer;
}

/** NftRawRule is the listed rule under its earlier name. */
export type NftRawRule = NftRule;
