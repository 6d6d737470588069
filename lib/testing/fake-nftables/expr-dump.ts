/**
 * How the kernel writes a rule's expressions back in a dump: each expression's ->dump, not the bytes that came.
 * For the expressions whose dump differs from what nft sends the fake rebuilds the kernel's form: counter (bytes
 * and packets, 0 unless given), bitwise (sreg, dreg, len, op, then the rest), ct (the register first, then key and
 * direction), lookup (set, sreg, dreg, flags; no set id), nat and redir (a max register defaulting to the min one,
 * flags with NF_NAT_RANGE_MAP_IPS / PROTO_SPECIFIED added). Every other expression is dumped as it came, its nest
 * and byte-order flag bits cleared, which is what the kernel writes for payload, meta, cmp, immediate and masq
 * (checked against a 6.18 kernel by test/nftables/differential.test.ts).
 */
import { type Attr, parseAttrs } from '../netlink-kernel/codec.js';
import { attr, u32, u64 } from './fill.js';
import { NFTA_EXPR, NFTA_LIST_ELEM } from './constants.js';

const NLA_FLAGS = 0xc000;
const NLA_F_NESTED = 0x8000;
const NF_NAT_RANGE_MAP_IPS = 1;
const NF_NAT_RANGE_PROTO_SPECIFIED = 2;

/** canonical copies attribute bytes with the flag bits cleared, going into every attribute flagged as a nest. */
export function canonical(bytes: Uint8Array): Uint8Array {
  const out = Uint8Array.from(bytes);
  const walk = (start: number, end: number): void => {
    let off = start;
    while (end - off >= 4) {
      const len = out[off]! | (out[off + 1]! << 8);
      if (len < 4 || len > end - off) return;
      const type = out[off + 2]! | (out[off + 3]! << 8);
      out[off + 3] = ((type & ~NLA_FLAGS) >> 8) & 0xff;
      if (type & NLA_F_NESTED) walk(off + 4, off + len);
      off += (len + 3) & ~3;
    }
  };
  walk(0, out.length);
  return out;
}

type Parts = Map<number, Uint8Array>;

/** The attributes of an expression's data, by type (the last of a type wins), as they came after canonical(). */
function parts(data: Attr): Parts {
  const out: Parts = new Map();
  for (const a of parseAttrs(data.buf, data.off, data.off + data.len).all) out.set(a.type, Uint8Array.from(a.value));
  return out;
}

function be32(v: Uint8Array | undefined): number {
  return v && v.length >= 4 ? Buffer.from(v).readUInt32BE(0) : 0;
}

/** ordered writes the listed attribute types first, in that order, then the others in the order they came. */
function ordered(p: Parts, first: number[], drop: number[] = []): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const t of first) {
    const v = p.get(t);
    if (v) out.push(attr(t, v));
  }
  for (const [t, v] of p) if (!first.includes(t) && !drop.includes(t)) out.push(attr(t, v));
  return out;
}

function natLike(p: Parts, min: number, max: number, flagsType: number, flag: number): number {
  let flags = p.has(flagsType) ? be32(p.get(flagsType)) : 0;
  if (p.has(min)) {
    if (!p.has(max)) p.set(max, p.get(min)!);
    flags |= flag;
  }
  return flags;
}

function dumpData(name: string, p: Parts): Uint8Array[] | undefined {
  switch (name) {
    case 'counter':
      return [attr(1, p.get(1) ?? u64(0n)), attr(2, p.get(2) ?? u64(0n))];
    case 'bitwise':
      return ordered(p, [1, 2, 3, 6, 4, 5]);
    case 'ct':
      // A load names its destination register first, a set its source.
      return ordered(p, p.has(4) ? [4, 2, 3] : [1, 2, 3]);
    case 'lookup': {
      const out = ordered(p, [1, 2, 3], [4, 5]);
      out.push(attr(5, p.get(5) ?? u32(0)));
      return out;
    }
    case 'nat': {
      const flags = natLike(p, 3, 4, 7, NF_NAT_RANGE_MAP_IPS) | natLike(p, 5, 6, 7, NF_NAT_RANGE_PROTO_SPECIFIED);
      const out = ordered(p, [1, 2, 3, 4, 5, 6], [7]);
      if (flags !== 0) out.push(attr(7, u32(flags)));
      return out;
    }
    case 'redir': {
      const flags = natLike(p, 1, 2, 3, NF_NAT_RANGE_PROTO_SPECIFIED);
      const out = ordered(p, [1, 2], [3]);
      if (flags !== 0) out.push(attr(3, u32(flags)));
      return out;
    }
    default:
      return undefined;
  }
}

/** dumpExpressions is the NFTA_RULE_EXPRESSIONS payload the kernel would dump for the one a rule was sent with. */
export function dumpExpressions(sent: Uint8Array): Uint8Array {
  const bytes = canonical(sent);
  const list = parseAttrs(bytes, 0, bytes.length);
  const out: Uint8Array[] = [];
  for (const item of list.all) {
    const e = item.children().byType;
    const nameAttr = e.get(NFTA_EXPR.NAME);
    const data = e.get(NFTA_EXPR.DATA);
    const name = nameAttr ? Buffer.from(nameAttr.value).toString('latin1').replace(/\0.*$/s, '') : '';
    const rebuilt = data && nameAttr ? dumpData(name, parts(data)) : name === 'counter' && nameAttr ? dumpData(name, new Map()) : undefined;
    if (!rebuilt || !nameAttr) {
      out.push(attr(NFTA_LIST_ELEM, item.value));
      continue;
    }
    out.push(attr(NFTA_LIST_ELEM, Buffer.concat([attr(NFTA_EXPR.NAME, nameAttr.value), attr(NFTA_EXPR.DATA, Buffer.concat(rebuilt))])));
  }
  return Buffer.concat(out);
}
