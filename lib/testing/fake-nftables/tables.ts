/**
 * NEWTABLE and DELTABLE inside a batch, and the table lookup every other handler starts with (nft_table_lookup:
 * family and name, ENOENT naming the attribute).
 */
import type { Attr } from '../netlink-kernel/codec.js';
import { E, NFT_TABLE_F_MASK, NFT_TABLE_F_OWNER, NFTA_TABLE, NLM_F_EXCL, NLM_F_NONREC, NLM_F_REPLACE } from './constants.js';
import type { Draft, TableObj } from './model.js';
import { type Request, be32, be64, fail, nameOf, toDelete, udataOf } from './request.js';

/** lookupTable finds the table the attribute names: EINVAL without the attribute, ENOENT when there is none. */
export function lookupTable(draft: Draft, family: number, attr: Attr | undefined): TableObj {
  if (!attr) fail(E.EINVAL);
  const name = nameOf(attr)!;
  const t = draft.table(family, name);
  if (!t) fail(E.ENOENT, attr);
  return t;
}

/** DeleteTarget is what a delete message names: its table, the object, and the attribute an error points at. */
export interface DeleteTarget<T> {
  table: TableObj;
  target: T;
  bad: Attr | undefined;
}

/**
 * deleteTarget finds the table and the chain or set a delete message names (by handle, else by name); keys are the
 * message's TABLE, NAME and HANDLE attribute types, objects picks the table's map to look in.
 */
export function deleteTarget<T extends { handle: bigint }>(
  draft: Draft,
  req: Request,
  keys: { readonly TABLE: number; readonly NAME: number; readonly HANDLE: number },
  objects: (t: TableObj) => ReadonlyMap<string, T>,
): DeleteTarget<T> {
  const table = lookupTable(draft, req.family, req.attrs.get(keys.TABLE));
  const nameAttr = req.attrs.get(keys.NAME);
  const handleAttr = req.attrs.get(keys.HANDLE);
  return { table, target: toDelete(objects(table), handleAttr, nameAttr), bad: nameAttr ?? handleAttr };
}

export function newTable(draft: Draft, req: Request): void {
  const a = req.attrs;
  const nameAttr = a.get(NFTA_TABLE.NAME);
  if (!nameAttr) fail(E.EINVAL);
  const name = nameOf(nameAttr)!;
  const existing = draft.table(req.family, name);
  const flagsAttr = a.get(NFTA_TABLE.FLAGS);
  if (existing) {
    if (req.msg.flags & NLM_F_EXCL) fail(E.EEXIST, nameAttr);
    if (req.msg.flags & NLM_F_REPLACE) fail(E.EOPNOTSUPP);
    if (!flagsAttr) return;
    const flags = be32(flagsAttr);
    if (flags & ~NFT_TABLE_F_MASK) fail(E.EOPNOTSUPP);
    if (flags === existing.flags) return;
    // Taking or giving up ownership is not an update the kernel makes.
    if ((flags ^ existing.flags) & NFT_TABLE_F_OWNER) fail(E.EOPNOTSUPP);
    draft.mutableTable(existing).flags = flags;
    draft.changed = true;
    return;
  }
  let flags = 0;
  if (flagsAttr) {
    flags = be32(flagsAttr);
    if (flags & ~NFT_TABLE_F_MASK) fail(E.EOPNOTSUPP);
  }
  const udata = udataOf(a.get(NFTA_TABLE.USERDATA));
  const handle = draft.nextTableHandle;
  draft.nextTableHandle += 1n;
  draft.addTable({ family: req.family, name, handle, flags, udata, chains: new Map(), sets: new Map(), nextHandle: 1n });
}

/** tableUse is what NFTA_TABLE_USE counts: chains and sets. */
export function tableUse(t: TableObj): number {
  return t.chains.size + t.sets.size;
}

export function delTable(draft: Draft, req: Request): void {
  const a = req.attrs;
  const nameAttr = a.get(NFTA_TABLE.NAME);
  const handleAttr = a.get(NFTA_TABLE.HANDLE);
  if (!nameAttr && !handleAttr) {
    // No table named: nft's `flush ruleset`, every table of the family (of all, for NFPROTO_UNSPEC).
    for (const t of [...draft.tables.values()]) if (req.family === 0 || t.family === req.family) draft.deleteTable(t);
    return;
  }
  let table: TableObj | undefined;
  if (handleAttr) {
    const handle = be64(handleAttr);
    table = [...draft.tables.values()].find((t) => t.family === req.family && t.handle === handle);
    if (!table) fail(E.ENOENT, handleAttr);
  } else {
    table = lookupTable(draft, req.family, nameAttr);
  }
  // The kernel names no attribute for a table still in use.
  if (req.msg.flags & NLM_F_NONREC && tableUse(table) > 0) fail(E.EBUSY);
  draft.deleteTable(table);
}
