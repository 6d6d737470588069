/**
 * The read-only view of a FakeNftables: plain frozen data copied out of the state, with comments read from the
 * user data the way nft reads them (libnftnl's TLVs) and keys of 4 and 16 bytes written as addresses.
 */
import { formatAddr } from '../netlink-kernel/address.js';
import type { ChainObj, ElementObj, RuleObj, SetObj, State, TableObj, Udata } from './model.js';

/** FakeNftElementSnapshot is one set element: its key and its comment (libnftnl's element comment record). */
export interface FakeNftElementSnapshot {
  /** The key as an address when it is 4 or 16 bytes long, else hex. */
  key: string;
  /** The comment from the element's user data. */
  comment: string | undefined;
  /** A map element's data: the NFTA_SET_ELEM_DATA nest as the kernel dumps it, hex. Only map elements have it. */
  data?: string;
}

/** FakeNftSetSnapshot is one set: its handle, key type and length, NFT_SET_* flags, comment, users and elements. */
export interface FakeNftSetSnapshot {
  /** The set's name. */
  name: string;
  /** Its handle. */
  handle: number;
  /** nft's datatype id of its keys (7 ipv4_addr, 8 ipv6_addr). */
  keyType: number;
  /** The key length in bytes. */
  keyLength: number;
  /** NFT_SET_* flags. */
  flags: number;
  /** The comment from its user data. */
  comment: string | undefined;
  /** How many rules refer to the set (while non-zero, deleting it is EBUSY). */
  use: number;
  /** Its elements. */
  elements: readonly FakeNftElementSnapshot[];
}

/** FakeNftRuleSnapshot is one rule: its handle, comment, and its expressions in the form the kernel dumps them. */
export interface FakeNftRuleSnapshot {
  /** Its handle. */
  handle: number;
  /** The comment from its user data. */
  comment: string | undefined;
  /** The NFTA_RULE_EXPRESSIONS payload as it was sent, hex. */
  expressions: string;
}

/**
 * FakeNftChainSnapshot is one chain: a base chain's type, hook number, priority and policy (NF_DROP 0, NF_ACCEPT 1),
 * and its rules in order.
 */
export interface FakeNftChainSnapshot {
  /** The chain's name. */
  name: string;
  /** Its handle. */
  handle: number;
  /** A base chain's type. */
  type: string | undefined;
  /** A base chain's hook number (NF_INET_*). */
  hook: number | undefined;
  /** A base chain's priority. */
  priority: number | undefined;
  /** A base chain's policy (NF_DROP 0, NF_ACCEPT 1). */
  policy: number | undefined;
  /** The comment from its user data. */
  comment: string | undefined;
  /** Its rules, in order. */
  rules: readonly FakeNftRuleSnapshot[];
}

/** FakeNftTableSnapshot is one table: family number (NFPROTO_*), name, handle, flags, comment, chains and sets. */
export interface FakeNftTableSnapshot {
  /** The family number (NFPROTO_*: 1 inet, 2 ip, 10 ip6, ...). */
  family: number;
  /** The table's name. */
  name: string;
  /** Its handle. */
  handle: number;
  /** NFT_TABLE_F_* flags. */
  flags: number;
  /** The comment from its user data. */
  comment: string | undefined;
  /** Its chains, in creation order. */
  chains: readonly FakeNftChainSnapshot[];
  /** Its sets, in creation order. */
  sets: readonly FakeNftSetSnapshot[];
}

/** FakeNftablesSnapshot is what FakeNftables.dump returns: the generation and every table, in creation order. */
export interface FakeNftablesSnapshot {
  /** The generation: moves on with every batch that changed something. */
  genId: number;
  /** Every table, in creation order. */
  tables: readonly FakeNftTableSnapshot[];
}

/** udataComment reads the first TLV record of the given type as a NUL-terminated string. */
export function udataComment(udata: Udata, type: number): string | undefined {
  if (!udata) return undefined;
  let off = 0;
  while (off + 2 <= udata.length) {
    const t = udata[off]!;
    const n = udata[off + 1]!;
    if (n > udata.length - off - 2) return undefined;
    if (t === type) {
      const value = udata.subarray(off + 2, off + 2 + n);
      const nul = value.indexOf(0);
      return nul < 0 ? undefined : Buffer.from(value.subarray(0, nul)).toString('utf8');
    }
    off += 2 + n;
  }
  return undefined;
}

function keyText(key: Uint8Array): string {
  return key.length === 4 || key.length === 16 ? formatAddr(key) : Buffer.from(key).toString('hex');
}

function elementSnapshot(e: ElementObj): FakeNftElementSnapshot {
  const snap: FakeNftElementSnapshot = { key: keyText(e.key), comment: udataComment(e.udata, 0) };
  if (e.data) snap.data = Buffer.from(e.data).toString('hex');
  return Object.freeze(snap);
}

function setSnapshot(s: SetObj): FakeNftSetSnapshot {
  return Object.freeze({
    name: s.name,
    handle: Number(s.handle),
    keyType: s.keyType,
    keyLength: s.keyLen,
    flags: s.flags,
    comment: udataComment(s.udata, 7),
    use: s.use,
    elements: Object.freeze([...s.elements.values()].map(elementSnapshot)),
  });
}

function ruleSnapshot(r: RuleObj): FakeNftRuleSnapshot {
  return Object.freeze({ handle: Number(r.handle), comment: udataComment(r.udata, 0), expressions: Buffer.from(r.expressions).toString('hex') });
}

function chainSnapshot(c: ChainObj): FakeNftChainSnapshot {
  return Object.freeze({
    name: c.name,
    handle: Number(c.handle),
    type: c.base?.type,
    hook: c.base?.hook,
    priority: c.base?.priority,
    policy: c.base?.policy,
    comment: udataComment(c.udata, 0),
    rules: Object.freeze(c.rules.map(ruleSnapshot)),
  });
}

function tableSnapshot(t: TableObj): FakeNftTableSnapshot {
  return Object.freeze({
    family: t.family,
    name: t.name,
    handle: Number(t.handle),
    flags: t.flags,
    comment: udataComment(t.udata, 0),
    chains: Object.freeze([...t.chains.values()].map(chainSnapshot)),
    sets: Object.freeze([...t.sets.values()].map(setSnapshot)),
  });
}

export function snapshot(state: State): FakeNftablesSnapshot {
  return Object.freeze({ genId: state.genId, tables: Object.freeze([...state.tables.values()].map(tableSnapshot)) });
}
