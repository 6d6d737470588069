/**
 * Turns listed expressions into the rule AST. The addon decodes them (native/nftables/expr.cc) and hands over fields
 * only for the forms the AST holds; any other (another name, a payload write, a map lookup, a shift, a verdict by
 * chain id) comes as its NFTA_EXPR_DATA whole and becomes `{ type: 'raw', name, data }`, so a listing never fails on
 * what podnet does not model and the rule can be written back. Here numbers only get their names.
 */
import type { RawNftExpr } from '../native.js';
import { LOOKUP_INVERT, NAMES_OF } from './expr-names.js';
import type { NftExpr, NftRegister } from './expr-types.js';

type Fields = Record<string, number | string | Uint8Array>;

const num = (f: Fields, key: string): number => f[key] as number;
const opt = (f: Fields, key: string): number | undefined => f[key] as number | undefined;

function bytes(f: Fields, key: string): Buffer {
  const v = f[key] as Uint8Array;
  return Buffer.from(v.buffer, v.byteOffset, v.length);
}

/** named is a number's name; the addon hands over only numbers the AST names, so one without a name is a bug. */
function named<T extends string>(map: Map<number, T>, n: number): T {
  const name = map.get(n);
  if (name === undefined) throw new Error(`nftables: the addon listed ${n}, which the rule AST has no name for`);
  return name;
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
      return { type: 'payload', base: named(NAMES_OF.base, num(f, 'base')), offset: num(f, 'offset'), len: num(f, 'len'), dreg: num(f, 'dreg') };
    case 'meta': {
      const key = NAMES_OF.metaKey.get(num(f, 'key')) ?? num(f, 'key');
      return f.dreg !== undefined ? { type: 'meta', key, dreg: num(f, 'dreg') } : { type: 'meta', key, sreg: num(f, 'sreg') };
    }
    case 'ct': {
      const key = NAMES_OF.ctKey.get(num(f, 'key')) ?? num(f, 'key');
      if (f.sreg !== undefined) return { type: 'ct', key, sreg: num(f, 'sreg') };
      const d = opt(f, 'direction');
      return d === undefined ? { type: 'ct', key, dreg: num(f, 'dreg') } : { type: 'ct', key, dreg: num(f, 'dreg'), direction: named(NAMES_OF.direction, d) };
    }
    case 'cmp':
      return { type: 'cmp', sreg: num(f, 'sreg'), op: named(NAMES_OF.cmpOp, num(f, 'op')), data: bytes(f, 'data') };
    case 'bitwise':
      return { type: 'bitwise', sreg: num(f, 'sreg'), dreg: num(f, 'dreg'), len: num(f, 'len'), mask: bytes(f, 'mask'), xor: bytes(f, 'xor') };
    case 'lookup': {
      const base = { type: 'lookup', sreg: num(f, 'sreg'), set: f.set as string } as const;
      return opt(f, 'flags') === LOOKUP_INVERT ? { ...base, invert: true } : base;
    }
    case 'immediate': {
      if (f.verdict === undefined) return { type: 'immediate', dreg: num(f, 'dreg'), data: bytes(f, 'data') };
      const verdict = named(NAMES_OF.verdict, num(f, 'verdict'));
      return verdict === 'jump' || verdict === 'goto' ? { type: 'verdict', verdict, chain: f.chain as string } : { type: 'verdict', verdict };
    }
    case 'counter':
      return { type: 'counter', packets: opt(f, 'packets') ?? 0, bytes: opt(f, 'bytes') ?? 0 };
    case 'redir':
    case 'masq': {
      const r = regs(f, [['regProtoMin', 'protoMin'], ['regProtoMax', 'protoMax']]);
      const flags = opt(f, 'flags');
      const type = name === 'redir' ? 'redirect' : 'masquerade';
      return flags === undefined ? { type, ...r } : { type, ...r, flags };
    }
    case 'nat': {
      const r = regs(f, [['regAddrMin', 'addrMin'], ['regAddrMax', 'addrMax'], ['regProtoMin', 'protoMin'], ['regProtoMax', 'protoMax']]);
      const nat = named(NAMES_OF.natType, num(f, 'type'));
      const family = named(NAMES_OF.natFamily, num(f, 'family'));
      const flags = opt(f, 'flags');
      return flags === undefined ? { type: 'nat', nat, family, ...r } : { type: 'nat', nat, family, ...r, flags };
    }
    default:
      throw new Error(`nftables: the addon listed fields of '${name}', an expression the rule AST does not have`);
  }
}

/** toExpr turns one listed expression into the AST: its fields named, or, without fields, a raw expression. */
export function toExpr(raw: RawNftExpr): NftExpr {
  if (raw.fields !== undefined) return decode(raw.name, raw.fields);
  const data = raw.data ? Buffer.from(raw.data.buffer, raw.data.byteOffset, raw.data.length) : Buffer.alloc(0);
  return { type: 'raw', name: raw.name, data };
}
