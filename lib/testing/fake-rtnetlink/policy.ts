/**
 * Attribute policies of the requests the fake parses, and the kernel's validate_nla over them in liberal
 * ("deprecated") mode: an attribute of an unknown type or past the policy is ignored, a truncated tail is ignored,
 * and the first attribute that fails gets the kernel's errno, message, offset and policy TLV.
 *
 * The tables were read off a 6.18 kernel by sending every attribute type with payloads of many lengths and contents
 * (test/fake-rtnetlink/policy.test.ts repeats that probe against the kernel and the fake). Each entry is
 * `kind[>=min][<=max][&mask][~][!]`: `~` means the kernel reports no NLMSGERR_ATTR_POLICY for it, `!` that the type
 * is at or past the policy's strict_start_type (exact integer lengths, no untyped attributes).
 */
import { type AttrList, type KernelError, type NlMsg, attrOffset, parseAttrs } from './codec.js';
import { ERRNO } from './constants.js';

/** PolicySet names the policy a request is parsed with. */
export type PolicySet = 'route4' | 'route6' | 'rule' | 'link';

const RULE = {
  3: 'str:15', 4: 'u32', 6: 'u32', 10: 'u32', 11: 'u32', 12: 'u64', 13: 'u32', 14: 'u32', 15: 'u32', 16: 'u32',
  17: 'str:15', 19: 'u8', 20: 'min:8', 21: 'u8', 22: 'u8', 23: 'min:4', 24: 'min:4', 25: 'u8<=63!', 26: 'u32~!',
  27: 'u32~!', 28: 'u16!', 29: 'u16!', 30: 'u8&63!',
};

const TABLES: Record<PolicySet, { max: number; attrs: Record<number, string> }> = {
  // rtm_ipv4_policy
  route4: {
    max: 31,
    attrs: {
      1: 'u32', 2: 'u32', 3: 'u32', 4: 'u32', 5: 'u32', 6: 'u32', 7: 'u32', 8: 'nest', 9: 'min:8', 11: 'u32',
      15: 'u32', 16: 'u32', 21: 'u16', 22: 'nest', 25: 'u32', 27: 'u8', 28: 'u16', 29: 'u16', 30: 'u32!',
      31: 'unsupported',
    },
  },
  // rtm_ipv6_policy: RTA_DST and RTA_SRC are not in it (their length is checked against the prefix length later).
  route6: {
    max: 31,
    attrs: {
      3: 'u32', 4: 'u32', 5: 'min:16', 6: 'u32', 7: 'min:16', 8: 'nest', 9: 'min:8', 15: 'u32', 16: 'u32', 20: 'u8',
      21: 'u16', 22: 'nest', 23: 'u32', 25: 'u32', 27: 'u8', 28: 'u16', 29: 'u16', 30: 'u32!', 31: 'u32~!',
    },
  },
  // fib_rule_policy, the same for both families
  rule: { max: 30, attrs: RULE },
  // ifla_policy
  link: {
    max: 69,
    attrs: {
      1: 'bin:32', 2: 'bin:32', 3: 'str:15', 4: 'u32', 5: 'u32', 10: 'u32', 13: 'u32', 14: 'min:32', 15: 'u32',
      16: 'u8', 17: 'u8', 18: 'nest', 19: 'u32', 20: 'bin:255', 22: 'nest', 24: 'nest', 25: 'nest', 26: 'nest',
      27: 'u32', 28: 'u32', 29: 'u32', 30: 'u32', 31: 'u32', 32: 'u32', 33: 'u8', 34: 'bin:32', 35: 'u32',
      36: 'bin:32', 37: 's32', 39: 'u8', 40: 'u32', 41: 'u32>=193', 43: 'nest', 44: 'u32', 46: 's32', 47: 'u32',
      48: 'u32', 49: 's32>=1', 50: 'u32', 51: 'u32', 52: 'nest', 53: 'str:127', 54: 'reject', 55: 'nest',
      56: 'nulstr', 58: 'u32', 59: 'reject', 60: 'reject', 61: 'reject', 63: 'u32>=193', 64: 'u32',
      65: 'unsupported', 66: 'unsupported', 67: 'reject', 68: 'reject', 69: 'reject',
    },
  },
};

type Kind = 'u8' | 'u16' | 'u32' | 'u64' | 's32' | 'str' | 'nulstr' | 'bin' | 'min' | 'nest' | 'reject' | 'unsupported';

interface Desc {
  kind: Kind;
  size: number;
  len: number;
  min: bigint | undefined;
  max: bigint | undefined;
  mask: bigint | undefined;
  strict: boolean;
  policy: Uint8Array | undefined;
}

// NL_POLICY_TYPE_ATTR_* and NL_ATTR_TYPE_* (linux/netlink.h), for the NLMSGERR_ATTR_POLICY nest.
const PT_TYPE = 1;
const PT_MIN_S = 2;
const PT_MAX_S = 3;
const PT_MIN_U = 4;
const PT_MAX_U = 5;
const PT_MAX_LENGTH = 7;
const PT_MASK = 12;
const TYPE_CODE: Partial<Record<Kind, number>> = {
  u8: 2,
  u16: 3,
  u32: 4,
  u64: 5,
  s32: 8,
  bin: 10,
  str: 11,
  nulstr: 12,
  nest: 13,
};
const SIZE: Partial<Record<Kind, number>> = { u8: 1, u16: 2, u32: 4, u64: 8, s32: 4 };

function tlv(type: number, value: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt16LE(4 + value.length, 0);
  head.writeUInt16LE(type, 2);
  return Buffer.concat([head, value, Buffer.alloc((4 - (value.length % 4)) % 4)]);
}

function u32v(v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
}

function u64v(v: bigint, signed: boolean): Buffer {
  const b = Buffer.alloc(8);
  if (signed) b.writeBigInt64LE(v);
  else b.writeBigUInt64LE(v);
  return b;
}

/** policyBytes is what netlink_policy_dump_write_attr writes for d, as the kernel attaches it to an error. */
function policyBytes(d: Omit<Desc, 'policy'>, noPolicy: boolean): Uint8Array | undefined {
  const code = TYPE_CODE[d.kind];
  if (noPolicy || code === undefined) return undefined;
  const parts: Buffer[] = [];
  const size = SIZE[d.kind];
  if (size !== undefined && d.mask !== undefined) {
    parts.push(tlv(PT_MASK, u64v(d.mask, false)));
  } else if (size !== undefined) {
    const signed = d.kind === 's32';
    const lo = d.min ?? (signed ? -(1n << BigInt(size * 8 - 1)) : 0n);
    const hi = d.max ?? (signed ? (1n << BigInt(size * 8 - 1)) - 1n : (1n << BigInt(size * 8)) - 1n);
    parts.push(tlv(signed ? PT_MIN_S : PT_MIN_U, u64v(lo, signed)), tlv(signed ? PT_MAX_S : PT_MAX_U, u64v(hi, signed)));
  } else if (d.len > 0) {
    parts.push(tlv(PT_MAX_LENGTH, u32v(d.len)));
  }
  parts.push(tlv(PT_TYPE, u32v(code)));
  return Buffer.concat(parts);
}

function parseDesc(spec: string): Desc {
  const m = /^([a-z0-9]+)(?::(\d+))?(?:>=(\d+))?(?:<=(\d+))?(?:&(\d+))?(~)?(!)?$/.exec(spec);
  if (!m) throw new Error(`fake-rtnetlink: bad policy entry ${spec}`);
  const kind = m[1] as Kind;
  const d = {
    kind,
    size: SIZE[kind] ?? 0,
    len: Number(m[2] ?? 0),
    min: m[3] === undefined ? undefined : BigInt(m[3]),
    max: m[4] === undefined ? undefined : BigInt(m[4]),
    mask: m[5] === undefined ? undefined : BigInt(m[5]),
    strict: m[7] !== undefined,
  };
  return { ...d, policy: policyBytes(d, m[6] !== undefined) };
}

const PARSED: Record<PolicySet, { max: number; attrs: Map<number, Desc> }> = Object.fromEntries(
  Object.entries(TABLES).map(([name, t]) => [
    name,
    { max: t.max, attrs: new Map(Object.entries(t.attrs).map(([k, v]) => [Number(k), parseDesc(v)])) },
  ]),
) as Record<PolicySet, { max: number; attrs: Map<number, Desc> }>;

const FAILED = 'Attribute failed policy validation';

function readInt(payload: Uint8Array, size: number, signed: boolean): bigint {
  const b = Buffer.from(payload.buffer, payload.byteOffset, size);
  if (size === 1) return BigInt(b.readUInt8(0));
  if (size === 2) return BigInt(b.readUInt16LE(0));
  if (size === 4) return BigInt(signed ? b.readInt32LE(0) : b.readUInt32LE(0));
  return b.readBigUInt64LE(0);
}

/** check runs validate_nla for one attribute: undefined when it passes, else the error without its offset. */
function check(d: Desc, payload: Uint8Array): KernelError | undefined {
  const n = payload.length;
  const bad = (errno: number = ERRNO.ERANGE, msg = FAILED, policy = d.policy): KernelError =>
    policy === undefined ? { errno, msg } : { errno, msg, policy };
  if (d.kind === 'unsupported') return { errno: ERRNO.EINVAL, msg: 'Unsupported attribute' };
  if (d.kind === 'reject') return { errno: ERRNO.EINVAL, msg: FAILED };
  if (d.size > 0 && d.strict && n !== d.size) return bad(ERRNO.EINVAL, 'invalid attribute length');
  switch (d.kind) {
    case 'nulstr': {
      const window = d.len > 0 ? Math.min(n, d.len + 1) : n;
      if (window === 0 || !payload.subarray(0, window).includes(0)) return bad(ERRNO.EINVAL);
      if (d.len > 0 && (payload[n - 1] === 0 ? n - 1 : n) > d.len) return bad();
      return undefined;
    }
    case 'str':
      if (n < 1) return bad();
      if (d.len > 0 && (payload[n - 1] === 0 ? n - 1 : n) > d.len) return bad();
      return undefined;
    case 'bin':
      return d.len > 0 && n > d.len ? bad() : undefined;
    case 'nest':
      return n > 0 && n < 4 ? bad() : undefined;
    case 'min':
      return n < d.len ? bad() : undefined;
    default:
      break;
  }
  if (n < d.size) return bad();
  const v = readInt(payload, d.size, d.kind === 's32');
  if ((d.min !== undefined && v < d.min) || (d.max !== undefined && v > d.max)) return bad(ERRNO.ERANGE, 'integer out of range');
  if (d.mask !== undefined && (v & ~d.mask) !== 0n) return { errno: ERRNO.EINVAL, msg: 'reserved bit set' };
  return undefined;
}

/** ParseResult is a request's attributes after policy checks, or the kernel's error for the first bad one. */
export type ParseResult = { ok: true; attrs: AttrList } | { ok: false; error: KernelError };

/**
 * parseRequest parses the attributes after a fixed header of hdrlen bytes and validates them with the named policy,
 * as nlmsg_parse_deprecated does. It never throws: the caller has checked that the header fits.
 */
export function parseRequest(msg: NlMsg, hdrlen: number, set: PolicySet): ParseResult {
  const attrs = parseAttrs(msg.bytes, 16 + hdrlen, msg.len);
  const table = PARSED[set];
  for (const a of attrs.all) {
    if (a.type === 0 || a.type > table.max) continue;
    const d = table.attrs.get(a.type);
    if (d === undefined) continue;
    const e = check(d, a.value);
    if (e) return { ok: false, error: { ...e, offset: attrOffset(a) } };
  }
  return { ok: true, attrs };
}
