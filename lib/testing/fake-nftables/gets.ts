/**
 * GET requests outside of batches: single objects (answered with one message, then the ACK when asked) and dumps
 * with NLM_F_DUMP, cut into datagrams of at most the page size as the kernel fills its dump skbs. Filters are the
 * kernel's: tables and chains by family only, sets by family and table (ENOENT for a missing table), rules by
 * family, table and chain names (nothing for a missing one), elements of one set (ENOENT for a missing table or set).
 */
import { type ReplyTo, attrOffset } from '../netlink-kernel/replies.js';
import { E, NFT_MSG, NFTA_CHAIN, NFTA_LIST_ELEM, NFTA_RULE, NFTA_SET, NFTA_SET_ELEM_LIST, NFTA_TABLE, NLM_F_APPEND, NLM_F_DUMP, NLM_F_MULTI, NLMSG_DONE } from './constants.js';
import { chainAttrs, elementAttr, elementsAttrs, genMessage, message, ruleAttrs, setAttrs, tableAttrs } from './fill.js';
import type { State, TableObj } from './model.js';
import { Failure, type Request, be64, fail, hex, named, nameOf } from './request.js';
import { parseElement } from './sets.js';

export interface GetContext {
  state: State;
  to: ReplyTo;
  pageSize: number;
  procPid: number;
  procName: string;
  /** An element dump's set is rehashed after the first datagram (FakeNftables.rehashDuringNextDump). */
  rehash?: boolean;
}

/** What a GET answered: datagrams, whether an ACK may follow (dumps are never acknowledged), and an error after them. */
export interface GetAnswer {
  datagrams: Uint8Array[];
  dump: boolean;
  error?: Failure;
}

function done(to: ReplyTo): Uint8Array {
  const b = Buffer.alloc(20);
  b.writeUInt32LE(20, 0);
  b.writeUInt16LE(NLMSG_DONE, 4);
  b.writeUInt16LE(NLM_F_MULTI, 6);
  b.writeUInt32LE(to.seq, 8);
  b.writeUInt32LE(to.pid, 12);
  return b;
}

/** pages packs whole messages into datagrams of at most pageSize bytes; NLMSG_DONE comes in a datagram of its own. */
function pages(ctx: GetContext, messages: Uint8Array[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let page: Uint8Array[] = [];
  let size = 0;
  for (const m of messages) {
    if (size + m.byteLength > ctx.pageSize && page.length) {
      out.push(Buffer.concat(page));
      page = [];
      size = 0;
    }
    page.push(m);
    size += m.byteLength;
  }
  if (page.length) out.push(Buffer.concat(page));
  out.push(done(ctx.to));
  return out;
}

function tablesOf(ctx: GetContext, family: number): TableObj[] {
  return [...ctx.state.tables.values()].filter((t) => family === 0 || t.family === family);
}

function findTable(ctx: GetContext, req: Request, type: number): TableObj {
  const a = req.attrs.get(type);
  if (!a) fail(E.EINVAL);
  const name = nameOf(a)!;
  const t = ctx.state.tables.get(`${req.family}/${name}`);
  if (!t) fail(E.ENOENT, a);
  return t;
}

function elementDump(ctx: GetContext, req: Request): Uint8Array[] {
  const t = findTable(ctx, req, NFTA_SET_ELEM_LIST.TABLE);
  const setAttr = req.attrs.get(NFTA_SET_ELEM_LIST.SET);
  if (!setAttr) fail(E.EINVAL);
  const s = t.sets.get(nameOf(setAttr)!);
  if (!s) fail(E.ENOENT, setAttr);
  const gen = ctx.state.genId;
  const head = message(ctx.to, NFT_MSG.NEWSETELEM, NLM_F_MULTI, t.family, gen, elementsAttrs(t, s, [])).byteLength;
  const out: Uint8Array[] = [];
  let batch: Uint8Array[] = [];
  let size = head;
  const flush = () => {
    out.push(message(ctx.to, NFT_MSG.NEWSETELEM, NLM_F_MULTI, t.family, gen, elementsAttrs(t, s, batch)));
    batch = [];
    size = head;
  };
  // The kernel fills each datagram in a walk of its own that skips as many elements as the walks before it sent. A
  // hash set whose table grew in between is walked in another order from the second datagram on: the fake's rehash
  // reverses it, so some elements come twice and as many not at all, with no NLM_F_DUMP_INTR (the generation stays).
  let order = [...s.elements.values()];
  for (let sent = 0; sent < order.length; sent++) {
    let a = elementAttr(order[sent]!);
    if (size + a.byteLength > ctx.pageSize && batch.length) {
      flush();
      if (ctx.rehash && out.length === 1) {
        order = order.reverse();
        a = elementAttr(order[sent]!);
      }
    }
    batch.push(a);
    size += a.byteLength;
  }
  if (batch.length) flush();
  // The dump's last call finds nothing new: its empty message shares the datagram with NLMSG_DONE.
  const last = Buffer.concat([message(ctx.to, NFT_MSG.NEWSETELEM, NLM_F_MULTI, t.family, gen, elementsAttrs(t, s, [])), done(ctx.to)]);
  return [...out, last];
}

function dump(ctx: GetContext, req: Request, msg: number): Uint8Array[] {
  const gen = ctx.state.genId;
  const m = (type: number, family: number, attrs: Uint8Array[], flags = NLM_F_MULTI) => message(ctx.to, type, flags, family, gen, attrs);
  switch (msg) {
    case NFT_MSG.GETTABLE:
      return pages(ctx, tablesOf(ctx, req.family).map((t) => m(NFT_MSG.NEWTABLE, t.family, tableAttrs(t))));
    case NFT_MSG.GETCHAIN:
      return pages(ctx, tablesOf(ctx, req.family).flatMap((t) => [...t.chains.values()].map((c) => m(NFT_MSG.NEWCHAIN, t.family, chainAttrs(t, c)))));
    case NFT_MSG.GETSET: {
      const only = req.attrs.get(NFTA_SET.TABLE) ? findTable(ctx, req, NFTA_SET.TABLE) : undefined;
      const tables = only ? [only] : tablesOf(ctx, req.family);
      return pages(ctx, tables.flatMap((t) => [...t.sets.values()].map((s) => m(NFT_MSG.NEWSET, t.family, setAttrs(t, s)))));
    }
    case NFT_MSG.GETRULE: {
      const table = nameOf(req.attrs.get(NFTA_RULE.TABLE));
      const chain = nameOf(req.attrs.get(NFTA_RULE.CHAIN));
      const out: Uint8Array[] = [];
      for (const t of tablesOf(ctx, req.family)) {
        if (table !== undefined && t.name !== table) continue;
        for (const c of t.chains.values()) {
          if (chain !== undefined && c.name !== chain) continue;
          c.rules.forEach((r, i) => out.push(m(NFT_MSG.NEWRULE, t.family, ruleAttrs(t, c, r, c.rules[i - 1]), NLM_F_MULTI | NLM_F_APPEND)));
        }
      }
      return pages(ctx, out);
    }
    case NFT_MSG.GETSETELEM:
      return elementDump(ctx, req);
    default:
      return fail(E.EOPNOTSUPP);
  }
}

function single(ctx: GetContext, req: Request, msg: number): Uint8Array[] | GetAnswer {
  const gen = ctx.state.genId;
  const m = (type: number, family: number, attrs: Uint8Array[]) => message(ctx.to, type, 0, family, gen, attrs);
  switch (msg) {
    case NFT_MSG.GETTABLE: {
      const t = findTable(ctx, req, NFTA_TABLE.NAME);
      return [m(NFT_MSG.NEWTABLE, t.family, tableAttrs(t))];
    }
    case NFT_MSG.GETCHAIN: {
      const t = findTable(ctx, req, NFTA_CHAIN.TABLE);
      const c = named(t.chains, req.attrs.get(NFTA_CHAIN.NAME));
      return [m(NFT_MSG.NEWCHAIN, t.family, chainAttrs(t, c))];
    }
    case NFT_MSG.GETSET: {
      const t = findTable(ctx, req, NFTA_SET.TABLE);
      const s = named(t.sets, req.attrs.get(NFTA_SET.NAME));
      return [m(NFT_MSG.NEWSET, t.family, setAttrs(t, s))];
    }
    case NFT_MSG.GETRULE: {
      const t = findTable(ctx, req, NFTA_RULE.TABLE);
      const c = named(t.chains, req.attrs.get(NFTA_RULE.CHAIN));
      const ha = req.attrs.get(NFTA_RULE.HANDLE);
      if (!ha) fail(E.EINVAL);
      const handle = be64(ha);
      const i = c.rules.findIndex((r) => r.handle === handle);
      if (i < 0) fail(E.ENOENT, ha);
      // A single rule is answered without NFTA_RULE_POSITION (only dumps name the rule before).
      return [m(NFT_MSG.NEWRULE, t.family, ruleAttrs(t, c, c.rules[i]!, undefined))];
    }
    case NFT_MSG.GETSETELEM: {
      const t = findTable(ctx, req, NFTA_SET_ELEM_LIST.TABLE);
      const s = named(t.sets, req.attrs.get(NFTA_SET_ELEM_LIST.SET));
      const list = req.attrs.get(NFTA_SET_ELEM_LIST.ELEMENTS);
      if (!list) fail(E.EINVAL);
      const out: Uint8Array[] = [];
      // Each element found is a message of its own; the first missing one ends the answer with ENOENT.
      for (const item of list.children().all) {
        if (item.type !== NFTA_LIST_ELEM) fail(E.EINVAL, item);
        const key = parseElement(s, item, false).key;
        const e = s.elements.get(hex(key));
        if (!e) return { datagrams: out, dump: false, error: new Failure({ errno: E.ENOENT, offset: attrOffset(item) }) };
        out.push(m(NFT_MSG.NEWSETELEM, t.family, elementsAttrs(t, s, [elementAttr(e)])));
      }
      return out;
    }
    case NFT_MSG.GETGEN:
      return [genMessage(ctx.to, gen, ctx.procPid, ctx.procName)];
    default:
      return fail(E.EOPNOTSUPP);
  }
}

/** get answers one GET message; throws Failure when it fails before answering anything. */
export function get(ctx: GetContext, req: Request, msg: number): GetAnswer {
  const wantsDump = (req.msg.flags & NLM_F_DUMP) === NLM_F_DUMP && msg !== NFT_MSG.GETGEN;
  if (wantsDump) return { datagrams: dump(ctx, req, msg), dump: true };
  const answer = single(ctx, req, msg);
  return Array.isArray(answer) ? { datagrams: answer, dump: false } : answer;
}
