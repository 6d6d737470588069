/** The kernel's numbers behind the rule AST's names (linux/netfilter/nf_tables.h), both ways. */
import type { NftCmpOp, NftCtKey, NftMetaKey, NftPayloadBase } from './expr-types.js';

export const PAYLOAD_BASES: Readonly<Record<NftPayloadBase, number>> = { link: 0, network: 1, transport: 2, inner: 3 };
export const META_KEYS: Readonly<Record<NftMetaKey, number>> = {
  len: 0,
  protocol: 1,
  priority: 2,
  mark: 3,
  iif: 4,
  oif: 5,
  iifname: 6,
  oifname: 7,
  skuid: 10,
  skgid: 11,
  nfproto: 15,
  l4proto: 16,
  pkttype: 19,
  cgroup: 23,
};
export const CT_KEYS: Readonly<Record<NftCtKey, number>> = {
  state: 0,
  direction: 1,
  status: 2,
  mark: 3,
  expiration: 5,
  l3protocol: 7,
  protocol: 10,
  zone: 17,
};
export const CMP_OPS: Readonly<Record<NftCmpOp, number>> = { eq: 0, neq: 1, lt: 2, lte: 3, gt: 4, gte: 5 };
/** Verdict codes: NF_DROP, NF_ACCEPT, then NFT_CONTINUE.. as negative numbers. */
export const VERDICTS = { drop: 0, accept: 1, continue: -1, jump: -3, goto: -4, return: -5 } as const;
export const CT_DIRECTIONS = { original: 0, reply: 1 } as const;
export const NAT_TYPES = { snat: 0, dnat: 1 } as const;
export const NAT_FAMILIES = { ip: 2, ip6: 10 } as const;
/** NFT_LOOKUP_F_INV. */
export const LOOKUP_INVERT = 1;
/** NFT_BITWISE_BOOL: mask and xor (the shifts are listed raw). */
export const BITWISE_BOOL = 0;
/** The kernel's register file: 16 bytes of verdict, then 64 bytes of data (struct nft_regs). */
export const REG_DATA_BYTES = 80;

/** reverse maps a table of names to numbers back from the numbers to the names. */
export function reverse<K extends string>(table: Readonly<Record<K, number>>): Map<number, K> {
  return new Map(Object.entries(table).map(([k, v]) => [v as number, k as K]));
}

/** NAMES_OF maps the kernel's numbers back to the AST's names, for listings. */
export const NAMES_OF = {
  base: reverse(PAYLOAD_BASES),
  metaKey: reverse(META_KEYS),
  ctKey: reverse(CT_KEYS),
  cmpOp: reverse(CMP_OPS),
  verdict: reverse(VERDICTS),
  direction: reverse(CT_DIRECTIONS),
  natType: reverse(NAT_TYPES),
  natFamily: reverse(NAT_FAMILIES),
} as const;
