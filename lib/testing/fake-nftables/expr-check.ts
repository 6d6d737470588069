/**
 * A rule's expressions as nf_tables_newrule takes them: every expression is first parsed (its name known, the
 * attributes its select_ops needs there), then each is initialised in order, and an init reads and writes the
 * registers as nft_parse_register_load / nft_parse_register_store do: a load from a register no earlier expression
 * of the same rule wrote is ENODATA, so is one wider than what was written. Either phase's error names the
 * expression's NFTA_LIST_ELEM. What only the validation of a table can judge (a NAT statement's chain, a jump's
 * depth) is handed on as the rule's checks (validate.ts). Checked against a 6.18 kernel by
 * test/nftables/differential-bytes.test.ts; expressions podnet does not encode get their name checked only.
 */
import { type Attr, AttrTable } from '../netlink-kernel/codec.js';
import {
  E,
  EXPRESSIONS,
  NFPROTO,
  NFT_DATA_VERDICT,
  NFT_GOTO,
  NFT_JUMP,
  NFT_RULE_MAXEXPRS,
  NFT_SET_ANONYMOUS,
  NFT_SET_MAP,
  NFTA_DATA,
  NFTA_EXPR,
  NFTA_IMMEDIATE,
  NFTA_LIST_ELEM,
  NFTA_LOOKUP,
  NFTA_VERDICT,
  PLAIN_VERDICTS,
} from './constants.js';
import type { RuleCheck, SetObj, TableObj } from './model.js';
import { fail, nameOf } from './request.js';

/** What a rule holds and what its table's validation must look at. */
export interface RuleRefs {
  sets: string[];
  jumps: string[];
  checks: RuleCheck[];
}

const NFTA_PAYLOAD = { DREG: 1, BASE: 2, OFFSET: 3, LEN: 4, SREG: 5 } as const;
const NFTA_META = { DREG: 1, KEY: 2, SREG: 3 } as const;
const NFTA_CT = { DREG: 1, KEY: 2, DIRECTION: 3, SREG: 4 } as const;
const NFTA_CMP = { SREG: 1, OP: 2, DATA: 3 } as const;
const NFTA_BITWISE = { SREG: 1, DREG: 2, LEN: 3, MASK: 4, XOR: 5, OP: 6 } as const;
const NFTA_REDIR = { PROTO_MIN: 1, PROTO_MAX: 2, FLAGS: 3 } as const;
const NFTA_MASQ = { FLAGS: 1, PROTO_MIN: 2, PROTO_MAX: 3 } as const;
const NFTA_NAT = { TYPE: 1, FAMILY: 2, ADDR_MIN: 3, ADDR_MAX: 4, PROTO_MIN: 5, PROTO_MAX: 6, FLAGS: 7 } as const;
const NFT_CMP_GTE = 5;
const NFT_BITWISE_MASK_XOR = 0;
const NFT_LOOKUP_F_INV = 1;
/** NF_NAT_RANGE_MASK: every NF_NAT_RANGE_* flag. */
const NF_NAT_RANGE_MASK = 0x7f;
/** struct nft_regs: 4 words of verdict, then 16 of data (NFT_REG32_NUM), 4 bytes each. */
const REG32_NUM = 20;
const REG32_SIZE = 4;
const NFT_REG_4 = 4;
const NFT_REG32_00 = 8;
const NFT_REG32_15 = 23;
/** What cmp and immediate keep a value in (struct nft_data). */
const NFT_DATA_LEN = 16;
/** The port a NAT statement takes from a register (min_proto.all). */
const PROTO_LEN = 2;
const IFNAMSIZ = 16;

/**
 * meta keys a load takes (nft_meta_get_init), with the bytes each writes. The bridge keys are not among them, in a
 * bridge table neither (this kernel has no nft_meta_bridge).
 */
const META_GET: Readonly<Record<number, number>> = {
  0: 4, 1: 2, 2: 4, 3: 4, 4: 4, 5: 4, 6: IFNAMSIZ, 7: IFNAMSIZ, 8: 2, 9: 2, 10: 4, 11: 4, 13: 4, 14: 4, 15: 1, 16: 1,
  19: 1, 20: 4, 21: 4, 22: 4, 23: 4, 24: 4, 25: 1, 26: IFNAMSIZ, 27: IFNAMSIZ, 30: 8, 31: 1, 32: 4, 33: 4, 34: IFNAMSIZ,
};
/** meta keys a set takes (nft_meta_set_init), with the bytes each reads. */
const META_SET: Readonly<Record<number, number>> = { 2: 4, 3: 4, 12: 1, 14: 4, 19: 1 };
const NFT_META_PKTTYPE = 19;

type Dir = 'forbid' | 'allow' | 'require';
/** ct keys a load takes (nft_ct_get_init): bytes written (0: the family's address) and NFTA_CT_DIRECTION's rule. */
const CT_GET: Readonly<Record<number, [number, Dir]>> = {
  0: [4, 'forbid'], 1: [1, 'forbid'], 2: [4, 'forbid'], 3: [4, 'forbid'], 4: [4, 'forbid'], 5: [4, 'forbid'],
  6: [16, 'forbid'], 7: [1, 'allow'], 8: [0, 'require'], 9: [0, 'require'], 10: [1, 'allow'], 11: [2, 'require'],
  12: [2, 'require'], 13: [16, 'forbid'], 14: [8, 'allow'], 15: [8, 'allow'], 16: [8, 'allow'], 17: [2, 'allow'],
  19: [4, 'require'], 20: [4, 'require'], 21: [16, 'require'], 22: [16, 'require'], 23: [4, 'forbid'],
};
/** ct keys a set takes (nft_ct_set_init). */
const CT_SET: Readonly<Record<number, [number, Dir]>> = { 3: [4, 'forbid'], 4: [4, 'forbid'], 13: [16, 'forbid'], 17: [2, 'allow'], 18: [4, 'forbid'] };

/** Hook bits of what a NAT statement may run in (nft_nat_validate, nft_redir_validate, nft_masq_validate). */
const PRE = 1 << 0, IN = 1 << 1, OUT = 1 << 3, POST = 1 << 4;
/** The expression types registered only for ip, ip6 and inet (nft_redir, nft_masq; nat is for every family). */
const INET_ONLY = new Set(['redir', 'masq']);

interface Ctx {
  table: TableObj;
  item: Attr;
  /** Which 4-byte registers an earlier expression of the rule wrote (ctx->reg_inited). */
  inited: boolean[];
}

function u32(ctx: Ctx, a: Attr): number {
  if (a.len < 4) fail(E.EINVAL, ctx.item);
  return a.buf.readUInt32BE(a.off);
}

function u8(ctx: Ctx, a: Attr): number {
  if (a.len < 1) fail(E.EINVAL, ctx.item);
  return a.buf[a.off]!;
}

/** nft_parse_register: NFT_REG_1..4 are 16 bytes, NFT_REG32_00..15 4 bytes; the index counts 4-byte words. */
function register(ctx: Ctx, a: Attr): number {
  const reg = u32(ctx, a);
  if (reg <= NFT_REG_4) return reg * 4;
  if (reg >= NFT_REG32_00 && reg <= NFT_REG32_15) return reg - NFT_REG32_00 + 4;
  return fail(E.ERANGE, ctx.item);
}

function load(ctx: Ctx, a: Attr | undefined, len: number): void {
  if (!a) fail(E.EINVAL, ctx.item);
  const reg = register(ctx, a);
  if (reg < 4 || len === 0) fail(E.EINVAL, ctx.item);
  if (reg * REG32_SIZE + len > REG32_NUM * REG32_SIZE) fail(E.ERANGE, ctx.item);
  const next = reg + Math.ceil(len / REG32_SIZE);
  for (let r = reg; r < next; r++) if (!ctx.inited[r]) fail(E.ENODATA, ctx.item);
}

function store(ctx: Ctx, a: Attr | undefined, len: number, verdict = false): void {
  if (!a) fail(E.EINVAL, ctx.item);
  const reg = register(ctx, a);
  if (reg === 0) {
    if (!verdict) fail(E.EINVAL, ctx.item);
    return;
  }
  if (verdict || reg < 4 || len === 0) fail(E.EINVAL, ctx.item);
  if (reg * REG32_SIZE + len > REG32_NUM * REG32_SIZE) fail(E.ERANGE, ctx.item);
  const next = reg + Math.ceil(len / REG32_SIZE);
  for (let r = reg; r < next; r++) ctx.inited[r] = true;
}

/** nft_data_init of a value: its length (EINVAL empty or not a value, EOVERFLOW past what holds it). */
function valueLen(ctx: Ctx, a: Attr | undefined, max = NFT_DATA_LEN): number {
  const v = a?.children().byType.get(NFTA_DATA.VALUE);
  if (!v || v.len === 0) return fail(E.EINVAL, ctx.item);
  if (v.len > max) fail(E.EOVERFLOW, ctx.item);
  return v.len;
}

function oneOf(ctx: Ctx, d: AttrTable, dreg: number, sreg: number, key: number): void {
  if (!d.get(key) || d.has(dreg) === d.has(sreg)) fail(E.EINVAL, ctx.item);
}

/** parse is the first pass (nf_tables_expr_parse and the type's select_ops): nothing is initialised yet. */
function parse(ctx: Ctx, name: string, d: AttrTable): void {
  if (!EXPRESSIONS.has(name)) fail(E.ENOENT, ctx.item);
  const f = ctx.table.family;
  if (INET_ONLY.has(name) && f !== NFPROTO.INET && f !== NFPROTO.IPV4 && f !== NFPROTO.IPV6) fail(E.ENOENT, ctx.item);
  switch (name) {
    case 'payload':
      if (!d.has(NFTA_PAYLOAD.BASE) || !d.has(NFTA_PAYLOAD.OFFSET) || !d.has(NFTA_PAYLOAD.LEN)) fail(E.EINVAL, ctx.item);
      if (d.has(NFTA_PAYLOAD.SREG) === d.has(NFTA_PAYLOAD.DREG)) fail(E.EINVAL, ctx.item);
      return;
    case 'meta':
      return oneOf(ctx, d, NFTA_META.DREG, NFTA_META.SREG, NFTA_META.KEY);
    case 'ct':
      return oneOf(ctx, d, NFTA_CT.DREG, NFTA_CT.SREG, NFTA_CT.KEY);
    case 'cmp': {
      const op = d.get(NFTA_CMP.OP);
      if (!d.has(NFTA_CMP.SREG) || !op || !d.has(NFTA_CMP.DATA)) fail(E.EINVAL, ctx.item);
      if (u32(ctx, op) > NFT_CMP_GTE) fail(E.EINVAL, ctx.item);
      valueLen(ctx, d.get(NFTA_CMP.DATA));
      return;
    }
    case 'bitwise':
      if (!d.has(NFTA_BITWISE.LEN) || !d.has(NFTA_BITWISE.SREG) || !d.has(NFTA_BITWISE.DREG)) fail(E.EINVAL, ctx.item);
      return;
  }
}

function metaInit(ctx: Ctx, d: AttrTable, checks: RuleCheck[]): void {
  const key = u32(ctx, d.get(NFTA_META.KEY)!);
  const dreg = d.get(NFTA_META.DREG);
  if (dreg) {
    const len = META_GET[key];
    if (len === undefined) fail(E.EOPNOTSUPP, ctx.item);
    return store(ctx, dreg, len);
  }
  const len = META_SET[key];
  if (len === undefined) fail(E.EOPNOTSUPP, ctx.item);
  load(ctx, d.get(NFTA_META.SREG), len);
  // Setting the packet type is for packets on their way in only (nft_meta_set_validate).
  if (key === NFT_META_PKTTYPE) checks.push({ kind: 'hooks', nat: false, hooks: ctx.table.family === NFPROTO.ARP ? 0 : PRE });
}

function ctInit(ctx: Ctx, d: AttrTable): void {
  const key = u32(ctx, d.get(NFTA_CT.KEY)!);
  const dreg = d.get(NFTA_CT.DREG);
  const spec = (dreg ? CT_GET : CT_SET)[key];
  if (!spec) fail(E.EOPNOTSUPP, ctx.item);
  let [len] = spec;
  const dir = d.get(NFTA_CT.DIRECTION);
  if ((spec[1] === 'forbid' && dir) || (spec[1] === 'require' && !dir)) fail(E.EINVAL, ctx.item);
  if (len === 0) {
    const f = ctx.table.family;
    if (f === NFPROTO.IPV4) len = 4;
    else if (f === NFPROTO.IPV6 || f === NFPROTO.INET) len = 16;
    else fail(E.EAFNOSUPPORT, ctx.item);
  }
  if (dir && u8(ctx, dir) > 1) fail(E.EINVAL, ctx.item);
  if (dreg) store(ctx, dreg, len);
  else load(ctx, d.get(NFTA_CT.SREG), len);
  // Last, the expression asks for conntrack in the table's family (nf_ct_netns_get): arp and netdev have none, and
  // bridge has it only with CONFIG_NF_CONNTRACK_BRIDGE, which this kernel is built without.
  const f = ctx.table.family;
  if (f === NFPROTO.ARP || f === NFPROTO.NETDEV || f === NFPROTO.BRIDGE) fail(E.EPROTO, ctx.item);
}

function bitwiseInit(ctx: Ctx, d: AttrTable): void {
  const len = u32(ctx, d.get(NFTA_BITWISE.LEN)!);
  if (len > 0xff) fail(E.ERANGE, ctx.item);
  load(ctx, d.get(NFTA_BITWISE.SREG), len);
  store(ctx, d.get(NFTA_BITWISE.DREG), len);
  const op = d.get(NFTA_BITWISE.OP);
  if (op && u32(ctx, op) !== NFT_BITWISE_MASK_XOR) return;
  const mask = d.get(NFTA_BITWISE.MASK);
  const xor = d.get(NFTA_BITWISE.XOR);
  if (!mask || !xor) fail(E.EINVAL, ctx.item);
  if (valueLen(ctx, mask, len) !== len || valueLen(ctx, xor, len) !== len) fail(E.EINVAL, ctx.item);
}

function lookupInit(ctx: Ctx, d: AttrTable, setOf: (d: AttrTable) => SetObj | undefined, refs: RuleRefs): void {
  if (!d.has(NFTA_LOOKUP.SET) || !d.has(NFTA_LOOKUP.SREG)) fail(E.EINVAL, ctx.item);
  const set = setOf(d);
  if (!set) fail(E.ENOENT, ctx.item);
  load(ctx, d.get(NFTA_LOOKUP.SREG), set.keyLen);
  const flagsAttr = d.get(NFTA_LOOKUP.FLAGS);
  const flags = flagsAttr ? u32(ctx, flagsAttr) : 0;
  if (flags & ~NFT_LOOKUP_F_INV) fail(E.EOPNOTSUPP, ctx.item);
  const map = (set.flags & NFT_SET_MAP) !== 0;
  const dreg = d.get(NFTA_LOOKUP.DREG);
  if (dreg) {
    if (flags & NFT_LOOKUP_F_INV || !map) fail(E.EINVAL, ctx.item);
    store(ctx, dreg, set.dataLen, set.dataType === NFT_DATA_VERDICT);
  } else if (map && set.flags & NFT_SET_ANONYMOUS) {
    // A named map may be looked up for its keys only (also inverted); an anonymous one is the rule's own, for its data.
    fail(E.EINVAL, ctx.item);
  }
  refs.sets.push(set.name);
}

function immediateInit(ctx: Ctx, d: AttrTable, refs: RuleRefs): void {
  const dreg = d.get(NFTA_IMMEDIATE.DREG);
  const data = d.get(NFTA_IMMEDIATE.DATA);
  if (!dreg || !data) fail(E.EINVAL, ctx.item);
  const verdict = data.children().byType.get(NFTA_DATA.VERDICT)?.children().byType;
  if (!verdict) return store(ctx, dreg, valueLen(ctx, data));
  const code = verdict.get(NFTA_VERDICT.CODE);
  if (!code) fail(E.EINVAL, ctx.item);
  const v = u32(ctx, code) | 0;
  if (v === NFT_JUMP || v === NFT_GOTO) {
    const chainAttr = verdict.get(NFTA_VERDICT.CHAIN);
    if (!chainAttr) fail(E.EINVAL, ctx.item);
    const target = ctx.table.chains.get(nameOf(chainAttr)!);
    if (!target) fail(E.ENOENT, ctx.item);
    if (target.base) fail(E.EOPNOTSUPP, ctx.item);
    refs.jumps.push(target.name);
    refs.checks.push({ kind: 'jump', chain: target.name });
  } else if (!PLAIN_VERDICTS.has(v)) {
    fail(E.EINVAL, ctx.item);
  }
  store(ctx, dreg, 16, true);
}

/** The port registers of redir and masq, and the NAT flags: a flag the kernel does not know is refused. */
function protoRange(ctx: Ctx, min: Attr | undefined, max: Attr | undefined): void {
  if (!min) return;
  load(ctx, min, PROTO_LEN);
  if (max) load(ctx, max, PROTO_LEN);
}

function natFlags(ctx: Ctx, a: Attr | undefined): void {
  if (a && u32(ctx, a) & ~NF_NAT_RANGE_MASK) fail(E.EINVAL, ctx.item);
}

function natInit(ctx: Ctx, d: AttrTable, checks: RuleCheck[]): void {
  const type = d.get(NFTA_NAT.TYPE);
  if (!type || (!d.has(NFTA_NAT.ADDR_MIN) && !d.has(NFTA_NAT.PROTO_MIN))) fail(E.EINVAL, ctx.item);
  const snat = u32(ctx, type) === 0;
  if (!snat && u32(ctx, type) !== 1) fail(E.EOPNOTSUPP, ctx.item);
  const familyAttr = d.get(NFTA_NAT.FAMILY);
  if (!familyAttr) fail(E.EINVAL, ctx.item);
  const family = u32(ctx, familyAttr);
  if (ctx.table.family !== NFPROTO.INET && ctx.table.family !== family) fail(E.EOPNOTSUPP, ctx.item);
  const alen = family === NFPROTO.IPV4 ? 4 : family === NFPROTO.IPV6 ? 16 : 0;
  const addrMin = d.get(NFTA_NAT.ADDR_MIN);
  if (alen === 0 && addrMin) fail(E.EAFNOSUPPORT, ctx.item);
  if (addrMin) {
    load(ctx, addrMin, alen);
    const addrMax = d.get(NFTA_NAT.ADDR_MAX);
    if (addrMax) load(ctx, addrMax, alen);
  }
  protoRange(ctx, d.get(NFTA_NAT.PROTO_MIN), d.get(NFTA_NAT.PROTO_MAX));
  natFlags(ctx, d.get(NFTA_NAT.FLAGS));
  checks.push({ kind: 'hooks', nat: true, hooks: snat ? POST | IN : PRE | OUT });
}

function init(ctx: Ctx, name: string, d: AttrTable, setOf: (d: AttrTable) => SetObj | undefined, refs: RuleRefs): void {
  switch (name) {
    case 'payload': {
      const len = u32(ctx, d.get(NFTA_PAYLOAD.LEN)!);
      const dreg = d.get(NFTA_PAYLOAD.DREG);
      return dreg ? store(ctx, dreg, len) : load(ctx, d.get(NFTA_PAYLOAD.SREG), len);
    }
    case 'meta':
      return metaInit(ctx, d, refs.checks);
    case 'ct':
      return ctInit(ctx, d);
    case 'cmp':
      return load(ctx, d.get(NFTA_CMP.SREG), valueLen(ctx, d.get(NFTA_CMP.DATA)));
    case 'bitwise':
      return bitwiseInit(ctx, d);
    case 'lookup':
      return lookupInit(ctx, d, setOf, refs);
    case 'immediate':
      return immediateInit(ctx, d, refs);
    case 'redir':
      protoRange(ctx, d.get(NFTA_REDIR.PROTO_MIN), d.get(NFTA_REDIR.PROTO_MAX));
      natFlags(ctx, d.get(NFTA_REDIR.FLAGS));
      refs.checks.push({ kind: 'hooks', nat: true, hooks: PRE | OUT });
      return;
    case 'masq':
      natFlags(ctx, d.get(NFTA_MASQ.FLAGS));
      protoRange(ctx, d.get(NFTA_MASQ.PROTO_MIN), d.get(NFTA_MASQ.PROTO_MAX));
      refs.checks.push({ kind: 'hooks', nat: true, hooks: POST });
      return;
    case 'nat':
      return natInit(ctx, d, refs.checks);
  }
}

/**
 * checkExpressions runs both passes over NFTA_RULE_EXPRESSIONS and returns what the rule refers to; setOf finds
 * the set a lookup names (by name, or by the id of one made in the batch). Throws the kernel's error.
 */
export function checkExpressions(table: TableObj, attr: Attr | undefined, setOf: (d: AttrTable) => SetObj | undefined): RuleRefs {
  const refs: RuleRefs = { sets: [], jumps: [], checks: [] };
  if (!attr) return refs;
  const inited = new Array<boolean>(REG32_NUM).fill(false);
  const parsed: { ctx: Ctx; name: string; data: AttrTable }[] = [];
  for (const item of attr.children().all) {
    if (item.type !== NFTA_LIST_ELEM) fail(E.EINVAL, item);
    if (parsed.length === NFT_RULE_MAXEXPRS) fail(E.E2BIG, item);
    const e = item.children().byType;
    const name = nameOf(e.get(NFTA_EXPR.NAME));
    if (name === undefined) fail(E.EINVAL, item);
    const ctx: Ctx = { table, item, inited };
    const data = e.get(NFTA_EXPR.DATA)?.children().byType ?? new AttrTable();
    parse(ctx, name, data);
    parsed.push({ ctx, name, data });
  }
  for (const p of parsed) init(p.ctx, p.name, p.data, setOf, refs);
  return refs;
}
