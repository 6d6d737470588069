/**
 * NEWRULE and DELRULE inside a batch (nf_tables_newrule / delrule). A rule's expressions are kept as the bytes they
 * came with and dumped back; the fake reads only what the kernel's checks need: every expression's name against
 * the kernel's list (an unknown one is ENOENT), the set a lookup names (ENOENT when missing, and the set is then in
 * use), and the chain an immediate jump or goto names (ENOENT when missing, EOPNOTSUPP for a base chain). The
 * expressions are kept in the form the kernel dumps them (expr-dump.ts). Loops of jumps are not looked for, and
 * the expressions' own attributes are not checked (a malformed cmp the kernel refuses is taken).
 */
import type { Attr } from '../fake-netlink/codec.js';
import {
  E,
  EXPRESSIONS,
  NFT_GOTO,
  NFT_JUMP,
  NFT_RULE_MAXEXPRS,
  NFTA_DATA,
  NFTA_EXPR,
  NFTA_IMMEDIATE,
  NFTA_LIST_ELEM,
  NFTA_LOOKUP,
  NFTA_RULE,
  NFTA_VERDICT,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REPLACE,
} from './constants.js';
import type { ChainObj, Draft, RuleObj, TableObj } from './model.js';
import { type Request, be32, be64, fail, nameOf, udataOf } from './request.js';
import { lookupTable } from './tables.js';
import type { BatchIds } from './sets.js';
import { dumpExpressions } from './expr-dump.js';

function lookupChainIn(table: TableObj, attr: Attr): ChainObj {
  const c = table.chains.get(nameOf(attr)!);
  if (!c) fail(E.ENOENT, attr);
  return c;
}

/** What a rule's expressions refer to, checked as nf_tables_newrule's expression parsing checks it. */
function parseExpressions(table: TableObj, attr: Attr | undefined, ids: BatchIds): { sets: string[]; jumps: string[] } {
  const sets: string[] = [];
  const jumps: string[] = [];
  if (!attr) return { sets, jumps };
  let n = 0;
  for (const item of attr.children().all) {
    if (item.type !== NFTA_LIST_ELEM) fail(E.EINVAL, item);
    if (n === NFT_RULE_MAXEXPRS) fail(E.E2BIG, item);
    n++;
    const e = item.children().byType;
    const name = nameOf(e.get(NFTA_EXPR.NAME));
    if (name === undefined) fail(E.EINVAL, item);
    if (!EXPRESSIONS.has(name)) fail(E.ENOENT, item);
    const data = e.get(NFTA_EXPR.DATA)?.children().byType;
    if (name === 'lookup' && data) {
      const setAttr = data.get(NFTA_LOOKUP.SET);
      if (!setAttr) fail(E.EINVAL, item);
      let set = nameOf(setAttr)!;
      if (!table.sets.has(set)) {
        const idAttr = data.get(NFTA_LOOKUP.SET_ID);
        const byId = idAttr ? ids.sets.get(`${table.family}/${table.name}/${be32(idAttr)}`) : undefined;
        if (byId === undefined || !table.sets.has(byId)) fail(E.ENOENT, item);
        set = byId;
      }
      sets.push(set);
    }
    if (name === 'immediate' && data) {
      const verdict = data.get(NFTA_IMMEDIATE.DATA)?.children().byType.get(NFTA_DATA.VERDICT)?.children().byType;
      const code = verdict?.get(NFTA_VERDICT.CODE);
      if (verdict && code) {
        const v = be32(code) | 0;
        if (v === NFT_JUMP || v === NFT_GOTO) {
          const chainAttr = verdict.get(NFTA_VERDICT.CHAIN);
          if (!chainAttr) fail(E.EINVAL, item);
          const target = lookupChainIn(table, chainAttr);
          if (target.base) fail(E.EOPNOTSUPP, item);
          jumps.push(target.name);
        }
      }
    }
  }
  return { sets, jumps };
}

/** holdRefs counts the rule's references on the sets and chains it names (in the draft's copies). */
function holdRefs(draft: Draft, table: TableObj, refs: { sets: string[]; jumps: string[] }, delta: number): TableObj {
  let t = table;
  for (const s of refs.sets) {
    const cur = t.sets.get(s);
    if (!cur) continue;
    const m = draft.mutableSet(t, cur);
    t = m.table;
    m.set.use += delta;
  }
  for (const j of refs.jumps) {
    const cur = t.chains.get(j);
    if (!cur) continue;
    const m = draft.mutableChain(t, cur);
    t = m.table;
    m.chain.refs += delta;
  }
  return t;
}

/** releaseRule drops what a deleted rule held. */
export function releaseRule(draft: Draft, table: TableObj, rule: RuleObj): void {
  holdRefs(draft, table, rule, -1);
}

export function newRule(draft: Draft, req: Request, ids: BatchIds): void {
  const a = req.attrs;
  const flags = req.msg.flags;
  const table = lookupTable(draft, req.family, a.get(NFTA_RULE.TABLE));
  const chainAttr = a.get(NFTA_RULE.CHAIN);
  if (!chainAttr) fail(E.EINVAL);
  const chain = lookupChainIn(table, chainAttr);
  const handleAttr = a.get(NFTA_RULE.HANDLE);
  let old: RuleObj | undefined;
  let handle: bigint;
  const t0 = draft.mutableTable(table);
  if (handleAttr) {
    handle = be64(handleAttr);
    old = chain.rules.find((r) => r.handle === handle);
    if (!old) fail(E.ENOENT, handleAttr);
    if (flags & NLM_F_EXCL) fail(E.EEXIST, handleAttr);
    if (!(flags & NLM_F_REPLACE)) fail(E.EOPNOTSUPP);
  } else {
    if (!(flags & NLM_F_CREATE) || flags & NLM_F_REPLACE) fail(E.EINVAL);
    // The handle is taken before anything else is checked, and stays taken if the batch is aborted.
    handle = t0.nextHandle;
    t0.nextHandle += 1n;
    const posAttr = a.get(NFTA_RULE.POSITION);
    if (posAttr) {
      const pos = be64(posAttr);
      old = chain.rules.find((r) => r.handle === pos);
      if (!old) fail(E.ENOENT, posAttr);
    }
  }
  const exprAttr = a.get(NFTA_RULE.EXPRESSIONS);
  const refs = parseExpressions(t0, exprAttr, ids);
  const udata = udataOf(a.get(NFTA_RULE.USERDATA));
  const expressions = exprAttr ? dumpExpressions(exprAttr.value) : new Uint8Array(0);
  const rule: RuleObj = draft.fresh({ handle, expressions, udata, ...refs });
  let t = holdRefs(draft, t0, refs, 1);
  const m = draft.mutableChain(t, t.chains.get(chain.name)!);
  t = m.table;
  const rules = m.chain.rules;
  const at = old ? rules.findIndex((r) => r.handle === old.handle) : -1;
  if (flags & NLM_F_REPLACE && old) {
    releaseRule(draft, t, old);
    rules.splice(at, 1, rule);
  } else if (flags & NLM_F_APPEND) {
    if (old) rules.splice(at + 1, 0, rule);
    else rules.push(rule);
  } else if (old) {
    rules.splice(at, 0, rule);
  } else {
    rules.unshift(rule);
  }
}

function flushChain(draft: Draft, table: TableObj, chain: ChainObj): TableObj {
  if (chain.rules.length === 0) return table;
  const m = draft.mutableChain(table, chain);
  for (const r of m.chain.rules) releaseRule(draft, m.table, r);
  m.chain.rules = [];
  draft.changed = true;
  return m.table;
}

export function delRule(draft: Draft, req: Request): void {
  const a = req.attrs;
  let table = lookupTable(draft, req.family, a.get(NFTA_RULE.TABLE));
  const chainAttr = a.get(NFTA_RULE.CHAIN);
  if (!chainAttr) {
    // No chain: every rule of the table (nft's `flush table`).
    for (const name of [...table.chains.keys()]) table = flushChain(draft, table, table.chains.get(name)!);
    return;
  }
  const chain = lookupChainIn(table, chainAttr);
  const handleAttr = a.get(NFTA_RULE.HANDLE);
  if (!handleAttr) {
    flushChain(draft, table, chain);
    return;
  }
  const handle = be64(handleAttr);
  const rule = chain.rules.find((r) => r.handle === handle);
  if (!rule) fail(E.ENOENT, handleAttr);
  const m = draft.mutableChain(table, chain);
  m.chain.rules = m.chain.rules.filter((r) => r !== rule);
  releaseRule(draft, m.table, rule);
  draft.changed = true;
}
