/**
 * NEWSET / DELSET and NEWSETELEM / DELSETELEM inside a batch (nf_tables_newset, delset, newsetelem, delsetelem):
 * a set's key type and length, flags and user data; an existing set is taken again only when it is the same set;
 * elements by key with their user data, an exclusive add of one already there is EEXIST, a plain add leaves it as
 * it is, a delete of a missing one is ENOENT. Interval sets are not modelled: the kernel keeps their elements as
 * range starts and ends (an address is then found inside a range, a second start overlaps), so the fake refuses
 * to create one (EOPNOTSUPP) rather than answer unlike the kernel; podnet's Nftables does not make them either.
 * Maps keep each element's data (a value of the map's data length, or a verdict), and adding a key again with other
 * data is EEXIST even without NLM_F_EXCL, as the kernel's clash check has it. A verdict map element that jumps or goes
 * to a chain is refused (EOPNOTSUPP): the kernel would count it as a use of the chain and walk it when validating
 * the table, which the fake does not model.
 */
import type { Attr } from '../netlink-kernel/codec.js';
import {
  E,
  NFT_DATA_VALUE_MAXLEN,
  NFT_SET_ANONYMOUS,
  NFT_SET_CONCAT,
  NFT_SET_CONSTANT,
  NFT_SET_EVAL,
  NFT_SET_EXPR,
  NFT_SET_INTERVAL,
  NFT_SET_MAP,
  NFT_SET_OBJECT,
  NFT_SET_TIMEOUT,
  NFT_SET_ELEM_INTERVAL_END,
  NFT_DATA_VERDICT,
  NFT_GOTO,
  NFT_JUMP,
  NFT_VERDICT_LEN,
  PLAIN_VERDICTS,
  NFTA_DATA,
  NFTA_VERDICT,
  NFTA_LIST_ELEM,
  NFTA_SET,
  NFTA_SET_ELEM,
  NFTA_SET_ELEM_LIST,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_NONREC,
  NLM_F_REPLACE,
} from './constants.js';
import type { Draft, SetObj, TableObj } from './model.js';
import { attr, concat, u32 } from './fill.js';
import { type Request, be32, fail, hex, nameOf, udataOf } from './request.js';
import { deleteTarget, lookupTable } from './tables.js';

/** BatchIds is what one pass over a batch carries from message to message. */
export interface BatchIds {
  /** The batch-local NFTA_SET_ID of sets made in this batch, to their names. */
  sets: Map<string, string>;
  /** The tables that took a rule, which the commit validates. */
  validate: Set<string>;
  /** The tables validated after every rule (VALIDATE_DO): the one that failed the commit when replayed, new ones. */
  validateNow: Set<string>;
}

const SET_FLAGS = NFT_SET_ANONYMOUS | NFT_SET_CONSTANT | NFT_SET_INTERVAL | NFT_SET_TIMEOUT | NFT_SET_MAP | NFT_SET_EVAL | NFT_SET_OBJECT | NFT_SET_CONCAT | NFT_SET_EXPR;
const NFT_DATA_RESERVED_MASK = 0xffffff00;
const NFT_SET_ELEM_CATCHALL = 0x2;

function both(flags: number, bits: number): boolean {
  return (flags & bits) === bits;
}

export function newSet(draft: Draft, req: Request, ids: BatchIds): void {
  const a = req.attrs;
  const nameAttr = a.get(NFTA_SET.NAME);
  const keyLenAttr = a.get(NFTA_SET.KEY_LEN);
  const idAttr = a.get(NFTA_SET.ID);
  if (!a.get(NFTA_SET.TABLE) || !nameAttr || !keyLenAttr || !idAttr) fail(E.EINVAL);
  const keyLen = be32(keyLenAttr);
  if (keyLen === 0 || keyLen > NFT_DATA_VALUE_MAXLEN) fail(E.EINVAL);
  let flags = 0;
  const flagsAttr = a.get(NFTA_SET.FLAGS);
  if (flagsAttr) {
    flags = be32(flagsAttr);
    if (flags & ~SET_FLAGS) fail(E.EOPNOTSUPP);
    if (both(flags, NFT_SET_MAP | NFT_SET_OBJECT) || both(flags, NFT_SET_EVAL | NFT_SET_OBJECT)) fail(E.EOPNOTSUPP);
    if ((flags & (NFT_SET_ANONYMOUS | NFT_SET_TIMEOUT | NFT_SET_EVAL)) === (NFT_SET_ANONYMOUS | NFT_SET_TIMEOUT)) fail(E.EOPNOTSUPP);
    if (both(flags, NFT_SET_CONSTANT | NFT_SET_TIMEOUT)) fail(E.EOPNOTSUPP);
    // Not the kernel's answer: see the header.
    if (flags & NFT_SET_INTERVAL) fail(E.EOPNOTSUPP);
  }
  let keyType = 0;
  const keyTypeAttr = a.get(NFTA_SET.KEY_TYPE);
  if (keyTypeAttr) {
    keyType = be32(keyTypeAttr);
    if (((keyType & NFT_DATA_RESERVED_MASK) >>> 0) === NFT_DATA_RESERVED_MASK) fail(E.EINVAL);
  }
  const dataTypeAttr = a.get(NFTA_SET.DATA_TYPE);
  let dataType = 0;
  let dataLen = 0;
  if (dataTypeAttr) {
    if (!(flags & NFT_SET_MAP)) fail(E.EINVAL);
    dataType = be32(dataTypeAttr);
    if (((dataType & NFT_DATA_RESERVED_MASK) >>> 0) === NFT_DATA_RESERVED_MASK && dataType !== NFT_DATA_VERDICT) fail(E.EINVAL);
    if (dataType === NFT_DATA_VERDICT) {
      dataLen = NFT_VERDICT_LEN;
    } else {
      const dl = a.get(NFTA_SET.DATA_LEN);
      if (!dl) fail(E.EINVAL);
      dataLen = be32(dl);
      if (dataLen === 0 || dataLen > NFT_DATA_VALUE_MAXLEN) fail(E.EINVAL);
    }
  } else if (flags & NFT_SET_MAP) {
    fail(E.EINVAL);
  }
  const table = lookupTable(draft, req.family, a.get(NFTA_SET.TABLE));
  const name = nameOf(nameAttr)!;
  const existing = table.sets.get(name);
  if (existing) {
    if (req.msg.flags & NLM_F_EXCL) fail(E.EEXIST, nameAttr);
    if (req.msg.flags & NLM_F_REPLACE) fail(E.EOPNOTSUPP);
    if (existing.flags & NFT_SET_ANONYMOUS) fail(E.EOPNOTSUPP);
    const same = existing.flags === flags && existing.keyType === keyType && existing.keyLen === keyLen && existing.dataType === dataType && existing.dataLen === dataLen;
    if (!same) fail(E.EEXIST, nameAttr);
    // An add with a size changes the size of the set that is there (also below its element count: then it only
    // refuses adds), at commit: adds of the same batch are held to the size before; one without a size leaves it.
    const resize = a.get(NFTA_SET.DESC)?.children().byType.get(1);
    if (resize && be32(resize) !== (existing.newSize ?? existing.size)) draft.resizeSet(draft.mutableSet(table, existing).set, be32(resize));
    return;
  }
  if (!(req.msg.flags & NLM_F_CREATE)) fail(E.ENOENT, nameAttr);
  const policyAttr = a.get(NFTA_SET.POLICY);
  const descSize = a.get(NFTA_SET.DESC)?.children().byType.get(1);
  const udata = udataOf(a.get(NFTA_SET.USERDATA));
  const t = draft.mutableTable(table);
  const handle = t.nextHandle;
  t.nextHandle += 1n;
  const set: SetObj = {
    name,
    handle,
    flags,
    keyType,
    keyLen,
    dataType,
    dataLen,
    policy: policyAttr ? be32(policyAttr) : undefined,
    size: descSize ? be32(descSize) : 0,
    udata,
    use: 0,
    elements: new Map(),
  };
  t.sets.set(name, draft.fresh(set));
  ids.sets.set(`${req.family}/${table.name}/${be32(idAttr)}`, name);
}

export function delSet(draft: Draft, req: Request): void {
  const { table, target: set, bad } = deleteTarget(draft, req, NFTA_SET, (t) => t.sets);
  if (set.use > 0 || (req.msg.flags & NLM_F_NONREC && set.elements.size > 0)) fail(E.EBUSY, bad);
  const t = draft.mutableTable(table);
  t.sets.delete(set.name);
  draft.changed = true;
}

/** The table and set an element message names (nft_set_lookup_global: by name, then by this batch's id). */
function elementTarget(draft: Draft, req: Request, ids: BatchIds): { table: TableObj; set: SetObj } {
  const a = req.attrs;
  const table = lookupTable(draft, req.family, a.get(NFTA_SET_ELEM_LIST.TABLE));
  const setAttr = a.get(NFTA_SET_ELEM_LIST.SET);
  if (!setAttr) fail(E.EINVAL);
  let set = table.sets.get(nameOf(setAttr)!);
  const idAttr = a.get(NFTA_SET_ELEM_LIST.SET_ID);
  if (!set && idAttr) {
    const name = ids.sets.get(`${req.family}/${table.name}/${be32(idAttr)}`);
    if (name !== undefined) set = table.sets.get(name);
  }
  if (!set) fail(E.ENOENT, setAttr);
  return { table, set };
}

interface ParsedElement {
  key: Uint8Array;
  flags: number;
  udata: Uint8Array | undefined;
  data: Uint8Array | undefined;
}

/**
 * elementData checks a map element's NFTA_SET_ELEM_DATA as nft_setelem_parse_data / nft_data_init do (a value of
 * the set's data length in a value map, a verdict in a verdict map) and returns it as the kernel dumps it.
 */
function elementData(set: SetObj, a: Attr, item: Attr): Uint8Array {
  const d = a.children().byType;
  const verdictMap = set.dataType === NFT_DATA_VERDICT;
  const value = d.get(NFTA_DATA.VALUE);
  if (value) {
    if (verdictMap) fail(E.EINVAL, item);
    // nft_value_init refuses a value longer than the data it fills with EOVERFLOW (a key that long is ERANGE).
    if (value.len === 0) fail(E.EINVAL, item);
    if (value.len > NFT_DATA_VALUE_MAXLEN) fail(E.EOVERFLOW, item);
    if (value.len !== set.dataLen) fail(E.EINVAL, item);
    return attr(NFTA_DATA.VALUE, Uint8Array.from(value.value));
  }
  const verdict = d.get(NFTA_DATA.VERDICT);
  if (!verdict || !verdictMap) fail(E.EINVAL, item);
  const codeAttr = verdict.children().byType.get(NFTA_VERDICT.CODE);
  if (!codeAttr || codeAttr.len !== 4) fail(E.EINVAL, item);
  const code = be32(codeAttr) | 0;
  if (code === NFT_JUMP || code === NFT_GOTO) fail(E.EOPNOTSUPP, item);
  if (!PLAIN_VERDICTS.has(code)) fail(E.EINVAL, item);
  return attr(NFTA_DATA.VERDICT, concat([attr(NFTA_VERDICT.CODE, u32(code >>> 0))]));
}

/** sameData tells whether an element already there has the data of the one added again (nft_add_set_elem's clash). */
function sameData(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  if (!a || !b) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** parseElement checks one NFTA_LIST_ELEM as nft_add_set_elem / nft_del_setelem do before the set is searched. */
export function parseElement(set: SetObj, item: Attr, adding: boolean): ParsedElement {
  const e = item.children().byType;
  let flags = 0;
  const flagsAttr = e.get(NFTA_SET_ELEM.FLAGS);
  if (flagsAttr) {
    flags = be32(flagsAttr);
    if (flags & ~(NFT_SET_ELEM_INTERVAL_END | NFT_SET_ELEM_CATCHALL)) fail(E.EOPNOTSUPP, item);
    if (!(set.flags & NFT_SET_INTERVAL) && flags & NFT_SET_ELEM_INTERVAL_END) fail(E.EINVAL, item);
  }
  const keyAttr = e.get(NFTA_SET_ELEM.KEY);
  if (!keyAttr) fail(E.EINVAL, item);
  const dataAttr = e.get(NFTA_SET_ELEM.DATA);
  if (adding) {
    if (set.flags & NFT_SET_MAP) {
      if (!dataAttr && !(flags & NFT_SET_ELEM_INTERVAL_END)) fail(E.EINVAL, item);
    } else if (dataAttr) {
      fail(E.EINVAL, item);
    }
    if (e.get(NFTA_SET_ELEM.TIMEOUT) && !(set.flags & NFT_SET_TIMEOUT)) fail(E.EINVAL, item);
  }
  const value = keyAttr.children().byType.get(NFTA_DATA.VALUE);
  if (!value) fail(E.EINVAL, item);
  if (value.len > NFT_DATA_VALUE_MAXLEN) fail(E.ERANGE, item);
  if (value.len === 0 || value.len !== set.keyLen) fail(E.EINVAL, item);
  // The key is parsed before the data (nft_add_set_elem), so a bad key is refused first.
  const data = adding && dataAttr ? elementData(set, dataAttr, item) : undefined;
  const udata = adding ? udataOf(e.get(NFTA_SET_ELEM.USERDATA)) : undefined;
  return { key: Uint8Array.from(value.value), flags, udata: udata && udata.length > 0 ? udata : undefined, data };
}

export function newSetElem(draft: Draft, req: Request, ids: BatchIds): void {
  const list = req.attrs.get(NFTA_SET_ELEM_LIST.ELEMENTS);
  if (!list) fail(E.EINVAL);
  const target = elementTarget(draft, req, ids);
  // Bound until the commit: a rule this batch deletes still holds a constant set fixed.
  if (draft.isBound(target.set) && target.set.flags & (NFT_SET_CONSTANT | NFT_SET_ANONYMOUS)) fail(E.EBUSY);
  const m = draft.mutableSet(target.table, target.set);
  for (const item of list.children().all) {
    if (item.type !== NFTA_LIST_ELEM) fail(E.EINVAL, item);
    const el = parseElement(m.set, item, true);
    const k = hex(el.key);
    const there = m.set.elements.get(k);
    if (there) {
      // Other data than the element there is a clash even without NLM_F_EXCL; the same is taken as it is.
      if (req.msg.flags & NLM_F_EXCL || !sameData(there.data, el.data)) fail(E.EEXIST, item);
      continue; // taken as it is: the old element keeps its user data
    }
    // A full set: the kernel counts the elements this batch deleted as room (its set->ndeact), as the map does.
    if (m.set.size && m.set.elements.size >= m.set.size) fail(E.ENFILE, item);
    m.set.elements.set(k, el);
    draft.changed = true;
  }
}

export function delSetElem(draft: Draft, req: Request, ids: BatchIds): void {
  const target = elementTarget(draft, req, ids);
  if (target.set.flags & NFT_SET_ANONYMOUS) fail(E.EOPNOTSUPP);
  if (draft.isBound(target.set) && target.set.flags & NFT_SET_CONSTANT) fail(E.EBUSY);
  const m = draft.mutableSet(target.table, target.set);
  const list = req.attrs.get(NFTA_SET_ELEM_LIST.ELEMENTS);
  if (!list) {
    // No elements named: every element goes (nft's `flush set`).
    if (m.set.elements.size > 0) draft.changed = true;
    m.set.elements.clear();
    return;
  }
  for (const item of list.children().all) {
    if (item.type !== NFTA_LIST_ELEM) fail(E.EINVAL, item);
    const el = parseElement(m.set, item, false);
    if (!m.set.elements.delete(hex(el.key))) fail(E.ENOENT, item);
    draft.changed = true;
  }
}
