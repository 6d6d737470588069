/**
 * Turns listed expressions (the codec's fields) into the rule AST. An expression in a form the AST has no field for
 * (a payload write, a map lookup, a shift, a verdict by chain id) becomes `{ type: 'raw', name, data }` with its
 * attributes whole, so a listing never fails on what podnet does not model and the rule can be written back.
 */
import type { RawNftExpr } from '../native.js';
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
  VERDICTS,
  reverse,
} from './expr-names.js';
import type { NftExpr, NftRegister } from './expr-types.js';

type Fields = Record<string, number | string | Uint8Array>;

const bases = reverse(PAYLOAD_BASES);
const metaKeys = reverse(META_KEYS);
const ctKeys = reverse(CT_KEYS);
const cmpOps = reverse(CMP_OPS);
const verdicts = reverse(VERDICTS);
const directions = reverse(CT_DIRECTIONS);
const natTypes = reverse(NAT_TYPES);
const natFamilies = reverse(NAT_FAMILIES);

/** Thrown inside decode when a field is not what the AST can hold; the caller lists the expression raw. */
class NotModelled extends Error {}

function has(f: Fields, key: string): boolean {
  return f[key] !== undefined;
}

function only(f: Fields, keys: string[]): void {
  for (const k of Object.keys(f)) if (!keys.includes(k)) throw new NotModelled(k);
}

function num(f: Fields, key: string): number {
  const v = f[key];
  if (typeof v !== 'number') throw new NotModelled(key);
  return v;
}

function opt(f: Fields, key: string): number | undefined {
  return has(f, key) ? num(f, key) : undefined;
}

function bytes(f: Fields, key: string): Buffer {
  const v = f[key];
  if (!(v instanceof Uint8Array)) throw new NotModelled(key);
  return Buffer.from(v.buffer, v.byteOffset, v.length);
}

function named<T extends string>(map: Map<number, T>, n: number, numbers: boolean): T | number {
  const name = map.get(n);
  if (name !== undefined) return name;
  if (numbers) return n;
  throw new NotModelled(String(n));
}

/** Registers: the listed ones only; an absent one stays absent. */
function regs(f: Fields, pairs: [string, string][]): Record<string, NftRegister> {
  const out: Record<string, NftRegister> = {};
  for (const [field, key] of pairs) {
    const v = opt(f, field);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

function decode(name: string, f: Fields): NftExpr {
  switch (name) {
    case 'payload':
      only(f, ['dreg', 'base', 'offset', 'len']);
      return { type: 'payload', base: named(bases, num(f, 'base'), false) as 'network', offset: num(f, 'offset'), len: num(f, 'len'), dreg: num(f, 'dreg') };
    case 'meta': {
      only(f, ['key', 'dreg', 'sreg']);
      if (has(f, 'dreg') === has(f, 'sreg')) throw new NotModelled('dreg');
      const key = named(metaKeys, num(f, 'key'), true);
      return has(f, 'dreg') ? { type: 'meta', key, dreg: num(f, 'dreg') } : { type: 'meta', key, sreg: num(f, 'sreg') };
    }
    case 'ct': {
      only(f, ['key', 'dreg', 'sreg', 'direction']);
      if (has(f, 'dreg') === has(f, 'sreg')) throw new NotModelled('dreg');
      const key = named(ctKeys, num(f, 'key'), true);
      if (has(f, 'sreg')) {
        if (has(f, 'direction')) throw new NotModelled('direction');
        return { type: 'ct', key, sreg: num(f, 'sreg') };
      }
      const direction = has(f, 'direction') ? (named(directions, num(f, 'direction'), false) as 'original') : undefined;
      return direction === undefined ? { type: 'ct', key, dreg: num(f, 'dreg') } : { type: 'ct', key, dreg: num(f, 'dreg'), direction };
    }
    case 'cmp':
      only(f, ['sreg', 'op', 'data']);
      return { type: 'cmp', sreg: num(f, 'sreg'), op: named(cmpOps, num(f, 'op'), false) as 'eq', data: bytes(f, 'data') };
    case 'bitwise':
      only(f, ['sreg', 'dreg', 'op', 'len', 'mask', 'xor']);
      if ((opt(f, 'op') ?? BITWISE_BOOL) !== BITWISE_BOOL) throw new NotModelled('op');
      return { type: 'bitwise', sreg: num(f, 'sreg'), dreg: num(f, 'dreg'), len: num(f, 'len'), mask: bytes(f, 'mask'), xor: bytes(f, 'xor') };
    case 'lookup': {
      only(f, ['sreg', 'set', 'setId', 'flags']);
      const set = f.set;
      const flags = opt(f, 'flags') ?? 0;
      if (typeof set !== 'string' || (flags & ~LOOKUP_INVERT) !== 0) throw new NotModelled('set');
      return flags === LOOKUP_INVERT ? { type: 'lookup', sreg: num(f, 'sreg'), set, invert: true } : { type: 'lookup', sreg: num(f, 'sreg'), set };
    }
    case 'immediate': {
      if (has(f, 'verdict')) {
        only(f, ['dreg', 'verdict', 'chain']);
        if (num(f, 'dreg') !== 0) throw new NotModelled('dreg');
        const verdict = named(verdicts, num(f, 'verdict'), false) as keyof typeof VERDICTS;
        if (verdict === 'jump' || verdict === 'goto') {
          if (typeof f.chain !== 'string') throw new NotModelled('chain');
          return { type: 'verdict', verdict, chain: f.chain };
        }
        if (has(f, 'chain')) throw new NotModelled('chain');
        return { type: 'verdict', verdict };
      }
      only(f, ['dreg', 'data']);
      return { type: 'immediate', dreg: num(f, 'dreg'), data: bytes(f, 'data') };
    }
    case 'counter':
      only(f, ['bytes', 'packets']);
      return { type: 'counter', packets: opt(f, 'packets') ?? 0, bytes: opt(f, 'bytes') ?? 0 };
    case 'redir':
    case 'masq': {
      only(f, ['regProtoMin', 'regProtoMax', 'flags']);
      const r = regs(f, [['regProtoMin', 'protoMin'], ['regProtoMax', 'protoMax']]);
      const flags = opt(f, 'flags');
      const type = name === 'redir' ? 'redirect' : 'masquerade';
      return flags === undefined ? { type, ...r } : { type, ...r, flags };
    }
    case 'nat': {
      only(f, ['type', 'family', 'regAddrMin', 'regAddrMax', 'regProtoMin', 'regProtoMax', 'flags']);
      const r = regs(f, [['regAddrMin', 'addrMin'], ['regAddrMax', 'addrMax'], ['regProtoMin', 'protoMin'], ['regProtoMax', 'protoMax']]);
      const nat = named(natTypes, num(f, 'type'), false) as 'snat';
      const family = named(natFamilies, num(f, 'family'), false) as 'ip';
      const flags = opt(f, 'flags');
      return flags === undefined ? { type: 'nat', nat, family, ...r } : { type: 'nat', nat, family, ...r, flags };
    }
    default:
      throw new NotModelled(name);
  }
}

/** toExpr turns one listed expression into the AST, or into a raw expression when the AST cannot hold it. */
export function toExpr(raw: RawNftExpr): NftExpr {
  const data = raw.data ? Buffer.from(raw.data.buffer, raw.data.byteOffset, raw.data.length) : Buffer.alloc(0);
  if (raw.fields === undefined) return { type: 'raw', name: raw.name, data };
  try {
    return decode(raw.name, raw.fields);
  } catch (err) {
    if (err instanceof NotModelled) return { type: 'raw', name: raw.name, data };
    throw err;
  }
}
