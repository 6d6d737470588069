/**
 * NEWRULE and DELRULE inside a batch (nf_tables_newrule / delrule). A rule's expressions are kept as the bytes they
 * came with, in the form the kernel dumps them (expr-dump.ts). They are checked as the kernel checks them, because
 * a fake that takes a rule the kernel refuses lets a caller's bug through to production: names, attributes, keys
 * and registers when the rule is made (expr-check.ts), and where a NAT statement or a jump may lead when its table
 * is validated (validate.ts), at the commit and, in the batch the kernel then replays, after every rule. The sets
 * a rule looks up and the chains it jumps to are held while it lives (EBUSY for their delete).
 */
import type { Attr, AttrTable } from '../netlink-kernel/codec.js';
import {
  E,
  NFTA_LOOKUP,
  NFTA_RULE,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REPLACE,
} from './constants.js';
import { type ChainObj, type Draft, type RuleObj, type SetObj, type TableObj, tableKey } from './model.js';
import { type Request, be32, be64, fail, nameOf, udataOf } from './request.js';
import { lookupTable } from './tables.js';
import type { BatchIds } from './sets.js';
import { dumpExpressions } from './expr-dump.js';
import { type RuleRefs, checkExpressions } from './expr-check.js';
import { validateTable } from './validate.js';

function lookupChainIn(table: TableObj, attr: Attr): ChainObj {
  const c = table.chains.get(nameOf(attr)!);
  if (!c) fail(E.ENOENT, attr);
  return c;
}

/** The set a lookup names: by name, or by the id of a set made earlier in the batch. */
function setFinder(table: TableObj, ids: BatchIds): (d: AttrTable) => SetObj | undefined {
  return (d) => {
    const byName = table.sets.get(nameOf(d.get(NFTA_LOOKUP.SET))!);
    if (byName) return byName;
    const idAttr = d.get(NFTA_LOOKUP.SET_ID);
    const name = idAttr && idAttr.len >= 4 ? ids.sets.get(`${table.family}/${table.name}/${be32(idAttr)}`) : undefined;
    return name === undefined ? undefined : table.sets.get(name);
  };
}

/** holdRefs counts the rule's references on the sets and chains it names (in the draft's copies). */
function holdRefs(draft: Draft, table: TableObj, refs: Pick<RuleRefs, 'sets' | 'jumps'>, delta: number): TableObj {
  let t = table;
  for (const s of refs.sets) {
    const cur = t.sets.get(s);
    if (!cur) continue;
    const m = draft.mutableSet(t, cur);
    t = m.table;
    m.set.use += delta;
    if (delta > 0) draft.bindSet(m.set);
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
  const refs = checkExpressions(t0, exprAttr, setFinder(t0, ids));
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
  const key = tableKey(t.family, t.name);
  ids.validate.add(key);
  // The rule stays in the chain when its table fails, so every later rule of the table fails too.
  if (ids.validateNow.has(key)) {
    const err = validateTable(draft.tables.get(key)!);
    if (err !== 0) fail(err);
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
