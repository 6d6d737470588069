/**
 * The typed rule AST: one object per nf_tables expression podnet writes and lists, named and shaped as the kernel
 * has them (registers, lengths, data in the byte order the kernel compares). `nft --debug=netlink` prints the same
 * lists: `[ meta load l4proto => reg 1 ]` is `{ type: 'meta', key: 'l4proto', dreg: 1 }`. The helpers in match.ts
 * build the common matches; anything else can be written directly.
 */

/**
 * NftRegister is a register: 0 is the verdict register (verdicts only), 1..4 the 16-byte registers, 8..23 the 4-byte ones
 * (NFT_REG32_00..15). A value loaded into a register may run on into the next ones, up to the end of the 64 bytes.
 */
export type NftRegister = number;

/** NftPayloadBase is where a payload load starts: the link layer, the network header, the transport header, the inner header. */
export type NftPayloadBase = 'link' | 'network' | 'transport' | 'inner';

/** NftMetaKey: the meta keys podnet names (others stay numbers: NFT_META_*). */
export type NftMetaKey =
  | 'len'
  | 'protocol'
  | 'priority'
  | 'mark'
  | 'iif'
  | 'oif'
  | 'iifname'
  | 'oifname'
  | 'skuid'
  | 'skgid'
  | 'nfproto'
  | 'l4proto'
  | 'pkttype'
  | 'cgroup';

/** NftCtKey: the ct keys podnet names (others stay numbers: NFT_CT_*). */
export type NftCtKey = 'state' | 'direction' | 'status' | 'mark' | 'expiration' | 'l3protocol' | 'protocol' | 'zone';

/** NftCmpOp: cmp's comparisons (NFT_CMP_EQ..GTE). */
export type NftCmpOp = 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte';

/** NftData is bytes: a Buffer or Uint8Array when written, a Buffer when listed. */
export type NftData = Uint8Array;

/** NftPayloadExpr: `payload load LEN @ BASE + OFFSET => reg DREG`. */
export interface NftPayloadExpr {
  type: 'payload';
  base: NftPayloadBase;
  offset: number;
  len: number;
  dreg: NftRegister;
}

/** NftMetaExpr: `meta load KEY => reg DREG` (dreg), or `meta set KEY with reg SREG` (sreg): exactly one of them. */
export interface NftMetaExpr {
  type: 'meta';
  key: NftMetaKey | number;
  dreg?: NftRegister;
  sreg?: NftRegister;
}

/** NftCtExpr: `ct load KEY => reg DREG` (optionally of one direction), or `ct set KEY with reg SREG`. */
export interface NftCtExpr {
  type: 'ct';
  key: NftCtKey | number;
  dreg?: NftRegister;
  sreg?: NftRegister;
  direction?: 'original' | 'reply';
}

/** NftCmpExpr: `cmp OP reg SREG DATA`: compares the register's first data.length bytes. */
export interface NftCmpExpr {
  type: 'cmp';
  sreg: NftRegister;
  op: NftCmpOp;
  data: NftData;
}

/**
 * NftBitwiseExpr: `bitwise reg DREG = ( reg SREG & MASK ) ^ XOR` over len bytes (mask and xor are len bytes each). `op: 'bool'` names
 * the operation explicitly (NFTA_BITWISE_OP), as nft does for `&` and `|`; without it the kernel takes the same
 * (nft leaves it out for prefixes and flag tests). Listed bitwise expressions have no `op`.
 */
export interface NftBitwiseExpr {
  type: 'bitwise';
  sreg: NftRegister;
  dreg: NftRegister;
  len: number;
  mask: NftData;
  xor: NftData;
  op?: 'bool';
}

/** NftLookupExpr: `lookup reg SREG set SET`: the register is (or with invert, is not) an element of the named set. */
export interface NftLookupExpr {
  type: 'lookup';
  sreg: NftRegister;
  set: string;
  invert?: boolean;
}

/** NftImmediateExpr: `immediate reg DREG DATA`: loads a value (a port, a mark, an address) into a data register. */
export interface NftImmediateExpr {
  type: 'immediate';
  dreg: NftRegister;
  data: NftData;
}

/** NftVerdictExpr is a verdict (`immediate reg 0 ...`): jump and goto name their chain, the others none. */
export type NftVerdictExpr =
  | { type: 'verdict'; verdict: 'accept' | 'drop' | 'continue' | 'return' }
  | { type: 'verdict'; verdict: 'jump' | 'goto'; chain: string };

/** NftCounterExpr: `counter`, written without values (the kernel starts at 0), listed with what it has counted (numbers: exact up to 2^53). */
export interface NftCounterExpr {
  type: 'counter';
  packets?: number;
  bytes?: number;
}

/** NftRedirectExpr: `redir` to the port in register protoMin (to protoMax); flags NF_NAT_RANGE_* (nft writes 2, PROTO_SPECIFIED). */
export interface NftRedirectExpr {
  type: 'redirect';
  protoMin?: NftRegister;
  protoMax?: NftRegister;
  flags?: number;
}

/** NftNatExpr: `nat snat|dnat ip|ip6` to the address in register addrMin (to addrMax), the port in protoMin (to protoMax). */
export interface NftNatExpr {
  type: 'nat';
  nat: 'snat' | 'dnat';
  family: 'ip' | 'ip6';
  addrMin?: NftRegister;
  addrMax?: NftRegister;
  protoMin?: NftRegister;
  protoMax?: NftRegister;
  flags?: number;
}

/** NftMasqueradeExpr: `masq`, source NAT to the outgoing interface's address, optionally to the ports in protoMin..protoMax. */
export interface NftMasqueradeExpr {
  type: 'masquerade';
  protoMin?: NftRegister;
  protoMax?: NftRegister;
  flags?: number;
}

/**
 * NftRawExpr is an expression podnet does not decode (another name, or a form of a known one the AST has no field for): its name
 * and its NFTA_EXPR_DATA attributes as they were listed. Written back, the bytes go to the kernel unchanged.
 */
export interface NftRawExpr {
  type: 'raw';
  name: string;
  data: NftData;
}

/** NftExpr is one rule expression; the AST never throws, the checks run when a transaction takes a rule. */
export type NftExpr =
  | NftPayloadExpr
  | NftMetaExpr
  | NftCtExpr
  | NftCmpExpr
  | NftBitwiseExpr
  | NftLookupExpr
  | NftImmediateExpr
  | NftVerdictExpr
  | NftCounterExpr
  | NftRedirectExpr
  | NftNatExpr
  | NftMasqueradeExpr
  | NftRawExpr;
