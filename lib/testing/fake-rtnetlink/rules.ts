/**
 * Policy routing rules of the fake kernel (net/core/fib_rules.c, net/ipv4/fib_rules.c, net/ipv6/fib6_rules.c):
 * RTM_NEWRULE and RTM_DELRULE with the kernel's checks, the automatic priority, the duplicate and delete matching,
 * the dump format, and the rule walk that route lookups make.
 */
import {
  type AttrList,
  type KernelError,
  type MsgWriter,
  type NlMsg,
  fail,
  inPrefix,
  readIfname,
  readU32,
  readU8,
  sameAddr,
  u32attr,
} from './codec.js';
import {
  AF_INET,
  AF_INET6,
  ERRNO,
  FIB_RULE_IIF_DETACHED,
  FIB_RULE_INVERT,
  FIB_RULE_OIF_DETACHED,
  FIB_RULE_PERMANENT,
  FIB_RULE_UNRESOLVED,
  FR_ACT,
  FRA,
  NLM_F_EXCL,
  RT_TABLE_COMPAT,
  RT_TABLE_DEFAULT,
  RT_TABLE_LOCAL,
  RT_TABLE_MAIN,
  RTMSG_LEN,
  RTPROT_KERNEL,
} from './constants.js';
import { namedConstants } from '../netlink-kernel/constants.js';
import type { NetnsState, Rule } from './model.js';
import { parseRequest } from './policy.js';

/** Flow4 is the part of a flowi4 the fake's lookups fill in. */
export interface Flow4 {
  daddr: number;
  scope: number;
  oif: number;
  iif: number;
  tos: number;
}

/** Flow6 is the part of a flowi6 the fake's lookups fill in. */
export interface Flow6 {
  daddr: Uint8Array;
  oif: number;
  iif: number;
}

/** defaultRules are the rules of a fresh namespace: local, main (and default for IPv4) at 0, 32766, 32767. */
export function defaultRules(family: 4 | 6): Rule[] {
  const make = (priority: number, table: number): Rule => ({
    family,
    priority,
    table,
    action: FR_ACT.TO_TBL,
    flags: 0,
    tos: 0,
    src: undefined,
    srcLen: 0,
    dst: undefined,
    dstLen: 0,
    iifname: '',
    oifname: '',
    mark: 0,
    mask: 0,
    target: 0,
    protocol: RTPROT_KERNEL,
    ipProto: 0,
    suppressPrefixlen: -1,
    suppressIfgroup: -1,
  });
  const rules = [make(0, RT_TABLE_LOCAL), make(32766, RT_TABLE_MAIN)];
  if (family === 4) rules.push(make(32767, RT_TABLE_DEFAULT));
  return rules;
}

// Attributes the kernel keeps in a rule but the fake does not model; a request that sets one is refused.
const UNMODELLED = namedConstants('FRA', FRA, ['TUN_ID', 'L3MDEV', 'UID_RANGE', 'SPORT_RANGE', 'DPORT_RANGE', 'DSCP', 'FLOW']);

interface Parsed {
  rule: Rule;
  userPriority: boolean;
  attrs: AttrList;
}

/** parseRule is fib_newrule/fib_delrule up to fib_nl2rule: length, family, policy, and the rule the request names. */
function parseRule(state: NetnsState, msg: NlMsg): Parsed | KernelError {
  if (msg.len < 16 + RTMSG_LEN) return fail(ERRNO.EINVAL, 'Invalid msg length');
  const h = msg.bytes;
  const af = h[16] ?? 0;
  if (af !== AF_INET && af !== AF_INET6) return fail(ERRNO.EAFNOSUPPORT, 'Rule family not supported');
  const family = af === AF_INET ? 4 : 6;
  const parsed = parseRequest(msg, RTMSG_LEN, 'rule');
  if (!parsed.ok) return { ...parsed.error, msg: 'Error parsing msg' };
  const tb = parsed.attrs.byType;
  const size = family === 4 ? 4 : 16;
  const [dstLen, srcLen, tos, table, action] = [h[17] ?? 0, h[18] ?? 0, h[19] ?? 0, h[20] ?? 0, h[23] ?? 0];
  const src = tb.get(FRA.SRC);
  const dst = tb.get(FRA.DST);
  if (srcLen && (!src || srcLen > size * 8 || src.len !== size)) return fail(ERRNO.EINVAL, 'Invalid source address');
  if (dstLen && (!dst || dstLen > size * 8 || dst.len !== size)) return fail(ERRNO.EINVAL, 'Invalid dst address');
  const prio = tb.get(FRA.PRIORITY);
  const markAttr = tb.get(FRA.FWMARK);
  const mark = markAttr ? readU32(markAttr) : 0;
  const maskAttr = tb.get(FRA.FWMASK);
  const tableAttr = tb.get(FRA.TABLE);
  const int = (t: number, dflt: number) => {
    const a = tb.get(t);
    return a ? readU32(a) | 0 : dflt;
  };
  const rule: Rule = {
    family,
    priority: prio ? readU32(prio) : defaultPriority(state.rules[family]),
    table: tableAttr ? readU32(tableAttr) : table,
    action,
    flags: Buffer.from(h.buffer, h.byteOffset, h.byteLength).readUInt32LE(24),
    tos,
    src: srcLen && src ? Uint8Array.from(src.value) : undefined,
    srcLen,
    dst: dstLen && dst ? Uint8Array.from(dst.value) : undefined,
    dstLen,
    iifname: tb.get(FRA.IIFNAME) ? readIfname(tb.get(FRA.IIFNAME)!) : '',
    oifname: tb.get(FRA.OIFNAME) ? readIfname(tb.get(FRA.OIFNAME)!) : '',
    mark,
    // A non-zero mark without a mask compares every bit, for compatibility with old userspace.
    mask: maskAttr ? readU32(maskAttr) : mark ? 0xffffffff : 0,
    target: 0,
    protocol: tb.get(FRA.PROTOCOL) ? readU8(tb.get(FRA.PROTOCOL)!) : 0,
    ipProto: tb.get(FRA.IP_PROTO) ? readU8(tb.get(FRA.IP_PROTO)!) : 0,
    suppressPrefixlen: int(FRA.SUPPRESS_PREFIXLEN, -1),
    suppressIfgroup: int(FRA.SUPPRESS_IFGROUP, -1),
  };
  const target = tb.get(FRA.GOTO);
  if (target) {
    if (rule.action !== FR_ACT.GOTO) return fail(ERRNO.EINVAL, 'Unexpected goto');
    rule.target = readU32(target);
    if (rule.target <= rule.priority) return fail(ERRNO.EINVAL, 'Backward goto not supported');
  } else if (rule.action === FR_ACT.GOTO) {
    return fail(ERRNO.EINVAL, 'Missing goto target for action goto');
  }
  // Refused where the kernel would first act on them: after the header's addresses and the goto target.
  for (const [type, name] of UNMODELLED) {
    if (tb.has(type) && !(type === FRA.FLOW && family === 6)) {
      return fail(ERRNO.EOPNOTSUPP, `fake-rtnetlink: rules with ${name} are not modelled`);
    }
  }
  return { rule, userPriority: prio !== undefined, attrs: parsed.attrs };
}

/** defaultPriority is fib_default_rule_pref: one below the second rule's priority, or 0. */
function defaultPriority(rules: Rule[]): number {
  const second = rules[1];
  return second && second.priority ? second.priority - 1 : 0;
}

/** compare is ops->compare: the header's lengths, tos and addresses, each only when the request sets it. */
function compare(r: Rule, q: Rule): boolean {
  if (q.srcLen && (r.srcLen !== q.srcLen || !sameAddr(r.src, q.src))) return false;
  if (q.dstLen && (r.dstLen !== q.dstLen || !sameAddr(r.dst, q.dst))) return false;
  return !q.tos || r.tos === q.tos;
}

/** exists is rule_exists: what NLM_F_EXCL calls a duplicate (every field but the flags and the goto target). */
function exists(rules: Rule[], q: Rule): boolean {
  return rules.some(
    (r) =>
      r.action === q.action &&
      r.table === q.table &&
      r.priority === q.priority &&
      r.iifname === q.iifname &&
      r.oifname === q.oifname &&
      r.mark === q.mark &&
      r.suppressIfgroup === q.suppressIfgroup &&
      r.suppressPrefixlen === q.suppressPrefixlen &&
      r.mask === q.mask &&
      r.ipProto === q.ipProto &&
      r.protocol === q.protocol &&
      compare(r, q),
  );
}

/** find is rule_find: the first rule that every field the delete request sets matches. */
function find(rules: Rule[], q: Rule, userPriority: boolean): number {
  return rules.findIndex(
    (r) =>
      (!q.action || r.action === q.action) &&
      (!q.table || r.table === q.table) &&
      (!userPriority || r.priority === q.priority) &&
      (!q.iifname || r.iifname === q.iifname) &&
      (!q.oifname || r.oifname === q.oifname) &&
      (!q.mark || r.mark === q.mark) &&
      (q.suppressIfgroup === -1 || r.suppressIfgroup === q.suppressIfgroup) &&
      (q.suppressPrefixlen === -1 || r.suppressPrefixlen === q.suppressPrefixlen) &&
      (!q.mask || r.mask === q.mask) &&
      (!q.ipProto || r.ipProto === q.ipProto) &&
      (!q.protocol || r.protocol === q.protocol) &&
      compare(r, q),
  );
}

/** configure is the family's ops->configure: header checks, and the table a rule without one gets. */
function configure(state: NetnsState, p: Parsed): KernelError | undefined {
  const r = p.rule;
  if (r.family === 4 && (p.attrs.byType.has(FRA.FLOWLABEL) || p.attrs.byType.has(FRA.FLOWLABEL_MASK))) {
    return fail(ERRNO.EINVAL, 'Flow label cannot be specified for IPv4 FIB rules');
  }
  if (r.tos & 3) return fail(ERRNO.EINVAL, 'Invalid dsfield (tos): ECN bits must be 0');
  if (r.family === 6) {
    if (p.attrs.byType.has(FRA.FLOWLABEL) || p.attrs.byType.has(FRA.FLOWLABEL_MASK)) {
      return fail(ERRNO.EOPNOTSUPP, 'fake-rtnetlink: rules with FRA_FLOWLABEL are not modelled');
    }
    if (r.action === FR_ACT.TO_TBL) {
      if (r.table === 0) return fail(ERRNO.EINVAL, 'Invalid table');
      state.table6(r.table);
    }
    return undefined;
  }
  if (r.tos & ~0x1e) return fail(ERRNO.EINVAL, 'Invalid tos');
  if (r.table === 0 && r.action === FR_ACT.TO_TBL) {
    let id = 1;
    while (state.findTable4(id)) id++;
    r.table = state.table4(id).id;
  }
  state.customRules4 = true;
  return undefined;
}

/** newRule handles RTM_NEWRULE: the rule goes after every rule whose priority is not above its own. */
export function newRule(state: NetnsState, msg: NlMsg): KernelError | undefined {
  const p = parseRule(state, msg);
  if ('errno' in p) return p;
  const rules = state.rules[p.rule.family];
  if (msg.flags & NLM_F_EXCL && exists(rules, p.rule)) return fail(ERRNO.EEXIST);
  const bad = configure(state, p);
  if (bad) return bad;
  let at = 0;
  while (at < rules.length && rules[at]!.priority <= p.rule.priority) at++;
  rules.splice(at, 0, p.rule);
  return undefined;
}

/** delRule handles RTM_DELRULE: ENOENT when no rule matches, EPERM for a permanent one. */
export function delRule(state: NetnsState, msg: NlMsg): KernelError | undefined {
  const p = parseRule(state, msg);
  if ('errno' in p) return p;
  const rules = state.rules[p.rule.family];
  const i = find(rules, p.rule, p.userPriority);
  if (i < 0) return fail(ERRNO.ENOENT);
  if (rules[i]!.flags & FIB_RULE_PERMANENT) return fail(ERRNO.EPERM);
  if (p.rule.family === 4) state.customRules4 = true;
  rules.splice(i, 1);
  return undefined;
}

/** fillRule writes one RTM_NEWRULE body as fib_nl_fill_rule and the family's fill do. */
export function fillRule(w: MsgWriter, state: NetnsState, r: Rule): void {
  let flags = r.flags;
  if (r.action === FR_ACT.GOTO && !state.rules[r.family].some((x) => x.priority === r.target)) flags |= FIB_RULE_UNRESOLVED;
  if (r.iifname && !state.linkByName(r.iifname)) flags |= FIB_RULE_IIF_DETACHED;
  if (r.oifname && !state.linkByName(r.oifname)) flags |= FIB_RULE_OIF_DETACHED;
  const table = r.table < 256 ? r.table : RT_TABLE_COMPAT;
  w.bytes(Uint8Array.of(r.family === 4 ? AF_INET : AF_INET6, r.dstLen, r.srcLen, r.tos, table, 0, 0, r.action));
  w.u32le(flags);
  u32attr(w, FRA.TABLE, r.table);
  u32attr(w, FRA.SUPPRESS_PREFIXLEN, r.suppressPrefixlen);
  w.u8(FRA.PROTOCOL, r.protocol);
  if (r.iifname) w.str(FRA.IIFNAME, r.iifname);
  if (r.oifname) w.str(FRA.OIFNAME, r.oifname);
  if (r.priority) u32attr(w, FRA.PRIORITY, r.priority);
  if (r.mark) u32attr(w, FRA.FWMARK, r.mark);
  if (r.mask || r.mark) u32attr(w, FRA.FWMASK, r.mask);
  if (r.target) u32attr(w, FRA.GOTO, r.target);
  if (r.suppressIfgroup !== -1) u32attr(w, FRA.SUPPRESS_IFGROUP, r.suppressIfgroup);
  if (r.ipProto) w.u8(FRA.IP_PROTO, r.ipProto);
  if (r.dstLen && r.dst) w.raw(FRA.DST, r.dst);
  if (r.srcLen && r.src) w.raw(FRA.SRC, r.src);
}

/** matches is fib_rule_match with the family's match, for the flows the fake's own lookups make. */
function matches(state: NetnsState, r: Rule, flow: { iif: number; oif: number; dst: Uint8Array }): boolean {
  const index = (name: string) => (name ? (state.linkByName(name)?.index ?? -1) : 0);
  let ok = true;
  const iif = index(r.iifname);
  const oif = index(r.oifname);
  if ((iif && iif !== flow.iif) || (oif && oif !== flow.oif) || r.mask & r.mark) ok = false;
  // The flows carry no source address, tos, protocol or ports.
  else if (r.srcLen && !inPrefix(new Uint8Array(flow.dst.length), r.src!, r.srcLen)) ok = false;
  else if (r.dstLen && !inPrefix(flow.dst, r.dst!, r.dstLen)) ok = false;
  else if (r.tos || r.ipProto) ok = false;
  return r.flags & FIB_RULE_INVERT ? !ok : ok;
}

/** RuleResult is what a table lookup gives the rule walk: a route with its prefix length, or a negative errno. */
export type RuleResult<T> = { route: T; prefixLen: number; dev: number } | { err: number };

/**
 * lookupRules is fib_rules_lookup for either family: rules in order, goto jumps, nop skips, an error action
 * stops, a table without an answer (-EAGAIN) moves on, and suppress_prefixlen drops too general a route.
 */
export function lookupRules<T>(
  state: NetnsState,
  family: 4 | 6,
  flow: { iif: number; oif: number; dst: Uint8Array },
  table: (id: number) => RuleResult<T> | undefined,
): RuleResult<T> {
  const rules = state.rules[family];
  for (let i = 0; i < rules.length; i++) {
    const r = rules[i]!;
    if (!matches(state, r, flow)) continue;
    if (r.action === FR_ACT.GOTO) {
      const to = rules.findIndex((x) => x.priority === r.target);
      if (to >= 0) i = to - 1;
      continue;
    }
    if (r.action === FR_ACT.NOP) continue;
    let res: RuleResult<T>;
    if (r.action === FR_ACT.TO_TBL) res = table(r.table) ?? { err: -ERRNO.EAGAIN };
    else if (r.action === FR_ACT.UNREACHABLE) res = { err: -ERRNO.ENETUNREACH };
    else if (r.action === FR_ACT.PROHIBIT) res = { err: -ERRNO.EACCES };
    else res = { err: -ERRNO.EINVAL };
    if ('route' in res && (res.prefixLen <= r.suppressPrefixlen || (r.suppressIfgroup === 0 && res.dev !== 0))) continue;
    if ('err' in res && res.err === -ERRNO.EAGAIN) continue;
    return res;
  }
  return { err: -ERRNO.ESRCH };
}
