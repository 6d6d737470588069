/**
 * Read-only snapshots of the fake kernel's state for assertions: plain frozen objects, never the live model.
 */
import { formatAddr } from '../netlink-kernel/address.js';
import { AF_INET } from './constants.js';
import { type Entry, type SetState, type TypeName, isExpired, remainingSeconds } from './model.js';

/** FakeEntrySnapshot is one live entry. Fields that the set type or its extensions lack are absent. */
export interface FakeEntrySnapshot {
  /** The address in text form (IPv6 compressed), network-masked for hash:net. */
  readonly ip: string;
  /** Prefix length (hash:net only). */
  readonly cidr?: number;
  /** Port, or ICMP type << 8 | code, and the IP protocol number (hash:ip,port only). */
  readonly port?: number;
  /** The IP protocol number of the port (6 tcp, 17 udp; hash:ip,port only). */
  readonly proto?: number;
  /** True for a hash:net nomatch entry. */
  readonly nomatch?: boolean;
  /** Seconds left as the kernel would report it (0 = permanent); only in sets with timeouts. */
  readonly timeout?: number;
  /** Byte counter (sets with counters only). */
  readonly bytes?: bigint;
  /** Packet counter (sets with counters only). */
  readonly packets?: bigint;
  /** The entry's comment (sets with comments only; absent when the entry has none). */
  readonly comment?: string;
}

/** FakeSetOptions are the creation parameters the kernel reports in a set's header. */
export interface FakeSetOptions {
  /** The hash size the set was created with (rounded up to a power of two, as the kernel does). */
  readonly hashsize: number;
  /** The most entries the set takes. */
  readonly maxelem: number;
  /** The bucket size the kernel reports in the header. */
  readonly bucketsize: number;
  /** Default timeout in seconds; absent when the set has no timeout extension. */
  readonly timeout?: number;
  /** Whether entries have packet and byte counters. */
  readonly counters: boolean;
  /** Whether entries may have comments. */
  readonly comment: boolean;
  /** Whether an add into a full set evicts a random entry instead of failing. */
  readonly forceadd: boolean;
  /** Whether entries carry skbinfo (mark, priority, queue). */
  readonly skbinfo: boolean;
}

/** FakeSetSnapshot is one set: its header and its live entries in insertion order. */
export interface FakeSetSnapshot {
  /** The set's name. */
  readonly name: string;
  /** The kernel's index of the set (the order sets are listed in). */
  readonly index: number;
  /** The set type. */
  readonly type: TypeName;
  /** The address family. */
  readonly family: 'inet' | 'inet6';
  /** The type revision the set was created with. */
  readonly revision: number;
  /** How many iptables rules (or other sets) reference it; a referenced set cannot be destroyed. */
  readonly references: number;
  /** The creation parameters. */
  readonly options: FakeSetOptions;
  /** The live entries, in insertion order. */
  readonly entries: readonly FakeEntrySnapshot[];
}

/** FakeIpsetSnapshot is the whole ipset state, sets in index order (the order of a dump of all sets). */
export interface FakeIpsetSnapshot {
  /** Every set, in index order. */
  readonly sets: readonly FakeSetSnapshot[];
}

function entrySnapshot(set: SetState, e: Entry, now: number): FakeEntrySnapshot {
  const out: { -readonly [K in keyof FakeEntrySnapshot]: FakeEntrySnapshot[K] } = { ip: formatAddr(e.addr) };
  if (set.type === 'hash:net') {
    out.cidr = e.cidr;
    if (e.nomatch) out.nomatch = true;
  }
  if (set.type === 'hash:ip,port') {
    out.port = e.port;
    out.proto = e.proto;
  }
  if (set.timeout !== undefined) out.timeout = remainingSeconds(e, now);
  if (set.counters) {
    out.bytes = e.bytes;
    out.packets = e.packets;
  }
  if (e.comment !== undefined) out.comment = e.comment;
  return Object.freeze(out);
}

/** setSnapshot copies set into frozen plain objects, leaving out entries expired at now. */
export function setSnapshot(set: SetState, now: number): FakeSetSnapshot {
  const options: { -readonly [K in keyof FakeSetOptions]: FakeSetOptions[K] } = {
    hashsize: set.hashsize,
    maxelem: set.maxelem,
    bucketsize: set.bucketsize,
    counters: set.counters,
    comment: set.comment,
    forceadd: set.forceadd,
    skbinfo: set.skbinfo,
  };
  if (set.timeout !== undefined) options.timeout = set.timeout;
  const entries: FakeEntrySnapshot[] = [];
  for (const e of set.entries.values()) if (!isExpired(e, now)) entries.push(entrySnapshot(set, e, now));
  return Object.freeze({
    name: set.name,
    index: set.index,
    type: set.type,
    family: set.family === AF_INET ? 'inet' : 'inet6',
    revision: set.revision,
    references: set.references,
    options: Object.freeze(options),
    entries: Object.freeze(entries),
  });
}
