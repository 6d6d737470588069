/**
 * Checks an entry against its set (type, family, extensions) before anything
 * is sent, and turns it into the fields of an entry record.
 */
import { invalidType, invalidValue } from '../validate.js';
import { isIpv4Mapped, parseIpv4, parseIpv6 } from '../address/index.js';
import type { IpsetEntry, IpsetProto } from './types.js';

/** What validation needs to know about a set. */
export interface SetShape {
  type: string;
  family: 4 | 6;
  comment: boolean;
  timeout: boolean;
}

/** Entry fields in record form (see native/ipset/record.h). */
export interface EntryFields {
  family: 4 | 6;
  ip: Uint8Array;
  cidr: number | undefined;
  port: number | undefined;
  proto: number | undefined;
  timeout: number | undefined;
  comment: string | undefined;
  /** UTF-8 length of comment (-1: not counted, the comment is short enough for any encoding). */
  commentBytes: number | undefined;
}

const PROTOS: Record<string, number> = { tcp: 6, udp: 17, sctp: 132, udplite: 136, icmp: 1, icmpv6: 58 };
const PROTO_NAMES = new Map(Object.entries(PROTOS).map(([k, v]) => [v, k as IpsetProto]));

/** protoName maps a protocol number back to its name where podnet knows one. */
export function protoName(n: number): IpsetProto {
  return PROTO_NAMES.get(n) ?? n;
}

// The fields each type takes, as predicates: comparing interned property names is cheaper than a Set lookup, and
// this runs for every key of every entry of a batch.
const ALLOWED: Record<string, (key: string) => boolean> = {
  'hash:ip': (k) => k === 'ip' || k === 'comment' || k === 'timeout',
  'hash:net': (k) => k === 'ip' || k === 'comment' || k === 'cidr' || k === 'timeout',
  'hash:ip,port': (k) => k === 'ip' || k === 'comment' || k === 'port' || k === 'proto' || k === 'timeout',
};

/** newFields returns an empty fields object of the one shape checkEntry fills (a stable shape keeps it monomorphic). */
export function newFields(): EntryFields {
  return { family: 4, ip: new Uint8Array(16), cidr: undefined, port: undefined, proto: undefined, timeout: undefined, comment: undefined, commentBytes: undefined };
}

// A comment's NUL and surrogate checks are loops over its char codes, not String.prototype builtins: a single add
// runs this between two kernel round trips, after which every page of code or data it touches is a TLB miss again
// (page-table isolation without PCID flushes the TLB on each syscall), and each builtin is code on pages of its
// own. Only a comment with a surrogate unit pays isWellFormed().
function hasNul(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) === 0) return true;
  return false;
}

function hasSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) if ((s.charCodeAt(i) & 0xf800) === 0xd800) return true;
  return false;
}

/** An entry's name in errors: a string, or a batch index (its label is built only when an error needs it). */
export type EntryLabel = string | number;

function labelOf(name: EntryLabel): string {
  return typeof name === 'number' ? `entries[${name}]` : name;
}

/**
 * checkEntry validates entry for set and returns its record fields. Throws InvalidArgumentError, sending nothing.
 * Batches pass a reused `out` (and an index as name) so that checking allocates nothing per entry; the fields are
 * then valid until the next call with the same `out`.
 */
export function checkEntry(entry: unknown, set: SetShape, label: EntryLabel = 'entry', out: EntryFields = newFields()): EntryFields {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw invalidType(labelOf(label), 'an entry object', entry);
  const e = entry as IpsetEntry;
  // Each field is read once, before anything is written: a getter can neither change a value between its check
  // and its use nor re-enter (an addSync) while the shared fields object is half written.
  const ip = e.ip;
  const cidrField = e.cidr;
  const port = e.port;
  const protoField = e.proto;
  const comment = e.comment;
  const timeout = e.timeout;
  const allowed = ALLOWED[set.type];
  if (!allowed) throw invalidValue(labelOf(label), `a set of a type podnet encodes (not '${set.type}')`, entry);
  const fieldsOf = e as unknown as Record<string, unknown>;
  for (const key in fieldsOf) {
    if (!allowed(key) && fieldsOf[key] !== undefined) {
      throw invalidValue(`${labelOf(label)}.${key}`, `no '${key}' field for a ${set.type} set`, fieldsOf[key]);
    }
  }
  if (typeof ip !== 'string') throw invalidType(`${labelOf(label)}.ip`, 'an IP address string', ip);

  // IPv4 fills the first 4 bytes of out.ip; the record carries only those for family 4.
  const bytes = out.ip;
  let cidr = cidrField;
  let family: 4 | 6;
  // A canonical dotted quad, the common entry, has neither a prefix nor a colon: parsed first, it needs no search
  // of the text for either, two string builtins per entry (see hasNul for why builtins count on this path).
  if (parseIpv4(ip, bytes)) {
    if (set.family === 6) throw invalidValue(`${labelOf(label)}.ip`, 'an IPv6 address for an inet6 set', ip);
    family = 4;
  } else {
    let text = ip;
    const slash = text.indexOf('/');
    if (slash >= 0) {
      if (set.type !== 'hash:net') throw invalidValue(`${labelOf(label)}.ip`, `an address without a prefix for a ${set.type} set`, ip);
      const suffix = text.slice(slash + 1);
      if (!/^(?:0|[1-9][0-9]{0,2})$/.test(suffix)) throw invalidValue(`${labelOf(label)}.ip`, 'an address with a decimal prefix length', ip);
      const fromText = Number(suffix);
      if (cidr !== undefined && cidr !== fromText) throw invalidValue(`${labelOf(label)}.cidr`, `the prefix length of ip (${fromText})`, cidr);
      cidr = fromText;
      text = text.slice(0, slash);
    }
    if (text.includes(':')) {
      const v6 = parseIpv6(text);
      if (!v6) throw invalidValue(`${labelOf(label)}.ip`, 'a valid IPv6 address (no zone id)', ip);
      if (set.family === 4) {
        const hint = isIpv4Mapped(v6) ? ' (IPv4-mapped addresses are not unmapped: pass the IPv4 address)' : '';
        throw invalidValue(`${labelOf(label)}.ip`, `an IPv4 address for an inet set${hint}`, ip);
      }
      bytes.set(v6);
      family = 6;
    } else {
      if (!parseIpv4(text, bytes)) throw invalidValue(`${labelOf(label)}.ip`, 'a valid IPv4 address (a.b.c.d, no leading zeros)', ip);
      if (set.family === 6) throw invalidValue(`${labelOf(label)}.ip`, 'an IPv6 address for an inet6 set', ip);
      family = 4;
    }
  }
  const fields = out;
  fields.family = family;
  fields.cidr = undefined;
  fields.port = undefined;
  fields.proto = undefined;
  fields.timeout = undefined;
  fields.comment = undefined;
  fields.commentBytes = undefined;

  if (cidr !== undefined) {
    const max = family === 4 ? 32 : 128;
    if (typeof cidr !== 'number' || !Number.isInteger(cidr) || cidr < 1 || cidr > max) {
      throw invalidValue(`${labelOf(label)}.cidr`, `an integer between 1 and ${max}`, cidr);
    }
    fields.cidr = cidr;
  }
  if (set.type === 'hash:ip,port') {
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) {
      throw invalidValue(`${labelOf(label)}.port`, 'an integer between 0 and 65535', port);
    }
    fields.port = port;
    const proto = protoField ?? 'tcp';
    const number = typeof proto === 'number' ? proto : PROTOS[proto];
    if (number === undefined || !Number.isInteger(number) || number < 0 || number > 255) {
      throw invalidValue(`${labelOf(label)}.proto`, `one of ${Object.keys(PROTOS).join(', ')} or a protocol number`, proto);
    }
    fields.proto = number;
  }
  if (comment !== undefined) {
    if (!set.comment) throw invalidValue(`${labelOf(label)}.comment`, 'no comment: the set was created without comment support', comment);
    if (typeof comment !== 'string') throw invalidType(`${labelOf(label)}.comment`, 'a string', comment);
    // A UTF-16 unit is at most 3 UTF-8 bytes: short comments need no byte count.
    const bytes = comment.length * 3 <= 255 ? -1 : Buffer.byteLength(comment, 'utf8');
    if (bytes > 255 || hasNul(comment)) {
      throw invalidValue(`${labelOf(label)}.comment`, 'a comment of at most 255 bytes without NUL', comment);
    }
    // The kernel would store a lone surrogate as U+FFFD: the entry's owner would read back as another pod.
    if (hasSurrogate(comment) && !comment.isWellFormed()) {
      throw invalidValue(`${labelOf(label)}.comment`, 'a comment without lone surrogates', comment);
    }
    fields.comment = comment;
    fields.commentBytes = bytes;
  }
  if (timeout !== undefined) {
    if (!set.timeout) throw invalidValue(`${labelOf(label)}.timeout`, 'no timeout: the set was created without a timeout', timeout);
    if (typeof timeout !== 'number' || !Number.isInteger(timeout) || timeout < 0 || timeout > 2147483) {
      throw invalidValue(`${labelOf(label)}.timeout`, 'an integer number of seconds between 0 and 2147483', timeout);
    }
    fields.timeout = timeout;
  }
  return fields;
}
