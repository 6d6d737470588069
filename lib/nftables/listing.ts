/**
 * The conversions of nf_tables dumps (the addon's raw objects) into the listings Nftables answers with: names for
 * numbers, keys written as nft writes them, interval sets' start and end elements merged into ranges, map data
 * decoded, and whatever podnet does not decode kept raw, so a foreign object never breaks a listing.
 */
import {
  native,
  type RawNftAttr,
  type RawNftChain,
  type RawNftElement,
  type RawNftMessage,
  type RawNftRule,
  type RawNftSet,
  type RawNftTable,
} from '../native.js';
import { formatIpNtop } from '../address/index.js';
import { toExpr } from './expr-decode.js';
import { VERDICTS } from './expr-names.js';
import { familyName, hookName, policyName } from './names.js';
import type {
  NftChain,
  NftElement,
  NftElementData,
  NftListing,
  NftMapData,
  NftRawAttr,
  NftRule,
  NftSet,
  NftSetKeyType,
  NftTable,
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

/** keyText writes a key of the set's key type (by its length when the type is not known). */
function keyText(key: Buffer, keyType?: number): string {
  const v4 = keyType === undefined ? key.length === 4 : keyType === K.typeIpv4Addr && key.length === 4;
  const v6 = keyType === undefined ? key.length === 16 : keyType === K.typeIpv6Addr && key.length === 16;
  if (v4) return Array.from(key).join('.');
  if (v6) return formatIpNtop(6, key);
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

export function listing<T>(objects: T[], raw: readonly RawNftMessage[]): NftListing<T> {
  const messages = Object.freeze(raw.map((m) => Object.freeze({ type: m.type, payload: m.payload })));
  return Object.defineProperty(objects, 'rawMessages', { value: messages, enumerable: false }) as NftListing<T>;
}


export function toTable(t: RawNftTable): NftTable {
  const table: NftTable = { family: familyName(t.family), name: t.name, handle: t.handle, flags: t.flags, use: t.use, comment: t.comment };
  const raw = rawOf(t.unknown, (a) => a.type === NFTA_TABLE_USERDATA && udataDecoded(a.data, commentOnly));
  if (raw) table.raw = raw;
  return table;
}

export function toChain(c: RawNftChain): NftChain {
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

export function toSet(s: RawNftSet): NftSet {
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

export function toElements(list: RawNftElement[], set: RawNftSet | undefined): NftElement[] {
  const ctx = contextOf(set);
  if (!ctx.interval) return list.map((e) => toElement(e, ctx));
  const { ranges, others } = intervals(list, ctx);
  return [...ranges.map((r) => r.element), ...others];
}

export function toRule(r: RawNftRule): NftRule {
  const rule: NftRule = { family: familyName(r.family), table: r.table, chain: r.chain, handle: r.handle, comment: r.comment, exprs: r.exprs.map(toExpr), expressions: r.expressions };
  const raw = rawOf(r.unknown, (a) => a.type === NFTA_RULE_USERDATA && udataDecoded(a.data, commentOnly));
  if (raw) rule.raw = raw;
  return rule;
}


/** isRangeEnd tells whether an element is an interval set's range end, which marks where a range stops and is no member. */
export function isRangeEnd(e: RawNftElement): boolean {
  return (e.flags & NFT_SET_ELEM_INTERVAL_END) !== 0;
}

/** isIntervalSet tells whether the set (undefined: not known) keeps ranges. */
export function isIntervalSet(s: RawNftSet | undefined): boolean {
  return contextOf(s).interval;
}

/** elementOf converts one element of a set that is not an interval set. */
export function elementOf(e: RawNftElement, set: RawNftSet | undefined): NftElement {
  return toElement(e, contextOf(set));
}

/** rangeHolding is the range of an interval set's listing that holds key, undefined when none does. */
export function rangeHolding(list: RawNftElement[], set: RawNftSet | undefined, key: Uint8Array): NftElement | undefined {
  const k = toBig(Buffer.from(key));
  return intervals(list, contextOf(set)).ranges.find((r) => r.first <= k && k <= r.last)?.element;
}
