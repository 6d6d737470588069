/** The nf_tables objects podnet writes and lists (tables, chains, sets, set elements, rules), as plain data. */
import type { NetlinkClientOpenOptions } from '../netlink/open-options.js';
import type { NftExpr } from './expr-types.js';

/** NftFamily is an nf_tables address family, as nft names it. */
export type NftFamily = 'ip' | 'ip6' | 'inet' | 'arp' | 'bridge' | 'netdev';

/**
 * NftablesOpenOptions configure Nftables.open: a namespace (default: the current one) or a peer, the deadline, and
 * whether the socket waits for the first operation (`defer`).
 */
export type NftablesOpenOptions = NetlinkClientOpenOptions;

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
   * The set's flags: `constant` (no element changes once a rule uses it), `timeout` (the set may hold elements that
   * expire: it takes a timeout per element, and the kernel's garbage collector removes the expired). podnet gives
   * neither the set a default timeout nor its elements one, so the elements it adds never expire; the flag only lets
   * others add ones that do (`nft add element ... timeout 1h`), and cannot go with `constant`. Not `interval`: podnet's elements are single addresses, and one of those alone in an interval set starts a
   * range that never ends.
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

/**
 * NftRawAttr is an attribute of a listed object that podnet does not decode, kept as the kernel sent it (the
 * NLA_F_* flags masked off): a set's timeout (NFTA_SET_TIMEOUT), a netdev chain's hook with its devices
 * (NFTA_CHAIN_HOOK), an element's expiry, user data with records beyond the comment, and whatever a newer kernel adds.
 */
export interface NftRawAttr {
  /** The attribute type (nla_type without the NLA_F_* flags), as the kernel's NFTA_* enum of the object numbers it. */
  type: number;
  /** Its payload, without the attribute header. */
  data: Buffer;
}

/** NftRawMessage is a message of a listing's dump that is not of the object type listed, whole. */
export interface NftRawMessage {
  /** Its nlmsg_type ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_*). */
  type: number;
  /** Its payload: the nfgenmsg and the attributes. */
  payload: Buffer;
}

/**
 * NftListing is what tables(), chains(), sets() and rules() resolve: the listed objects, as an array, and in
 * `rawMessages` the messages of the dump that were not of the listed type (none from today's kernels), so nothing
 * the kernel sent is lost. `rawMessages` is not enumerable: the array compares, spreads and prints as the objects
 * alone, and a copy (`map`, `filter`, `[...list]`) does not carry it. Nftables always sets it (empty when there were
 * none); it is optional in the type so that a plain array of objects is a listing too.
 */
export type NftListing<T> = T[] & {
  /** The dump's messages of another type than the objects', as they came. */
  readonly rawMessages?: readonly NftRawMessage[];
};

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
  /** The attributes podnet does not decode (NFTA_TABLE_*, e.g. OWNER); absent when there are none. */
  raw?: NftRawAttr[];
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
  /**
   * NFT_CHAIN_* flags other than NFT_CHAIN_BASE (which `type` and `hook` already tell): HW_OFFLOAD 0x2, BINDING
   * 0x4; absent when it has none.
   */
  flags?: number;
  /**
   * The attributes podnet does not decode (NFTA_CHAIN_*): a hook with more than hook number and priority, such as a
   * netdev chain's devices, is here whole as NFTA_CHAIN_HOOK; absent when there are none.
   */
  raw?: NftRawAttr[];
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
  /**
   * Maps only (NFT_SET_MAP, nft's `map`): the type of the data each key maps to and its length in bytes; absent for a
   * set. A map's elements list their data as `data`.
   */
  map?: NftMapData;
  /**
   * The attributes podnet does not decode (NFTA_SET_*): the set's timeout and gc interval, its description of
   * concatenated fields, its expressions, an object map's object type, user data holding more than the comment and
   * the key's byte order (nft's `typeof` and `auto-merge`, a map's data byte order); absent when there are none.
   * Not kept: NFTA_SET_TYPE (the kernel's id of the set backend) and NFTA_SET_COUNT (the number of elements), which
   * say nothing of what the set holds or does.
   */
  raw?: NftRawAttr[];
}

/** NftMapData is the data side of a map: its type and length. */
export interface NftMapData {
  /** 'verdict', 'ipv4_addr' / 'ipv6_addr', or nft's datatype id for the others. */
  type: 'verdict' | NftSetKeyType | number;
  /** The length of each element's data in bytes (16 for a verdict). */
  length: number;
}

/**
 * NftElementData is what a map element maps its key to: a verdict (a verdict map's `: accept`, `: jump CHAIN`), or
 * a value, an address for ipv4_addr / ipv6_addr data and hex for the others.
 */
export type NftElementData =
  | { verdict: 'accept' | 'drop' | 'continue' | 'return' | number }
  | { verdict: 'jump' | 'goto'; chain: string }
  | { value: string };

/**
 * NftElement is a set element as listed. In an interval set the kernel keeps a range as two elements, its start
 * and, flagged NFT_SET_ELEM_INTERVAL_END, the address after its end; listed, they are one element as `nft list`
 * prints it, and an end is never listed as a member.
 */
export interface NftElement {
  /**
   * The key as nft prints it: an address for ipv4_addr / ipv6_addr sets (IPv6 as inet_ntop writes it); in an
   * interval set a prefix (`10.0.0.0/24`) or a range (`10.1.0.1-10.1.0.5`) when it covers more than one address;
   * `*` for a catch-all element; other keys as hex.
   */
  address: string;
  /** The element's comment, when it has one. */
  comment: string | undefined;
  /** Interval sets only: the first and last key the element covers, when it covers more than one. */
  range?: { first: string; last: string };
  /** Maps only: what the key maps to (absent, with the attribute in `raw`, when podnet cannot decode it). */
  data?: NftElementData;
  /**
   * NFT_SET_ELEM_* flags other than INTERVAL_END (which made the range): CATCHALL 0x2 for `*`; absent when it has
   * none.
   */
  flags?: number;
  /**
   * The attributes podnet does not decode (NFTA_SET_ELEM_*): an element's timeout and expiration, the end key of a
   * concatenated range (KEY_END), its expressions, an object reference, user data beyond the comment; in an interval
   * set those of the range's end element follow its start's. Absent when there are none.
   */
  raw?: NftRawAttr[];
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
  /** Its expressions, decoded (the ones podnet does not model as `{ type: 'raw' }`, with their bytes as listed). */
  exprs: NftExpr[];
  /**
   * The attributes podnet does not decode (NFTA_RULE_*, e.g. COMPAT; user data beyond the comment); absent when
   * there are none.
   */
  raw?: NftRawAttr[];
}

/** NftRawRule is another name for NftRule. */
export type NftRawRule = NftRule;

/** NftRunOptions are the options of Nftables.run. */
export interface NftRunOptions {
  /**
   * generation is a value generation() returned: the batch carries it, and the kernel refuses the batch whole (an
   * NftablesGenerationError, nothing applied) when any transaction in the namespace committed since it was read.
   */
  generation?: number;
}
