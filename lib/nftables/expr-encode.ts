/**
 * Checks rule expressions and turns them into the codec's raw form. Every check names the expression by its place
 * (`rule.exprs[3].sreg`) in the one message shape; nothing reaches the addon unless the whole list is good.
 */
import { native, type RawNftExpr } from '../native.js';
import { checkArray, checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import {
  BITWISE_BOOL,
  CMP_OPS,
  CT_DIRECTIONS,
  CT_KEYS,
  LOOKUP_INVERT,
  META_KEYS,
  NAT_FAMILIES,
  NAT_TYPES,
  PAYLOAD_BASES,
  REG_DATA_BYTES,
  VERDICTS,
} from './expr-names.js';
import type { NftExpr } from './expr-types.js';

const K = native.nftablesConstants;
const U32_MAX = 0xffffffff;
/**
 * The most bytes a rule's expressions may take encoded: a dump datagram's 32448 bytes less a rule message's other
 * attributes at their largest (headers 20, table and chain names 2 x 260, handle and position 2 x 12, comment 136).
 */
const RULE_EXPRS_MAX_BYTES = 31744;
/** NFT_DATA_VALUE_MAXLEN. */
const DATA_MAX = 64;
/** nft's widest payload offset, taken by every kernel. */
const PAYLOAD_OFFSET_MAX = 255;
const NAME_KEYS = new Set<string | number>(['iifname', 'oifname', META_KEYS.iifname, META_KEYS.oifname]);

/** Resolves a set named by a lookup to its id when the same transaction adds it (nft sends both). */
export type SetIdOf = (set: string) => number | undefined;

/** The register's offset in 4-byte units in the kernel's register file (nft_parse_register). */
function slot(reg: number): number {
  return reg <= 4 ? reg * 4 : reg - 4;
}

function isRegister(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && ((value >= 0 && value <= 4) || (value >= 8 && value <= 23));
}

/** A data register (not the verdict register) with room for len bytes from it on. */
function checkDataRegister(name: string, value: unknown, len: number): number {
  if (!isRegister(value) || value === 0) throw invalidValue(name, 'a data register (1..4, or 8..23 for 4-byte registers)', value);
  if (slot(value) * 4 + len > REG_DATA_BYTES) {
    throw invalidValue(name, `a register with room for ${len} bytes before the end of the registers`, value);
  }
  return value;
}

function checkData(name: string, value: unknown, exactLength?: number): Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalidType(name, 'a Buffer or Uint8Array', value);
  if (exactLength !== undefined && value.length !== exactLength) throw invalidValue(name, `${exactLength} bytes`, value);
  if (value.length === 0 || value.length > DATA_MAX) throw invalidValue(name, `1 to ${DATA_MAX} bytes`, value);
  return value;
}

function checkName<T extends string>(name: string, value: unknown, table: Readonly<Record<T, number>>, numbers: boolean): number {
  if (typeof value === 'string' && Object.hasOwn(table, value)) return table[value as T];
  if (numbers && typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= U32_MAX) return value;
  const names = Object.keys(table).map((k) => `'${k}'`).join(', ');
  throw invalidValue(name, numbers ? `one of ${names}, or a key number` : `one of ${names}`, value);
}

function optionalFlags(name: string, value: unknown): number | undefined {
  return value === undefined ? undefined : checkInteger(name, value, 0, U32_MAX);
}

/** Load (dreg) or store (sreg): exactly one of them. */
function loadOrStore(at: string, e: { dreg?: unknown; sreg?: unknown }, len: number): { dreg: number } | { sreg: number } {
  if ((e.dreg === undefined) === (e.sreg === undefined)) {
    throw invalidValue(`${at}.dreg`, 'exactly one of dreg (load) and sreg (set)', e.dreg);
  }
  return e.dreg !== undefined ? { dreg: checkDataRegister(`${at}.dreg`, e.dreg, len) } : { sreg: checkDataRegister(`${at}.sreg`, e.sreg, len) };
}

function natRegisters(at: string, e: Record<string, unknown>, keys: [string, string][]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, field] of keys) {
    if (e[key] !== undefined) out[field] = checkDataRegister(`${at}.${key}`, e[key], 1);
  }
  return out;
}

function checkExpr(at: string, value: unknown, setIdOf: SetIdOf): RawNftExpr {
  if (value === undefined) throw invalidType(at, 'an expression object', value);
  const e = checkOptions<Record<string, unknown>>(at, value) as Record<string, unknown>;
  switch (e.type as NftExpr['type']) {
    case 'payload': {
      const len = checkInteger(`${at}.len`, e.len, 1, DATA_MAX);
      return {
        name: 'payload',
        fields: {
          dreg: checkDataRegister(`${at}.dreg`, e.dreg, len),
          base: checkName(`${at}.base`, e.base, PAYLOAD_BASES, false),
          offset: checkInteger(`${at}.offset`, e.offset, 0, PAYLOAD_OFFSET_MAX),
          len,
        },
      };
    }
    case 'meta': {
      const key = checkName(`${at}.key`, e.key, META_KEYS, true);
      return { name: 'meta', fields: { key, ...loadOrStore(at, e, NAME_KEYS.has(key) ? 16 : 4) } };
    }
    case 'ct': {
      const key = checkName(`${at}.key`, e.key, CT_KEYS, true);
      const reg = loadOrStore(at, e, 4);
      const fields: Record<string, number> = { key, ...reg };
      if (e.direction !== undefined) {
        if ('sreg' in reg) throw invalidValue(`${at}.direction`, 'no direction on a ct set', e.direction);
        fields.direction = checkName(`${at}.direction`, e.direction, CT_DIRECTIONS, false);
      }
      return { name: 'ct', fields };
    }
    case 'cmp': {
      const data = checkData(`${at}.data`, e.data);
      return {
        name: 'cmp',
        fields: { sreg: checkDataRegister(`${at}.sreg`, e.sreg, data.length), op: checkName(`${at}.op`, e.op, CMP_OPS, false), data },
      };
    }
    case 'bitwise': {
      const len = checkInteger(`${at}.len`, e.len, 1, DATA_MAX);
      if (e.op !== undefined && e.op !== 'bool') throw invalidValue(`${at}.op`, "'bool' or nothing", e.op);
      const fields: Record<string, number | Uint8Array> = {
        sreg: checkDataRegister(`${at}.sreg`, e.sreg, len),
        dreg: checkDataRegister(`${at}.dreg`, e.dreg, len),
      };
      if (e.op === 'bool') fields.op = BITWISE_BOOL;
      fields.len = len;
      fields.mask = checkData(`${at}.mask`, e.mask, len);
      fields.xor = checkData(`${at}.xor`, e.xor, len);
      return { name: 'bitwise', fields };
    }
    case 'lookup': {
      const set = checkString(`${at}.set`, e.set, K.nameMax);
      if (e.invert !== undefined && typeof e.invert !== 'boolean') throw invalidType(`${at}.invert`, 'a boolean', e.invert);
      const fields: Record<string, number | string> = { sreg: checkDataRegister(`${at}.sreg`, e.sreg, 1), set };
      const id = setIdOf(set);
      if (id !== undefined) fields.setId = id;
      if (e.invert === true) fields.flags = LOOKUP_INVERT;
      return { name: 'lookup', fields };
    }
    case 'immediate': {
      const data = checkData(`${at}.data`, e.data);
      return { name: 'immediate', fields: { dreg: checkDataRegister(`${at}.dreg`, e.dreg, data.length), data } };
    }
    case 'verdict': {
      const v = e.verdict;
      if (typeof v !== 'string' || !Object.hasOwn(VERDICTS, v)) {
        throw invalidValue(`${at}.verdict`, `one of ${Object.keys(VERDICTS).map((k) => `'${k}'`).join(', ')}`, v);
      }
      const code = VERDICTS[v as keyof typeof VERDICTS];
      if (v === 'jump' || v === 'goto') {
        if (e.chain === undefined) throw invalidValue(`${at}.chain`, `the chain a ${v} goes to`, e.chain);
        return { name: 'immediate', fields: { dreg: 0, verdict: code, chain: checkString(`${at}.chain`, e.chain, K.nameMax) } };
      }
      if (e.chain !== undefined) throw invalidValue(`${at}.chain`, `no chain for a ${v} verdict`, e.chain);
      return { name: 'immediate', fields: { dreg: 0, verdict: code } };
    }
    case 'counter': {
      const fields: Record<string, number> = {};
      if (e.bytes !== undefined) fields.bytes = checkInteger(`${at}.bytes`, e.bytes, 0, Number.MAX_SAFE_INTEGER);
      if (e.packets !== undefined) fields.packets = checkInteger(`${at}.packets`, e.packets, 0, Number.MAX_SAFE_INTEGER);
      return { name: 'counter', fields };
    }
    case 'redirect':
    case 'masquerade': {
      if (e.protoMax !== undefined && e.protoMin === undefined) throw invalidValue(`${at}.protoMin`, 'a register (protoMax is given)', e.protoMin);
      const fields: Record<string, number> = natRegisters(at, e, [['protoMin', 'regProtoMin'], ['protoMax', 'regProtoMax']]);
      const flags = optionalFlags(`${at}.flags`, e.flags);
      if (flags !== undefined) fields.flags = flags;
      return { name: e.type === 'redirect' ? 'redir' : 'masq', fields };
    }
    case 'nat': {
      if (e.addrMax !== undefined && e.addrMin === undefined) throw invalidValue(`${at}.addrMin`, 'a register (addrMax is given)', e.addrMin);
      if (e.protoMax !== undefined && e.protoMin === undefined) throw invalidValue(`${at}.protoMin`, 'a register (protoMax is given)', e.protoMin);
      const fields: Record<string, number> = {
        type: checkName(`${at}.nat`, e.nat, NAT_TYPES, false),
        family: checkName(`${at}.family`, e.family, NAT_FAMILIES, false),
        ...natRegisters(at, e, [['addrMin', 'regAddrMin'], ['addrMax', 'regAddrMax'], ['protoMin', 'regProtoMin'], ['protoMax', 'regProtoMax']]),
      };
      const flags = optionalFlags(`${at}.flags`, e.flags);
      if (flags !== undefined) fields.flags = flags;
      return { name: 'nat', fields };
    }
    case 'raw': {
      const name = checkString(`${at}.name`, e.name, K.nameMax);
      if (!(e.data instanceof Uint8Array)) throw invalidType(`${at}.data`, 'a Buffer or Uint8Array', e.data);
      if (e.data.length > 0xffff - 8) throw invalidValue(`${at}.data`, 'at most 65527 bytes', e.data);
      return { name, data: e.data };
    }
    default:
      throw invalidValue(
        `${at}.type`,
        "one of 'payload', 'meta', 'ct', 'cmp', 'bitwise', 'lookup', 'immediate', 'verdict', 'counter', 'redirect', 'nat', 'masquerade', 'raw'",
        e.type,
      );
  }
}

/**
 * checkExprs checks a rule's expressions (nested arrays, as the match helpers return them, are flattened) and
 * returns them in the codec's form. Throws InvalidArgumentError naming the first bad one.
 */
const align4 = (n: number): number => (n + 3) & ~3;

export function checkExprs(name: string, value: unknown, setIdOf: SetIdOf): RawNftExpr[] {
  const out: RawNftExpr[] = [];
  checkArray(name, value, 'an array of expressions', (item, at) => {
    if (!Array.isArray(item)) return out.push(checkExpr(at, item, setIdOf));
    checkArray(at, item, 'an array of expressions', (inner, innerAt) => out.push(checkExpr(innerAt, inner, setIdOf)));
    return 0;
  });
  if (out.length === 0) throw invalidValue(name, 'at least one expression', value);
  if (out.length > K.ruleExprsMax) throw invalidValue(name, `at most ${K.ruleExprsMax} expressions`, value);
  // A rule must come back whole in a listing: the kernel puts each object of a dump into one datagram of at most
  // 32448 bytes (SKB_WITH_OVERHEAD(32 KiB)), and a bigger one ends the dump there, losing it and what follows. The
  // expressions get what is left beside the rule's other attributes at their largest (names, handle, position,
  // comment). An upper bound of each expression's encoding (512 bytes for a typed one) clears most rules without
  // encoding them; a rule past it is encoded by the codec and its real size counted.
  let bytes = 4;
  for (const e of out) {
    bytes += e.data === undefined ? 512 : 16 + align4(Buffer.byteLength(e.name) + 1) + align4(e.data.length);
  }
  if (bytes > RULE_EXPRS_MAX_BYTES && native.nftExprsSize(out) > RULE_EXPRS_MAX_BYTES) {
    throw invalidValue(name, `expressions that fit in ${RULE_EXPRS_MAX_BYTES} bytes encoded (so the rule can be listed back)`, value);
  }
  return out;
}
