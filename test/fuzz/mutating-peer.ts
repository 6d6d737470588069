// MutatingPeer: a NetlinkPeer that wraps another (FakeIpsetKernel, FakeRtnetlink) and, while armed with a seeded
// generator, mutates the reply datagrams it passes back: bit flips, truncation (inside nlmsghdr and attribute
// headers too), bad nlmsg_len / nla_len, wrong seq and pid, NLMSG_ERROR with any errno, early NLMSG_DONE, garbage,
// dropped, duplicated, reordered, concatenated and split datagrams. Every mutation is recorded, so a finding names
// what was done; the same generator state replays it exactly (the harness derives it from seed and iteration).
import type { NetlinkPeer } from '../../lib/netlink/peer.js';

const NLMSG_HDRLEN = 16;
const NLMSG_NOOP = 1;
const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
const NLMSG_OVERRUN = 4;
const NLM_F_MULTI = 0x2;
const NLM_F_DUMP_INTR = 0x10;
const NLM_F_CAPPED = 0x100;
const NLM_F_ACK_TLVS = 0x200;
const NLA_F_NESTED = 0x8000;
const INT_MIN = -0x80000000;

/** One mutation as applied: what, where (exchange of the operation, datagram, byte offset) and with what. */
export interface MutationDetail {
  kind: string;
  datagram?: number;
  offset?: number;
  [detail: string]: unknown;
}

/** A mutation and the exchange of the armed operation (0: its first request) whose replies it changed. */
export type Mutation = MutationDetail & { exchange: number };

export interface MutatingPeerOptions {
  /** Bytes of the family's fixed header after nlmsghdr for a message of this type (nfgenmsg: 4, rtmsg: 12, ...). */
  fixedHeader: (type: number) => number;
  /** Message types the protocol answers with, for mutations that retype a message. */
  replyTypes: readonly number[];
  /** Chance that an exchange of an armed operation is mutated (default 0.7). */
  rate?: number;
}

type Rand = () => number;

const int = (rand: Rand, n: number) => Math.floor(rand() * n);
const pick = <T>(rand: Rand, list: readonly T[]): T => list[int(rand, list.length)]!;
const u32 = (rand: Rand) => (int(rand, 0x10000) * 0x10000 + int(rand, 0x10000)) >>> 0;

function view(d: Uint8Array): DataView {
  return new DataView(d.buffer, d.byteOffset, d.byteLength);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function randomBytes(rand: Rand, n: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = int(rand, 256);
  return b;
}

/** message builds one netlink message (payload padded to 4 bytes; nlmsg_len as given, or the real length). */
function message(type: number, flags: number, seq: number, pid: number, payload: Uint8Array, len?: number): Uint8Array {
  const total = NLMSG_HDRLEN + ((payload.length + 3) & ~3);
  const m = new Uint8Array(total);
  const v = view(m);
  v.setUint32(0, len ?? NLMSG_HDRLEN + payload.length, true);
  v.setUint16(4, type, true);
  v.setUint16(6, flags, true);
  v.setUint32(8, seq, true);
  v.setUint32(12, pid, true);
  m.set(payload, NLMSG_HDRLEN);
  return m;
}

function i32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  view(b).setInt32(0, n, true);
  return b;
}

/** Where the well-formed messages of a datagram start (the walk stops at the first bad nlmsg_len). */
export function messageOffsets(d: Uint8Array): number[] {
  const out: number[] = [];
  const v = view(d);
  let off = 0;
  while (off + NLMSG_HDRLEN <= d.length) {
    const len = v.getUint32(off, true);
    if (len < NLMSG_HDRLEN || len > d.length - off) break;
    out.push(off);
    off += (len + 3) & ~3;
  }
  return out;
}

/** Where attribute headers start in [start, end), nested ones too (a payload that parses whole as attributes). */
function attributeOffsets(d: Uint8Array, start: number, end: number, out: number[], depth = 0): void {
  const v = view(d);
  let off = start;
  while (off + 4 <= end) {
    const len = v.getUint16(off, true);
    if (len < 4 || off + len > end) return;
    out.push(off);
    const type = v.getUint16(off + 2, true);
    if (depth < 4 && len > 8 && ((type & NLA_F_NESTED) !== 0 || parsesAsAttributes(d, off + 4, off + len))) {
      attributeOffsets(d, off + 4, off + len, out, depth + 1);
    }
    off += (len + 3) & ~3;
  }
}

function parsesAsAttributes(d: Uint8Array, start: number, end: number): boolean {
  const v = view(d);
  let off = start;
  while (off + 4 <= end) {
    const len = v.getUint16(off, true);
    if (len < 4 || off + len > end) return false;
    off += (len + 3) & ~3;
  }
  return off >= end;
}

const ERRNOS = [
  0, -1, -2, -3, -12, -16, -17, -19, -22, -95, -105, -110, -4097, -4099, -4103, -4107, -4113, -4116, -0x7fff,
  -0xffff, -0x10000, INT_MIN, INT_MIN + 1, 0x7fffffff, 1, 2, 4103, 0xffff,
];

/**
 * MutatingPeer passes every exchange to its inner peer, and while armed mutates the replies of each exchange
 * with chance `rate`. Disarmed it is transparent. It never throws.
 */
export class MutatingPeer implements NetlinkPeer {
  readonly #inner: NetlinkPeer;
  readonly #fixed: (type: number) => number;
  readonly #replyTypes: readonly number[];
  readonly #rate: number;
  #rand: Rand | undefined;
  #exchanges = 0;
  #log: Mutation[] = [];

  constructor(inner: NetlinkPeer, options: MutatingPeerOptions) {
    this.#inner = inner;
    this.#fixed = options.fixedHeader;
    this.#replyTypes = options.replyTypes;
    this.#rate = options.rate ?? 0.7;
  }

  /** arm starts mutating with rand (a fresh log; exchanges counted from 0). */
  arm(rand: Rand): void {
    this.#rand = rand;
    this.#exchanges = 0;
    this.#log = [];
  }

  /** disarm stops mutating and returns what was done since arm(). */
  disarm(): Mutation[] {
    this.#rand = undefined;
    return this.#log;
  }

  /** The mutations of the armed operation so far. */
  get log(): readonly Mutation[] {
    return this.#log;
  }

  exchange(request: Uint8Array): Uint8Array[] {
    const replies = this.#inner.exchange(request);
    const rand = this.#rand;
    const exchange = this.#exchanges++;
    if (!rand || rand() >= this.#rate) return replies;
    const seq = request.length >= NLMSG_HDRLEN ? view(request).getUint32(8, true) : 0;
    const ds = replies.map((d) => Uint8Array.from(d));
    // Mostly one mutation, sometimes a few on top of each other.
    const count = rand() < 0.6 ? 1 : 2 + int(rand, 3);
    for (let i = 0; i < count; i++) this.#log.push({ ...this.#mutate(rand, ds, request, seq), exchange });
    return ds;
  }

  /** Applies one mutation to ds in place and describes it. */
  #mutate(rand: Rand, ds: Uint8Array[], request: Uint8Array, seq: number): MutationDetail {
    // Datagrams near the end (the ACK, NLMSG_DONE) and the first matter most; any one may be picked.
    const anyDatagram = () => (rand() < 0.3 ? ds.length - 1 : rand() < 0.3 ? 0 : int(rand, ds.length));
    const kinds = ds.length === 0 ? ['error', 'done', 'foreign', 'empty'] : MUTATIONS;
    const kind = pick(rand, kinds);
    switch (kind) {
      case 'bitflip': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        if (d.length === 0) return { kind: 'bitflip', datagram, skipped: 'empty datagram' };
        const offset = this.#someOffset(rand, d);
        const bit = int(rand, 8);
        d[offset]! ^= 1 << bit;
        return { kind, datagram, offset, bit };
      }
      case 'byte': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        if (d.length === 0) return { kind, datagram, skipped: 'empty datagram' };
        const offset = this.#someOffset(rand, d);
        const value = pick(rand, [0x00, 0xff, 0x7f, 0x80, 0x01, 0x04, 0x10, int(rand, 256)]);
        d[offset] = value;
        return { kind, datagram, offset, value };
      }
      case 'truncate': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const where = pick(rand, ['anywhere', 'nlmsghdr', 'attribute header', 'attribute']);
        let length = int(rand, d.length + 1);
        const msgs = messageOffsets(d);
        if (where === 'nlmsghdr' && msgs.length) length = pick(rand, msgs) + int(rand, NLMSG_HDRLEN);
        if (where.startsWith('attribute')) {
          const attrs = this.#attributes(d);
          if (attrs.length) length = pick(rand, attrs) + (where === 'attribute header' ? int(rand, 4) : 4 + int(rand, 8));
        }
        length = Math.min(length, d.length);
        ds[datagram] = d.slice(0, length);
        return { kind, datagram, where, length, of: d.length };
      }
      case 'nlmsg_len': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const msgs = messageOffsets(d);
        if (!msgs.length) return { kind, datagram, skipped: 'no message' };
        const offset = pick(rand, msgs);
        const v = view(d);
        const from = v.getUint32(offset, true);
        const rest = d.length - offset;
        const to = pick(rand, [0, 1, 4, 15, 16, 17, 19, 20, from - 1, from + 1, from + 4, rest, rest + 1, rest + 4, 0xffff, 0x7fffffff, 0xffffffff, u32(rand)]) >>> 0;
        v.setUint32(offset, to, true);
        return { kind, datagram, offset, from, to };
      }
      case 'nla_len': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const attrs = this.#attributes(d);
        if (!attrs.length) return { kind, datagram, skipped: 'no attribute' };
        const offset = pick(rand, attrs);
        const v = view(d);
        const from = v.getUint16(offset, true);
        const to = pick(rand, [0, 1, 2, 3, 4, 5, 8, from - 1, from + 1, from + 4, 0x8000, 0xfffc, 0xffff, int(rand, 0x10000)]) & 0xffff;
        v.setUint16(offset, to, true);
        return { kind, datagram, offset, from, to };
      }
      case 'string': {
        // A NUL-terminated text attribute (a set, type or link name, a comment) emptied, or left without its NUL.
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const v = view(d);
        const strings = this.#attributes(d).filter((at) => {
          const len = v.getUint16(at, true);
          return len > 5 && d[at + len - 1] === 0 && d.subarray(at + 4, at + len - 1).every((c) => c >= 0x20 && c < 0x7f);
        });
        if (!strings.length) return { kind, datagram, skipped: 'no string' };
        const offset = pick(rand, strings);
        const len = v.getUint16(offset, true);
        const how = pick(rand, ['empty', 'unterminated', 'longer']);
        if (how === 'empty') d[offset + 4] = 0;
        else if (how === 'unterminated') d.fill(0x78, offset + 4 + len - 5, offset + ((len + 3) & ~3));
        else {
          // The NUL and the padding become text, and nla_len covers them: a name up to 3 bytes longer.
          const room = ((len + 3) & ~3) - len;
          d.fill(0x78, offset + len - 1, offset + len + room);
          if (room > 0) v.setUint16(offset, len + room, true);
          d[offset + len + room - 1] = 0;
        }
        return { kind, datagram, offset, how };
      }
      case 'seq': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const msgs = messageOffsets(d);
        if (!msgs.length) return { kind, datagram, skipped: 'no message' };
        const offset = pick(rand, msgs);
        // Never a seq a later request of the same session will use: a forged answer to a future request is not
        // something a client can tell from the real one, and would only make the follow-up check fail.
        const to = pick(rand, [seq - 1, seq - 2, 0, seq ^ 0x80000000, 0xffffffff, (u32(rand) | 0x80000000) >>> 0]) >>> 0;
        view(d).setUint32(offset + 8, to, true);
        return { kind, datagram, offset, to };
      }
      case 'pid': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const msgs = messageOffsets(d);
        if (!msgs.length) return { kind, datagram, skipped: 'no message' };
        const offset = pick(rand, msgs);
        const to = pick(rand, [0, 1, 0xffffffff, u32(rand)]);
        view(d).setUint32(offset + 12, to, true);
        return { kind, datagram, offset, to };
      }
      case 'type': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const msgs = messageOffsets(d);
        if (!msgs.length) return { kind, datagram, skipped: 'no message' };
        const offset = pick(rand, msgs);
        const v = view(d);
        const from = v.getUint16(offset + 4, true);
        const to = pick(rand, [0, NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE, NLMSG_OVERRUN, 15, from ^ 1, int(rand, 0x10000), ...this.#replyTypes]);
        v.setUint16(offset + 4, to, true);
        return { kind, datagram, offset, from, to };
      }
      case 'flags': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const msgs = messageOffsets(d);
        if (!msgs.length) return { kind, datagram, skipped: 'no message' };
        const offset = pick(rand, msgs);
        const v = view(d);
        const from = v.getUint16(offset + 6, true);
        const to = pick(rand, [from ^ NLM_F_MULTI, from | NLM_F_DUMP_INTR, from ^ NLM_F_CAPPED, from ^ NLM_F_ACK_TLVS, from | NLM_F_CAPPED | NLM_F_ACK_TLVS, 0, 0xffff, int(rand, 0x10000)]);
        v.setUint16(offset + 6, to, true);
        return { kind, datagram, offset, from, to };
      }
      case 'error': {
        const errno = pick(rand, [...ERRNOS, u32(rand) | 0]);
        const payload = pick(rand, ['none', 'echo', 'echo header', 'garbage', 'short', 'ext ack', 'ext ack capped', 'bad ext ack']);
        const flags = payload.startsWith('ext ack') || payload === 'bad ext ack' ? NLM_F_ACK_TLVS | (payload.endsWith('capped') ? NLM_F_CAPPED : 0) : 0;
        const m = this.#errorMessage(rand, NLMSG_ERROR, flags, seq, errno, payload, request);
        const placement = this.#place(rand, ds, m);
        return { kind, errno, payload, flags, ...placement };
      }
      case 'done': {
        const payload = pick(rand, ['none', 'zero', 'errno', 'garbage', 'short']);
        const errno = payload === 'errno' ? pick(rand, [...ERRNOS, u32(rand) | 0]) : 0;
        const m = this.#errorMessage(rand, NLMSG_DONE, NLM_F_MULTI, seq, errno, payload, request);
        const placement = this.#place(rand, ds, m);
        return { kind, errno, payload, ...placement };
      }
      case 'foreign': {
        const type = pick(rand, [NLMSG_NOOP, NLMSG_ERROR, NLMSG_DONE, ...this.#replyTypes]);
        const foreignSeq = pick(rand, [seq - 1, 0, (u32(rand) | 0x80000000) >>> 0]) >>> 0;
        const m = message(type, int(rand, 0x10000), foreignSeq, u32(rand), randomBytes(rand, int(rand, 48)));
        const placement = this.#place(rand, ds, m);
        return { kind, type, seq: foreignSeq, ...placement };
      }
      case 'empty': {
        const datagram = int(rand, ds.length + 1);
        const bytes = int(rand, 20) < 10 ? 0 : 1 + int(rand, 19);
        ds.splice(datagram, 0, randomBytes(rand, bytes));
        return { kind, datagram, bytes };
      }
      case 'garbage': {
        const datagram = anyDatagram();
        const bytes = 1 + int(rand, 24);
        ds[datagram] = concat([ds[datagram]!, randomBytes(rand, bytes)]);
        return { kind, datagram, bytes };
      }
      case 'drop': {
        if (rand() < 0.15) {
          const dropped = ds.length;
          ds.length = 0;
          return { kind: 'drop all', dropped };
        }
        const datagram = anyDatagram();
        ds.splice(datagram, 1);
        return { kind, datagram };
      }
      case 'duplicate': {
        const datagram = anyDatagram();
        const to = int(rand, ds.length + 1);
        ds.splice(to, 0, Uint8Array.from(ds[datagram]!));
        return { kind, datagram, to };
      }
      case 'reorder': {
        if (ds.length < 2) return { kind, skipped: 'one datagram' };
        const how = pick(rand, ['swap', 'reverse', 'last first']);
        if (how === 'reverse') ds.reverse();
        else if (how === 'last first') ds.unshift(ds.pop()!);
        else {
          const i = int(rand, ds.length);
          const j = int(rand, ds.length);
          [ds[i], ds[j]] = [ds[j]!, ds[i]!];
          return { kind, how, datagram: i, with: j };
        }
        return { kind, how };
      }
      case 'concat': {
        if (ds.length < 2) return { kind, skipped: 'one datagram' };
        const datagram = int(rand, ds.length - 1);
        const pad = rand() < 0.7 ? 0 : 1 + int(rand, 3);
        ds.splice(datagram, 2, concat([ds[datagram]!, new Uint8Array(pad), ds[datagram + 1]!]));
        return { kind, datagram, pad };
      }
      case 'split': {
        const datagram = anyDatagram();
        const d = ds[datagram]!;
        const msgs = messageOffsets(d);
        if (msgs.length < 2) return { kind, datagram, skipped: 'one message' };
        const at = msgs[1 + int(rand, msgs.length - 1)]!;
        ds.splice(datagram, 1, d.slice(0, at), d.slice(at));
        return { kind, datagram, offset: at };
      }
      default:
        throw new Error(`unknown mutation ${kind}`);
    }
  }

  /** A byte offset to mutate: half the time inside a message's nlmsghdr or the error code after it. */
  #someOffset(rand: Rand, d: Uint8Array): number {
    const msgs = messageOffsets(d);
    if (msgs.length && rand() < 0.5) return Math.min(d.length - 1, pick(rand, msgs) + int(rand, NLMSG_HDRLEN + 4));
    const attrs = this.#attributes(d);
    if (attrs.length && rand() < 0.5) return Math.min(d.length - 1, pick(rand, attrs) + int(rand, 8));
    return int(rand, d.length);
  }

  /** Offsets of every attribute header of every message of d (extended-ACK TLVs of NLMSG_ERROR included). */
  #attributes(d: Uint8Array): number[] {
    const out: number[] = [];
    const v = view(d);
    for (const off of messageOffsets(d)) {
      const len = v.getUint32(off, true);
      const type = v.getUint16(off + 4, true);
      const flags = v.getUint16(off + 6, true);
      let start: number;
      if (type === NLMSG_ERROR) {
        if (!(flags & NLM_F_ACK_TLVS) || len < NLMSG_HDRLEN + 4 + NLMSG_HDRLEN) continue;
        const echoed = v.getUint32(off + NLMSG_HDRLEN + 4, true);
        start = off + NLMSG_HDRLEN + 4 + (flags & NLM_F_CAPPED ? NLMSG_HDRLEN : Math.ceil(echoed / 4) * 4);
      } else if (type < 0x10) {
        continue;
      } else {
        start = off + NLMSG_HDRLEN + ((this.#fixed(type) + 3) & ~3);
      }
      if (start < off + len) attributeOffsets(d, start, off + len, out);
    }
    return out;
  }

  /** An NLMSG_ERROR or NLMSG_DONE for seq with the given code and payload. */
  #errorMessage(rand: Rand, type: number, flags: number, seq: number, code: number, payload: string, request: Uint8Array): Uint8Array {
    const pid = 0;
    const echoLen = Math.min(request.length, request.length >= 4 ? view(request).getUint32(0, true) : 0);
    switch (payload) {
      case 'none':
        return type === NLMSG_DONE ? message(type, flags, seq, pid, new Uint8Array(0)) : message(type, flags, seq, pid, i32(code));
      case 'zero':
        return message(type, flags, seq, pid, i32(0));
      case 'errno':
        return message(type, flags, seq, pid, i32(code));
      case 'echo':
        return message(type, flags, seq, pid, concat([i32(code), request.slice(0, echoLen)]));
      case 'echo header':
        return message(type, flags, seq, pid, concat([i32(code), request.slice(0, NLMSG_HDRLEN)]));
      case 'garbage':
        return message(type, flags, seq, pid, concat([i32(code), randomBytes(rand, 1 + int(rand, 64))]));
      case 'short': {
        // nlmsg_len says 16..19 bytes: the code is cut.
        const m = message(type, flags, seq, pid, i32(code));
        view(m).setUint32(0, NLMSG_HDRLEN + int(rand, 4), true);
        return m;
      }
      case 'ext ack':
      case 'ext ack capped':
      case 'bad ext ack': {
        const echo = payload === 'ext ack' ? request.slice(0, echoLen) : request.slice(0, NLMSG_HDRLEN);
        const text = new TextEncoder().encode(pick(rand, ['Nexthop device is not up', 'x'.repeat(int(rand, 300)), '\u00ff\u1234']));
        const nul = rand() < 0.8 ? 1 : 0;
        const msg = new Uint8Array(4 + ((text.length + nul + 3) & ~3));
        view(msg).setUint16(0, 4 + text.length + nul, true);
        view(msg).setUint16(2, 1, true); // NLMSGERR_ATTR_MSG
        msg.set(text, 4);
        const offs = new Uint8Array(8);
        view(offs).setUint16(0, 8, true);
        view(offs).setUint16(2, 2, true); // NLMSGERR_ATTR_OFFS
        view(offs).setUint32(4, u32(rand), true);
        const tlvs = payload === 'bad ext ack' ? randomBytes(rand, 1 + int(rand, 16)) : concat([msg, offs]);
        const m = message(type, flags, seq, pid, concat([i32(code), echo, tlvs]));
        // The echoed header's own nlmsg_len sometimes lies (the codec skips the echo by it).
        if (payload === 'bad ext ack' && m.length >= NLMSG_HDRLEN + 8) view(m).setUint32(NLMSG_HDRLEN + 4, pick(rand, [0, 3, 0xffffffff, u32(rand)]), true);
        return m;
      }
      default:
        throw new Error(`unknown payload ${payload}`);
    }
  }

  /** Puts m somewhere: a datagram of its own (first, last, in between), or appended to or replacing one. */
  #place(rand: Rand, ds: Uint8Array[], m: Uint8Array): Record<string, unknown> {
    const how = ds.length === 0 ? 'insert' : pick(rand, ['insert', 'insert', 'replace', 'append', 'prepend']);
    const datagram = how === 'insert' ? pick(rand, [0, ds.length, int(rand, ds.length + 1)]) : int(rand, ds.length);
    if (how === 'insert') ds.splice(datagram, 0, m);
    else if (how === 'replace') ds[datagram] = m;
    else if (how === 'append') ds[datagram] = concat([ds[datagram]!, m]);
    else ds[datagram] = concat([m, ds[datagram]!]);
    return { placement: how, datagram, bytes: m.length };
  }
}

const MUTATIONS = [
  'bitflip', 'bitflip', 'byte', 'truncate', 'truncate', 'nlmsg_len', 'nlmsg_len', 'nla_len', 'nla_len', 'nla_len',
  'string', 'string', 'seq', 'pid', 'type', 'flags', 'error', 'error', 'error', 'done', 'done', 'foreign', 'empty', 'garbage', 'drop',
  'drop', 'duplicate', 'duplicate', 'reorder', 'concat', 'split',
];

/** nfnetlink (ipset): every message carries a 4-byte nfgenmsg. */
export const ipsetLayout: MutatingPeerOptions = {
  fixedHeader: () => 4,
  replyTypes: [(6 << 8) | 1, (6 << 8) | 7, (6 << 8) | 13, (6 << 8) | 14],
};

/** NETLINK_ROUTE: ifinfomsg (16), ifaddrmsg (8), rtmsg and fib_rule_hdr (12). */
export const rtnetlinkLayout: MutatingPeerOptions = {
  fixedHeader: (type) => (type >= 16 && type < 20 ? 16 : type >= 20 && type < 24 ? 8 : 12),
  replyTypes: [16, 20, 24, 32],
};
