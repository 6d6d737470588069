/**
 * Nftables: tables, chains, sets and set elements of one network namespace over nf_tables netlink, spoken by the
 * addon's codec on the same engine as ipset and rtnetlink (no `nft` binary). Changes go in transactions: one batch,
 * one sendmsg, one kernel transaction, all or nothing. Element adds are exclusive (EEXIST on a duplicate); replacing
 * is explicit. Operations run one after another in call order.
 */
import { NftablesError, PodnetError, withCallerStack } from '../errors.js';
import {
  native,
  type RawNftAttr,
  type RawNftChain,
  type RawNftElement,
  type RawNftMessage,
  type RawNftRule,
  type RawNftSet,
  type RawNftTable,
  type RawNftablesHandle,
} from '../native.js';
import { formatIp } from '../ipset/address.js';
import { checkNetlinkOpenOptions } from '../netlink/open-options.js';
import type { Netns } from '../netns.js';
import { checkString, invalidType } from '../validate.js';
import { withContext } from './errors.js';
import { toExpr } from './expr-decode.js';
import { VERDICTS } from './expr-names.js';
import { FAMILIES, familyName, hookName, policyName } from './names.js';
import type { NftVerifyResult } from './ruleset-diff.js';
import { applyRuleset, carriedElements, removeRuleset, verifyRuleset } from './ruleset-ops.js';
import { type NftRuleset, checkRuleset } from './ruleset.js';
import { addressKey } from './address-key.js';
import { NftTransaction } from './transaction.js';
import type {
  NftChain,
  NftElement,
  NftElementData,
  NftElementSpec,
  NftFamily,
  NftListing,
  NftMapData,
  NftRawAttr,
  NftRule,
  NftSet,
  NftSetKeyType,
  NftTable,
  NftTableRef,
  NftablesOpenOptions,
} from './types.js';

const K = native.nftablesConstants;

const NFT_SET_INTERVAL = 0x4;
const NFT_SET_MAP = 0x8;
const NFT_SET_ELEM_INTERVAL_END = 0x1;
const NFT_SET_ELEM_CATCHALL = 0x2;
const NFT_CHAIN_BASE = 0x1;
const NFT_DATA_VERDICT = 0xffffff00;
const NFTNL_SET_ELEM_F_INTERVAL_OPEN = 0x1;
// Attribute numbers of the kernel's NFTA_* enums that the conversions below take apart.
const NFTA_TABLE_USERDATA = 6;
const NFTA_CHAIN_USERDATA = 12;
const NFTA_SET = { DATA_TYPE: 6, DATA_LEN: 7, USERDATA: 13, TYPE: 19, COUNT: 20 } as const;
const NFTA_SET_ELEM = { DATA: 2, USERDATA: 6 } as const;
const NFTA_RULE_USERDATA = 7;
const NFTA_DATA = { VALUE: 1, VERDICT: 2 } as const;
const NFTA_VERDICT = { CODE: 1, CHAIN: 2 } as const;

const verdictNames = new Map<number, keyof typeof VERDICTS>(Object.entries(VERDICTS).map(([k, v]) => [v, k as keyof typeof VERDICTS]));

/**
 * ipv6Text writes 16 bytes as glibc's inet_ntop does (and so nft): formatIp's RFC 5952 form, which already keeps an
 * IPv4-mapped address dotted (`::ffff:10.1.2.3`), and also the IPv4-compatible form inet_ntop dots, six zero groups
 * then a non-zero seventh (`::10.1.2.3`). Its test for seven zero groups (`::0.0.0.2`) can never hold, so `::2` stays
 * hex, as do SIIT (`::ffff:0:a01:203`) and NAT64 (`64:ff9b::a01:203`) addresses.
 */
function ipv6Text(key: Buffer): string {
  const compat = key.subarray(0, 12).every((b) => b === 0) && (key[12] !== 0 || key[13] !== 0);
  return compat ? `::${Array.from(key.subarray(12)).join('.')}` : formatIp(6, key);
}

/** keyText writes a key of the set's key type (by its length when the type is not known). */
function keyText(key: Buffer, keyType?: number): string {
  const v4 = keyType === undefined ? key.length === 4 : keyType === K.typeIpv4Addr && key.length === 4;
  const v6 = keyType === undefined ? key.length === 16 : keyType === K.typeIpv6Addr && key.length === 16;
  if (v4) return Array.from(key).join('.');
  if (v6) return ipv6Text(key);
  return key.toString('hex');
}

/** attributesOf splits a nest into its attributes, or undefined when one's length does not fit. */
function attributesOf(data: Buffer): { type: number; data: Buffer }[] | undefined {
  const out: { type: number; data: Buffer }[] = [];
  for (let off = 0; off < data.length; ) {
    if (data.length - off < 4) return undefined;
    const len = data.readUInt16LE(off);
    if (len < 4 || len > data.length - off) return undefined;
    out.push({ type: data.readUInt16LE(off + 2) & 0x3fff, data: data.subarray(off + 4, off + len) });
    off += (len + 3) & ~3;
  }
  return out;
}

/**
 * udataDecoded tells whether libnftnl user data holds only well-formed records that the caller accepts: the ones
 * podnet decodes (comments) or writes itself. Anything else keeps the user data raw.
 */
function udataDecoded(data: Buffer, known: (type: number, value: Buffer) => boolean): boolean {
  for (let off = 0; off < data.length; ) {
    if (data.length - off < 2) return false;
    const len = data[off + 1]!;
    if (len > data.length - off - 2 || !known(data[off]!, data.subarray(off + 2, off + 2 + len))) return false;
    off += 2 + len;
  }
  return true;
}

/** rawOf keeps the attributes podnet does not decode, undefined when none is left. */
function rawOf(unknown: readonly RawNftAttr[], decoded: (a: RawNftAttr) => boolean): NftRawAttr[] | undefined {
  const raw = unknown.filter((a) => !decoded(a)).map((a) => ({ type: a.type, data: a.data }));
  return raw.length > 0 ? raw : undefined;
}

const commentOnly = (type: number): boolean => type === 0;

function listing<T>(objects: T[], raw: readonly RawNftMessage[]): NftListing<T> {
  const messages = Object.freeze(raw.map((m) => Object.freeze({ type: m.type, payload: m.payload })));
  return Object.defineProperty(objects, 'rawMessages', { value: messages, enumerable: false }) as NftListing<T>;
}

/** tableMustExist throws ENOENT (as the kernel does for a set dump) unless the family has a table of that name. */
async function tableMustExist(h: RawNftablesHandle, family: number, name: string): Promise<void> {
  if ((await h.tables(family)).objects.some((t) => t.name === name)) return;
  throw new NftablesError(`nftables: no table '${name}'`, 'ENOENT', -2, { operation: 'tables' });
}

function toTable(t: RawNftTable): NftTable {
  const table: NftTable = { family: familyName(t.family), name: t.name, handle: t.handle, flags: t.flags, use: t.use, comment: t.comment };
  const raw = rawOf(t.unknown, (a) => a.type === NFTA_TABLE_USERDATA && udataDecoded(a.data, commentOnly));
  if (raw) table.raw = raw;
  return table;
}

function toChain(c: RawNftChain): NftChain {
  const chain: NftChain = {
    family: familyName(c.family),
    table: c.table,
    name: c.name,
    handle: c.handle,
    type: c.type,
    hook: c.hook === undefined ? undefined : hookName(c.family, c.hook),
    priority: c.priority,
    policy: c.policy === undefined ? undefined : policyName(c.policy),
    use: c.use,
    comment: c.comment,
  };
  const flags = c.flags & ~NFT_CHAIN_BASE;
  if (flags !== 0) chain.flags = flags;
  const raw = rawOf(c.unknown, (a) => a.type === NFTA_CHAIN_USERDATA && udataDecoded(a.data, commentOnly));
  if (raw) chain.raw = raw;
  return chain;
}

function typeName(type: number): NftSetKeyType | number {
  return type === K.typeIpv4Addr ? 'ipv4_addr' : type === K.typeIpv6Addr ? 'ipv6_addr' : type;
}

/** mapOf is a map's data type and length, undefined for a set (or a map whose data attributes are not both there). */
function mapOf(s: RawNftSet): NftMapData | undefined {
  if (!(s.flags & NFT_SET_MAP)) return undefined;
  const type = s.unknown.find((a) => a.type === NFTA_SET.DATA_TYPE);
  const len = s.unknown.find((a) => a.type === NFTA_SET.DATA_LEN);
  if (type?.data.length !== 4 || len?.data.length !== 4) return undefined;
  const t = type.data.readUInt32BE(0);
  return { type: t === NFT_DATA_VERDICT ? 'verdict' : typeName(t), length: len.data.readUInt32BE(0) };
}

function toSet(s: RawNftSet): NftSet {
  const set: NftSet = { family: familyName(s.family), table: s.table, name: s.name, handle: s.handle, type: typeName(s.keyType), keyLength: s.keyLen, flags: s.flags, size: s.size, comment: s.comment };
  const map = mapOf(s);
  if (map) set.map = map;
  const raw = rawOf(s.unknown, (a) => {
    if (a.type === NFTA_SET.TYPE || a.type === NFTA_SET.COUNT) return true;
    if (map && (a.type === NFTA_SET.DATA_TYPE || a.type === NFTA_SET.DATA_LEN)) return true;
    // The key's byte order (record 0), which podnet writes too, and the comment (7).
    return a.type === NFTA_SET.USERDATA && udataDecoded(a.data, (type) => type === 0 || type === 7);
  });
  if (raw) set.raw = raw;
  return set;
}

/** elementData decodes NFTA_SET_ELEM_DATA (an NFTA_DATA nest), undefined when it is in a form podnet does not know. */
function elementData(data: Buffer, map: NftMapData | undefined): NftElementData | undefined {
  const top = attributesOf(data);
  if (top?.length !== 1) return undefined;
  const [d] = top as [{ type: number; data: Buffer }];
  if (d.type === NFTA_DATA.VALUE) {
    const type = map?.type;
    return { value: keyText(d.data, type === 'ipv4_addr' ? K.typeIpv4Addr : type === 'ipv6_addr' ? K.typeIpv6Addr : -1) };
  }
  if (d.type !== NFTA_DATA.VERDICT) return undefined;
  const parts = attributesOf(d.data);
  const code = parts?.find((p) => p.type === NFTA_VERDICT.CODE);
  const chain = parts?.find((p) => p.type === NFTA_VERDICT.CHAIN);
  if (!parts || code?.data.length !== 4 || parts.some((p) => p !== code && p !== chain)) return undefined;
  const n = code.data.readInt32BE(0);
  const verdict = verdictNames.get(n) ?? n;
  if (verdict === 'jump' || verdict === 'goto') {
    const name = chain?.data.toString('utf8').replace(/\0+$/, '');
    return name ? { verdict, chain: name } : undefined;
  }
  return chain ? undefined : { verdict };
}

/** The set an element listing is of, when known: how its keys are written, whether it is an interval set or a map. */
interface ElementContext {
  keyType: number | undefined;
  interval: boolean;
  map: NftMapData | undefined;
}

function contextOf(s: RawNftSet | undefined): ElementContext {
  return { keyType: s?.keyType, interval: s !== undefined && (s.flags & NFT_SET_INTERVAL) !== 0, map: s && mapOf(s) };
}

function toElement(e: RawNftElement, ctx: ElementContext): NftElement {
  const catchAll = (e.flags & NFT_SET_ELEM_CATCHALL) !== 0 && e.key.length === 0;
  const el: NftElement = { address: catchAll ? '*' : keyText(e.key, ctx.keyType), comment: e.comment };
  const data = ctx.map ? e.unknown.filter((a) => a.type === NFTA_SET_ELEM.DATA) : [];
  const decoded = data.length === 1 ? elementData(data[0]!.data, ctx.map) : undefined;
  if (decoded) el.data = decoded;
  const flags = e.flags & ~NFT_SET_ELEM_INTERVAL_END;
  if (flags !== 0) el.flags = flags;
  const raw = rawOf(e.unknown, (a) => {
    if (decoded && a.type === NFTA_SET_ELEM.DATA) return true;
    // The comment (record 0), and nft's mark of a range open to the top (record 1), which the range shows.
    return a.type === NFTA_SET_ELEM.USERDATA && udataDecoded(a.data, (type, v) => type === 0 || (type === 1 && v.length === 4 && v.readUInt32LE(0) === NFTNL_SET_ELEM_F_INTERVAL_OPEN));
  });
  if (raw) el.raw = raw;
  return el;
}

const toBig = (key: Buffer): bigint => (key.length === 0 ? 0n : BigInt(`0x${key.toString('hex')}`));
const fromBig = (n: bigint, len: number): Buffer => Buffer.from(n.toString(16).padStart(len * 2, '0'), 'hex');

/** An interval set's element merged from its start and end, with its bounds as numbers (for testElement). */
interface Interval {
  element: NftElement;
  first: bigint;
  last: bigint;
}

/**
 * intervals merges an interval set's elements: each start with the end element that follows it in key order (the
 * address after the range), or, with none, up to the top of the key space (as the kernel keeps `0.0.0.0/0`). Ends
 * that follow no start (nft's marker at 0, before the first range) are no members and go.
 */
function intervals(list: RawNftElement[], ctx: ElementContext): { ranges: Interval[]; others: NftElement[] } {
  const others: NftElement[] = [];
  const keyed: { e: RawNftElement; k: bigint; end: boolean }[] = [];
  for (const e of list) {
    if (e.key.length === 0) others.push(toElement(e, ctx));
    else keyed.push({ e, k: toBig(e.key), end: (e.flags & NFT_SET_ELEM_INTERVAL_END) !== 0 });
  }
  // In key order, an end before a start at the same key: that end closes the range before.
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : Number(b.end) - Number(a.end)));
  const ranges: Interval[] = [];
  for (let i = 0; i < keyed.length; i++) {
    const start = keyed[i]!;
    if (start.end) continue;
    const len = start.e.key.length;
    const top = (1n << BigInt(len * 8)) - 1n;
    const next = keyed[i + 1];
    const closed = next?.end === true && next.e.key.length === len;
    const last = closed ? next.k - 1n : top;
    const element = toElement(start.e, ctx);
    if (closed) {
      i++;
      const endRaw = toElement(next.e, ctx).raw;
      if (endRaw) element.raw = [...(element.raw ?? []), ...endRaw];
    }
    if (last > start.k) {
      const firstText = element.address;
      const lastText = keyText(fromBig(last, len), ctx.keyType);
      element.range = { first: firstText, last: lastText };
      const size = last - start.k + 1n;
      const address = ctx.keyType === undefined || ctx.keyType === K.typeIpv4Addr || ctx.keyType === K.typeIpv6Addr;
      const bits = size.toString(2).length - 1;
      const prefix = address && (size & (size - 1n)) === 0n && start.k % size === 0n;
      element.address = prefix ? `${firstText}/${len * 8 - bits}` : `${firstText}-${lastText}`;
    }
    ranges.push({ element, first: start.k, last });
  }
  return { ranges, others };
}

function toElements(list: RawNftElement[], set: RawNftSet | undefined): NftElement[] {
  const ctx = contextOf(set);
  if (!ctx.interval) return list.map((e) => toElement(e, ctx));
  const { ranges, others } = intervals(list, ctx);
  return [...ranges.map((r) => r.element), ...others];
}

function toRule(r: RawNftRule): NftRule {
  const rule: NftRule = { family: familyName(r.family), table: r.table, chain: r.chain, handle: r.handle, comment: r.comment, exprs: r.exprs.map(toExpr), expressions: r.expressions };
  const raw = rawOf(r.unknown, (a) => a.type === NFTA_RULE_USERDATA && udataDecoded(a.data, commentOnly));
  if (raw) rule.raw = raw;
  return rule;
}

/** setOf is the set as listed, undefined when the set went between two dumps. */
async function setOf(h: RawNftablesHandle, family: number, table: string, name: string): Promise<RawNftSet | undefined> {
  return (await h.sets(family, table)).objects.find((x) => x.name === name);
}

function checkTable(value: unknown): { family: number; name: string } {
  if (typeof value !== 'object' || value === null) throw invalidType('table', 'a table reference { family, name }', value);
  const t = value as Partial<NftTableRef>;
  if (typeof t.family !== 'string' || !Object.hasOwn(FAMILIES, t.family)) throw invalidType('table.family', `one of ${Object.keys(FAMILIES).join(', ')}`, t.family);
  return { family: FAMILIES[t.family as NftFamily], name: checkString('table.name', t.name, K.nameMax) };
}

/**
 * Nftables is an open nf_tables netlink session in one namespace. Close it (or `using` it) when done. Operations run
 * in call order; a kernel refusal rejects with NftablesError (the errno's name as `code`, with the operation and the
 * object), a lost or malformed answer with PodnetSystemError (`ETIMEDOUT` after timeoutMs, `EBADMSG`), and calls
 * after close() with PodnetError `ERR_NFTABLES_CLOSED`. Bad arguments reject with InvalidArgumentError before
 * anything is sent.
 */
export class Nftables implements Disposable {
  #handle: RawNftablesHandle | undefined;
  readonly #netns: Netns | undefined;
  #tail: Promise<unknown> = Promise.resolve();

  private constructor(handle: RawNftablesHandle, netns: Netns | undefined) {
    this.#handle = handle;
    this.#netns = netns;
  }

  /**
   * Nftables.open opens a NETLINK_NETFILTER socket inside the namespace (a Netns or a path; default: the current
   * one), or talks to a NetlinkPeer. Throws InvalidArgumentError on bad options, PodnetSystemError when the namespace
   * cannot be opened or entered.
   */
  static async open(options: NftablesOpenOptions = {}): Promise<Nftables> {
    const { timeoutMs, peer, netns } = checkNetlinkOpenOptions(options);
    try {
      const handle = peer
        ? new native.NftablesHandle(-1, timeoutMs, (req) => peer.exchange(req))
        : new native.NftablesHandle(netns ? netns.fd : -1, timeoutMs);
      return new Nftables(handle, netns);
    } catch (err) {
      netns?.close();
      throw err;
    }
  }

  /** netns is the namespace this client works in (undefined: the process's own, or a peer's). */
  get netns(): Netns | undefined {
    return this.#netns;
  }

  /** closed tells whether close() was called. */
  get closed(): boolean {
    return this.#handle === undefined;
  }

  #live(): RawNftablesHandle {
    if (!this.#handle) throw new PodnetError('nftables client is closed', 'ERR_NFTABLES_CLOSED');
    return this.#handle;
  }

  #serial<T>(operation: string, object: unknown, fn: (h: RawNftablesHandle) => Promise<T>, opAt?: Parameters<typeof withContext>[4]): Promise<T> {
    const caller = new Error();
    let handle: RawNftablesHandle;
    try {
      handle = this.#live();
    } catch (err) {
      return Promise.reject(err);
    }
    const run = this.#tail.then(() => fn(handle)).catch((err: unknown) => {
      throw withContext(err, operation, object, this.#netns?.path, opAt);
    });
    this.#tail = run.catch(() => undefined);
    return withCallerStack(run, caller);
  }

  /** transaction starts an empty transaction for run(). */
  transaction(): NftTransaction {
    return new NftTransaction();
  }

  /**
   * run sends the transaction as one batch: everything in it is applied, or nothing. Throws the transaction's first
   * argument error (InvalidArgumentError) before anything is sent; a kernel refusal is an NftablesError whose `index`
   * and `object` name the op that caused it (and `element`, for element ops, the first element of the refused part).
   */
  async run(tx: NftTransaction): Promise<void> {
    if (!(tx instanceof NftTransaction)) return Promise.reject(invalidType('tx', 'an NftTransaction', tx));
    if (tx.error) return Promise.reject(tx.error);
    const { ops, opAt } = tx.compile();
    if (ops.length === 0) return this.#serial('run', undefined, async () => undefined);
    return this.#serial('run', undefined, (h) => h.run(ops), opAt);
  }

  /**
   * tables lists the tables of one family, or of all (families podnet does not name by number). Every listing keeps
   * what it does not decode: attributes in each object's `raw`, other messages in the listing's `rawMessages`.
   */
  async tables(family?: NftFamily): Promise<NftListing<NftTable>> {
    let f = 0;
    if (family !== undefined) f = checkTable({ family, name: 'x' }).family;
    return this.#serial('tables', family, async (h) => {
      const { objects, raw } = await h.tables(f);
      return listing(objects.map(toTable), raw);
    });
  }

  /** chains lists the chains of a table (ENOENT when the table is missing). */
  async chains(table: NftTableRef): Promise<NftListing<NftChain>> {
    const t = checkTable(table);
    return this.#serial('chains', table, async (h) => {
      // The kernel's chain dump filters by family only: the table's own are picked here.
      const { objects, raw } = await h.chains(t.family, t.name);
      const chains = objects.filter((c) => c.table === t.name);
      if (chains.length === 0) await tableMustExist(h, t.family, t.name);
      return listing(chains.map(toChain), raw);
    });
  }

  /**
   * sets lists the sets of a table (ENOENT when the table is missing); maps among them (nft's `map`) carry `map`,
   * their data's type.
   */
  async sets(table: NftTableRef): Promise<NftListing<NftSet>> {
    const t = checkTable(table);
    return this.#serial('sets', table, async (h) => {
      const { objects, raw } = await h.sets(t.family, t.name);
      return listing(objects.map(toSet), raw);
    });
  }

  /**
   * rules lists the rules of a table in chain order with their handles, comments and expressions (decoded into the
   * rule AST; what it does not model as `{ type: 'raw' }`). ENOENT when the table is missing.
   */
  async rules(table: NftTableRef): Promise<NftListing<NftRule>> {
    const t = checkTable(table);
    return this.#serial('rules', table, async (h) => {
      const { objects, raw } = await h.rules(t.family, t.name);
      // A rule dump of a missing table is empty rather than refused: looked up, so it is ENOENT as sets() is.
      if (objects.length === 0) await tableMustExist(h, t.family, t.name);
      return listing(objects.map(toRule), raw);
    });
  }

  /**
   * elements lists a set's elements with their comments (ENOENT when the table or set is missing): a map's with
   * their `data`; an interval set's as the ranges `nft list` prints (`10.0.0.0/24`, `10.1.0.1-10.1.0.5`), in key
   * order, the kernel's range-end elements merged into them. It also lists the table's sets, to know the set's kind.
   */
  async elements(table: NftTableRef, set: string): Promise<NftElement[]> {
    const t = checkTable(table);
    const s = checkString('set', set, K.nameMax);
    return this.#serial('elements', { table, set }, async (h) => {
      const list = await h.elements(t.family, t.name, s);
      return toElements(list, await setOf(h, t.family, t.name, s));
    });
  }

  /**
   * addElement adds elements in one transaction: exclusive (EEXIST on one already there) unless `{ replace: true }`.
   */
  async addElement(table: NftTableRef, set: string, elements: NftElementSpec | NftElementSpec[], options: { replace?: boolean } = {}): Promise<void> {
    return this.run(new NftTransaction().addElement(table, set, elements, options));
  }

  /** deleteElement deletes elements in one transaction; ENOENT (`isNotFound`) when one is missing. */
  async deleteElement(table: NftTableRef, set: string, elements: { address: string } | { address: string }[]): Promise<void> {
    return this.run(new NftTransaction().deleteElement(table, set, elements));
  }

  /**
   * testElement returns the element with its comment, or undefined when the set does not hold it (the kernel's
   * ENOENT; a missing table or set answers the same). In an interval set it is the range that holds the address, as
   * elements() lists it; in a map it carries its `data`.
   */
  async testElement(table: NftTableRef, set: string, address: string): Promise<NftElement | undefined> {
    const t = checkTable(table);
    const s = checkString('set', set, K.nameMax);
    const key = addressKey('address', address);
    return this.#serial('testElement', { table, set, address }, async (h) => {
      const e = await h.getElement(t.family, t.name, s, key);
      if (e === null || e.flags & NFT_SET_ELEM_INTERVAL_END) return undefined;
      const info = await setOf(h, t.family, t.name, s);
      const ctx = contextOf(info);
      if (!ctx.interval) return toElement(e, ctx);
      // The kernel answers with the start of the range: the range whole comes from the listing.
      const k = toBig(Buffer.from(key));
      return intervals(await h.elements(t.family, t.name, s), ctx).ranges.find((r) => r.first <= k && k <= r.last)?.element;
    });
  }

  /**
   * apply writes the ruleset in one transaction: each of its tables added, flushed (every rule of every chain gone)
   * and refilled with its sets, chains and rules; each owned table it does not list deleted. Set elements are left
   * as they are, and so are chains and sets in its tables that it does not have (apply does not list first;
   * reconcile deletes them). Throws InvalidArgumentError for a malformed ruleset before anything is sent; rejects with
   * NftablesError naming the object the kernel refused, and then nothing changed.
   */
  async apply(ruleset: NftRuleset): Promise<void> {
    return applyRuleset(this, checkRuleset(ruleset));
  }

  /**
   * verify lists the ruleset's tables and compares them with it: missing or different objects, unexpected ones in
   * its tables (and owned tables it does not want), chains whose rules are right but in another order. Changes
   * nothing. Throws InvalidArgumentError for a malformed ruleset; rejects with NftablesError when a listing fails (a
   * missing table is reported as missing, not thrown).
   */
  async verify(ruleset: NftRuleset): Promise<NftVerifyResult> {
    return (await verifyRuleset(this, checkRuleset(ruleset))).result;
  }

  /**
   * reconcile applies the ruleset when verify finds drift, deleting in the same transaction the chains and sets of
   * its tables that it does not have or has in another kind; a set remade with the same key type (its flags or size
   * changed) keeps its elements, added back in that transaction; a set whose key type changed starts empty. Resolves
   * whether it changed anything (a second call changes nothing). Throws and rejects as verify and apply do.
   */
  async reconcile(ruleset: NftRuleset): Promise<{ changed: boolean }> {
    const checked = checkRuleset(ruleset);
    const { result, remake } = await verifyRuleset(this, checked);
    if (result.inSync) return { changed: false };
    // Chains and sets in its tables that it does not have (or has in another kind) go in the same transaction, and
    // a set remade in its key type gets its elements back in it.
    await applyRuleset(this, checked, remake, await carriedElements(this, remake));
    return { changed: true };
  }

  /**
   * remove deletes the ruleset's tables and its owned tables (with their chains, rules, sets and elements) in one
   * transaction; tables already gone are fine. Throws InvalidArgumentError for a malformed ruleset; rejects with
   * NftablesError when the kernel refuses (a rule elsewhere jumping into one, say), and then nothing changed.
   */
  async remove(ruleset: NftRuleset): Promise<void> {
    return removeRuleset(this, checkRuleset(ruleset));
  }

  /**
   * close refuses new operations at once (they reject with `ERR_NFTABLES_CLOSED`) and releases the socket and the
   * namespace handle when the operations queued before it have finished; idempotent.
   */
  close(): void {
    const h = this.#handle;
    if (!h) return;
    this.#handle = undefined;
    const netns = this.#netns;
    void this.#tail.then(() => {
      h.close();
      netns?.close();
    });
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }
}
