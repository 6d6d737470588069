/**
 * Writing sets out the way the kernel lists them (ip_set_dump_do and the hash types' head/list): one set per
 * datagram, the header in the first message, then continuation messages of PROTOCOL, SETNAME and ADT, each filled
 * until the next entry would not fit the datagram, then NLMSG_DONE in a datagram of its own.
 */
import { MsgWriter } from '../netlink-kernel/codec.js';
import {
  ATTR,
  DATA_ATTR as D,
  IPADDR_IPV4,
  IPADDR_IPV6,
  IPSET_CMD,
  IPSET_FLAG_LIST_HEADER,
  IPSET_FLAG_LIST_SETNAME,
  IPSET_FLAG_NOMATCH,
  IPSET_FLAG_WITH_COMMENT,
  IPSET_FLAG_WITH_COUNTERS,
  IPSET_FLAG_WITH_FORCEADD,
  IPSET_FLAG_WITH_SKBINFO,
  IPSET_PROTOCOL,
  NFNL_SUBSYS_IPSET,
  NLM_F_MULTI,
  NLMSG_DONE,
} from './constants.js';
import { type Entry, type SetState, remainingSeconds } from './model.js';

/** Reply addressing shared by every message of one answer. */
export interface ReplyTo {
  seq: number;
  pid: number;
}

/** cadtFlags is what ip_set_put_flags reports for a set's extensions. */
export function cadtFlags(set: SetState): number {
  let f = 0;
  if (set.counters) f |= IPSET_FLAG_WITH_COUNTERS;
  if (set.comment) f |= IPSET_FLAG_WITH_COMMENT;
  if (set.skbinfo) f |= IPSET_FLAG_WITH_SKBINFO;
  if (set.forceadd) f |= IPSET_FLAG_WITH_FORCEADD;
  return f;
}

/** memsize is a plausible stand-in for the kernel's allocation size (it differs by design; tests mask it). */
export function memsize(set: SetState): number {
  const per = (set.family === 2 ? 8 : 20) + (set.timeout !== undefined ? 8 : 0) + (set.counters ? 16 : 0) + (set.comment ? 8 : 0);
  return 200 + set.hashsize * 8 + set.entries.size * per;
}

function writeHeaderData(w: MsgWriter, set: SetState): void {
  w.beginNest(ATTR.DATA);
  w.be32(D.HASHSIZE, set.hashsize);
  w.be32(D.MAXELEM, set.maxelem);
  w.u8(D.BUCKETSIZE, set.bucketsize);
  w.be32(D.INITVAL, set.initval);
  w.be32(D.REFERENCES, set.references);
  w.be32(D.MEMSIZE, memsize(set));
  w.be32(D.ELEMENTS, set.entries.size);
  if (set.timeout !== undefined) w.be32(D.TIMEOUT, set.timeout);
  const flags = cadtFlags(set);
  if (flags !== 0) w.be32(D.CADT_FLAGS, flags);
  w.endNest();
}

/** writeEntry emits one DATA nest in the kernel's attribute order (type data, then extensions). */
export function writeEntry(w: MsgWriter, set: SetState, e: Entry, now: number): void {
  w.beginNest(ATTR.DATA);
  w.beginNest(D.IP);
  w.raw(e.addr.length === 4 ? IPADDR_IPV4 : IPADDR_IPV6, e.addr);
  w.endNest();
  if (set.type === 'hash:net') {
    w.u8(D.CIDR, e.cidr);
    if (e.nomatch) w.be32(D.CADT_FLAGS, IPSET_FLAG_NOMATCH);
  } else if (set.type === 'hash:ip,port') {
    w.be16(D.PORT, e.port);
    w.u8(D.PROTO, e.proto);
  }
  if (set.timeout !== undefined) w.be32(D.TIMEOUT, remainingSeconds(e, now));
  if (set.counters) {
    w.be64(D.BYTES, e.bytes);
    w.be64(D.PACKETS, e.packets);
  }
  if (e.comment !== undefined) w.strBytes(D.COMMENT, (e.commentBytes ??= Buffer.from(e.comment, 'utf8')));
  // ip_set_put_skbinfo leaves out zero values.
  const skb = e.skb;
  if (skb) {
    if (skb.mark !== undefined && skb.mark !== 0n) w.be64(D.SKBMARK, skb.mark);
    if (skb.prio !== undefined && skb.prio !== 0) w.be32(D.SKBPRIO, skb.prio);
    if (skb.queue !== undefined && skb.queue !== 0) w.be16(D.SKBQUEUE, skb.queue);
  }
  w.endNest();
}

function begin(w: MsgWriter, to: ReplyTo, set: SetState): number {
  const at = w.beginMessage((NFNL_SUBSYS_IPSET << 8) | IPSET_CMD.LIST, NLM_F_MULTI, to.seq, to.pid);
  w.nfgen();
  w.u8(ATTR.PROTOCOL, IPSET_PROTOCOL);
  w.str(ATTR.SETNAME, set.name);
  return at;
}

/**
 * dumpSets returns the datagrams of a LIST/SAVE answer for sets. pageSize is the room of one datagram; an entry
 * that would cross it starts the next continuation message.
 */
export function dumpSets(sets: SetState[], to: ReplyTo, flags: number, pageSize: number, now: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  const w = new MsgWriter(Math.min(pageSize + 4096, 1 << 20));
  for (const set of sets) {
    let at = begin(w, to, set);
    if ((flags & IPSET_FLAG_LIST_SETNAME) === 0) {
      w.str(ATTR.TYPENAME, set.type);
      w.u8(ATTR.FAMILY, set.family);
      w.u8(ATTR.REVISION, set.revision);
      w.be16(ATTR.INDEX, set.index);
      writeHeaderData(w, set);
      if ((flags & IPSET_FLAG_LIST_HEADER) === 0) {
        w.beginNest(ATTR.ADT);
        for (const e of set.entries.values()) {
          const mark = w.length;
          writeEntry(w, set, e, now);
          if (w.length <= pageSize || mark <= at + 64) continue;
          // The entry crosses the page: cut it, close this message, and repeat it in a continuation.
          w.truncate(mark);
          w.endNest();
          w.endMessage(at);
          out.push(w.take());
          at = begin(w, to, set);
          w.beginNest(ATTR.ADT);
          writeEntry(w, set, e, now);
        }
        w.endNest();
      }
    }
    w.endMessage(at);
    out.push(w.take());
  }
  const done = w.beginMessage(NLMSG_DONE, NLM_F_MULTI, to.seq, to.pid);
  w.u32le(0);
  w.endMessage(done);
  out.push(w.take());
  return out;
}
