/**
 * The conversions of nf_tables dumps (the addon's objects) into the listings Nftables answers with: names for
 * numbers, keys written as nft writes them, interval sets' start and end elements merged into ranges, map data
 * named, and whatever podnet does not decode kept raw, so a foreign object never breaks a listing.
 *
 * The addon decodes (native/nftables/codec.cc, expr.cc): it parses every attribute, user data record and
 * expression once, in C++ where the fuzz target and the batch encoder share the same schema, and hands over finished
 * fields plus, in `unknown`, only the attributes it does not decode. Nothing here reads attributes or NFTA_* numbers:
 * parsing on both sides of the boundary let the two disagree on what counts as decoded.
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
import { NAMES_OF } from './expr-names.js';
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

/** keyText writes a key of the set's key type (by its length when the type is not known). */
function keyText(key: Buffer, keyType?: number): string {
  const v4 = keyType === undefined ? key.length === 4 : keyType === K.typeIpv4Addr && key.length === 4;
  const v6 = keyType === undefined ? key.length === 16 : keyType === K.typeIpv6Addr && key.length === 16;
  if (v4) return formatIpNtop(4, key);
  if (v6) return formatIpNtop(6, key);
  return key.toString('hex');
}

/** rawOf copies the attributes the addon did not decode, undefined when there are none. */
function rawOf(unknown: readonly RawNftAttr[]): NftRawAttr[] | undefined {
  return unknown.length > 0 ? unknown.map((a) => ({ type: a.type, data: a.data })) : undefined;
}

/** listing is the objects of a dump as an NftListing: the dump's messages of other types ride along, not enumerable. */
export function listing<T>(objects: T[], raw: readonly RawNftMessage[]): NftListing<T> {
  const messages = Object.freeze(raw.map((m) => Object.freeze({ type: m.type, payload: m.payload })));
  return Object.defineProperty(objects, 'rawMessages', { value: messages, enumerable: false }) as NftListing<T>;
}

/** toTable is a listed table. */
export function toTable(t: RawNftTable): NftTable {
  const table: NftTable = { family: familyName(t.family), name: t.name, handle: t.handle, flags: t.flags, use: t.use, comment: t.comment };
  const raw = rawOf(t.unknown);
  if (raw) table.raw = raw;
  return table;
}

/** toChain is a listed chain: hook and policy named, the base-chain flag left out of flags (the hook shows it). */
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
  const flags = c.flags & ~K.chainBase;
  if (flags !== 0) chain.flags = flags;
  const raw = rawOf(c.unknown);
  if (raw) chain.raw = raw;
  return chain;
}

function typeName(type: number): NftSetKeyType | number {
  return type === K.typeIpv4Addr ? 'ipv4_addr' : type === K.typeIpv6Addr ? 'ipv6_addr' : type;
}

/** mapOf is a map's data type and length, undefined for a set. */
function mapOf(s: RawNftSet): NftMapData | undefined {
  if (!s.map) return undefined;
  return { type: s.map.type === K.dataVerdict ? 'verdict' : typeName(s.map.type), length: s.map.length };
}

/** toSet is a listed set or map: its key type and a map's data type named. */
export function toSet(s: RawNftSet): NftSet {
  const set: NftSet = { family: familyName(s.family), table: s.table, name: s.name, handle: s.handle, type: typeName(s.keyType), keyLength: s.keyLen, flags: s.flags, size: s.size, comment: s.comment };
  const map = mapOf(s);
  if (map) set.map = map;
  const raw = rawOf(s.unknown);
  if (raw) set.raw = raw;
  return set;
}

/** elementData names a map element's data: a value written as the map's data type, a verdict by its name. */
function elementData(data: NonNullable<RawNftElement['data']>, map: NftMapData | undefined): NftElementData {
  if ('value' in data) {
    const type = map?.type;
    return { value: keyText(data.value, type === 'ipv4_addr' ? K.typeIpv4Addr : type === 'ipv6_addr' ? K.typeIpv6Addr : -1) };
  }
  const verdict = NAMES_OF.verdict.get(data.verdict) ?? data.verdict;
  // The addon hands over a chain with a jump or goto, and only then.
  if (verdict === 'jump' || verdict === 'goto') return { verdict, chain: data.chain! };
  return { verdict };
}

/** The set an element listing is of, when known: how its keys are written, whether it is an interval set or a map. */
interface ElementContext {
  keyType: number | undefined;
  interval: boolean;
  map: NftMapData | undefined;
}

function contextOf(s: RawNftSet | undefined): ElementContext {
  return { keyType: s?.keyType, interval: s !== undefined && (s.flags & K.setInterval) !== 0, map: s && mapOf(s) };
}

function toElement(e: RawNftElement, ctx: ElementContext): NftElement {
  const catchAll = (e.flags & K.setElemCatchall) !== 0 && e.key.length === 0;
  const el: NftElement = { address: catchAll ? '*' : keyText(e.key, ctx.keyType), comment: e.comment };
  if (e.data) el.data = elementData(e.data, ctx.map);
  const flags = e.flags & ~K.setElemIntervalEnd;
  if (flags !== 0) el.flags = flags;
  const raw = rawOf(e.unknown);
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
    else keyed.push({ e, k: toBig(e.key), end: (e.flags & K.setElemIntervalEnd) !== 0 });
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

/** toElements is a set's listed elements; an interval set's starts and ends are merged into ranges. */
export function toElements(list: RawNftElement[], set: RawNftSet | undefined): NftElement[] {
  const ctx = contextOf(set);
  if (!ctx.interval) return list.map((e) => toElement(e, ctx));
  const { ranges, others } = intervals(list, ctx);
  return [...ranges.map((r) => r.element), ...others];
}

/** toRule is a listed rule with its expressions in the rule AST. */
export function toRule(r: RawNftRule): NftRule {
  const rule: NftRule = { family: familyName(r.family), table: r.table, chain: r.chain, handle: r.handle, comment: r.comment, exprs: r.exprs.map(toExpr) };
  const raw = rawOf(r.unknown);
  if (raw) rule.raw = raw;
  return rule;
}

/** isRangeEnd tells whether an element is an interval set's range end, which marks where a range stops and is no member. */
export function isRangeEnd(e: RawNftElement): boolean {
  return (e.flags & K.setElemIntervalEnd) !== 0;
}

/** isIntervalSet tells whether the set (undefined: not known) keeps ranges. */
export function isIntervalSet(s: RawNftSet | undefined): boolean {
  return contextOf(s).interval;
}

/** elementOf converts one element of a set that is not an interval set. */
export function elementOf(e: RawNftElement, set: RawNftSet | undefined): NftElement {
  return toElement(e, contextOf(set));
}

/** elementConverter is elementOf for many elements of one set: what the set tells of its keys is read once. */
export function elementConverter(set: RawNftSet | undefined): (e: RawNftElement) => NftElement {
  const ctx = contextOf(set);
  return (e) => toElement(e, ctx);
}

/** rangeHolding is the range of an interval set's listing that holds key, undefined when none does. */
export function rangeHolding(list: RawNftElement[], set: RawNftSet | undefined, key: Uint8Array): NftElement | undefined {
  const k = toBig(Buffer.from(key));
  return intervals(list, contextOf(set)).ranges.find((r) => r.first <= k && k <= r.last)?.element;
}
