/**
 * The dispatcher of the fake NETLINK_ROUTE kernel (netlink_rcv_skb and rtnetlink_rcv_msg): which messages are only
 * acknowledged, which handler a (type, family) pair reaches after the kernel's fallback to AF_UNSPEC, how dumps are
 * cut into datagrams, and how answers are framed for a socket with NETLINK_EXT_ACK.
 */
import { type KernelError, type NlMsg, type ReplyTo, MsgWriter, ack, errorReply, fail } from './codec.js';
import {
  AF_BRIDGE,
  AF_INET,
  AF_INET6,
  AF_UNSPEC,
  ERRNO,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_DUMP_INTR,
  NLM_F_MULTI,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NLMSG_MIN_TYPE,
  RTM,
  RTM_F_PREFIX,
  RTM_MAX,
  RTMSG_LEN,
} from './constants.js';
import { delRoute4, fillRoute4, newRoute4, routes4 } from './fib4.js';
import { delRoute6, fillRoute6, newRoute6, routes6 } from './fib6.js';
import { fillAddr, fillLink, fillLink6, getLink } from './links.js';
import { type NetnsState, dumpOrder } from './model.js';
import { delRule, fillRule, newRule } from './rules.js';

/** Answer is what one request produced: datagrams to send now, and dump pages the reader only gets later. */
export interface Answer {
  now: Uint8Array[];
  later: Uint8Array[];
  /** The request started a dump that is still running after its first page (another dump would be EBUSY). */
  dumping: boolean;
}

/** KernelOptions are what the dispatcher needs from the fake's owner. */
export interface KernelOptions {
  /** nlmsg_pid of every reply; undefined echoes the request's. */
  portId: number | undefined;
  /** Room of one dump datagram. */
  pageSize: number;
}

type Fill = (w: MsgWriter) => void;

/** Dump is what a dump request walks: the message type and bodies, and where NLMSG_DONE goes. */
interface Dump {
  type: number;
  fills: Fill[];
  /** NLMSG_DONE in a datagram of its own (RTNL_FLAG_DUMP_SPLIT_NLM_DONE), else after the last entry if it fits. */
  splitDone: boolean;
  /** The dump fails on its first call: a lone NLMSG_DONE carries this negative errno. */
  doneErrno?: number;
}

// Known to the kernel but not modelled by the fake: answered EOPNOTSUPP with a message that says so.
const UNMODELLED: ReadonlyMap<number, string> = new Map([
  [RTM.NEWLINK, 'RTM_NEWLINK'],
  [RTM.DELLINK, 'RTM_DELLINK'],
  [RTM.SETLINK, 'RTM_SETLINK'],
]);

/** RouteKernel answers the messages of one fake namespace. */
export class RouteKernel {
  constructor(
    private readonly state: NetnsState,
    private readonly opts: KernelOptions,
  ) {}

  replyTo(msg: NlMsg): ReplyTo {
    return { seq: msg.seq, pid: this.opts.portId ?? msg.pid };
  }

  /** error is the error reply to msg. */
  error(msg: NlMsg, e: KernelError): Uint8Array {
    return errorReply(msg, this.replyTo(msg), e);
  }

  /**
   * handle answers one message. `busy` says a dump of an earlier message in the same sendmsg is still running;
   * `interrupt` marks this dump's messages NLM_F_DUMP_INTR.
   */
  handle(msg: NlMsg, busy: boolean, interrupt: boolean): Answer {
    const to = this.replyTo(msg);
    const acked = (e?: KernelError): Answer => ({
      now: e ? [errorReply(msg, to, e)] : msg.flags & NLM_F_ACK ? [ack(msg, to)] : [],
      later: [],
      dumping: false,
    });
    if (!(msg.flags & NLM_F_REQUEST) || msg.type < NLMSG_MIN_TYPE) return acked();
    if (msg.type > RTM_MAX) return acked(fail(ERRNO.EOPNOTSUPP));
    if (msg.len < 17) return acked();
    const family = msg.bytes[16] ?? 0;
    const get = ((msg.type - RTM.NEWLINK) & 3) === 2;
    if (get && msg.flags & NLM_F_DUMP) {
      if (busy) return acked(fail(ERRNO.EBUSY));
      const dump = this.#dumpOf(msg, family);
      if ('errno' in dump) return acked(dump);
      return this.#pages(to, dump, interrupt);
    }
    const unmodelled = UNMODELLED.get(msg.type);
    if (unmodelled) return acked(fail(ERRNO.EOPNOTSUPP, `fake-rtnetlink: ${unmodelled} is not modelled`));
    switch (msg.type) {
      case RTM.GETLINK: {
        const l = getLink(this.state, msg);
        if ('errno' in l) return acked(l);
        const reply = this.#message(RTM.NEWLINK, 0, to, (w) => fillLink(w, l));
        return { now: [reply, ...acked().now], later: [], dumping: false };
      }
      case RTM.NEWADDR:
      case RTM.DELADDR:
        if (family !== AF_INET && family !== AF_INET6) return acked(fail(ERRNO.EOPNOTSUPP));
        return acked(fail(ERRNO.EOPNOTSUPP, 'fake-rtnetlink: address changes over netlink are not modelled (use addAddress)'));
      case RTM.GETADDR:
        // Only IPv6 has a handler for one address; the others answer as the kernel does without one.
        if (family !== AF_INET6) return acked(fail(ERRNO.EOPNOTSUPP));
        return acked(fail(ERRNO.EOPNOTSUPP, 'fake-rtnetlink: RTM_GETADDR without NLM_F_DUMP is not modelled'));
      case RTM.GETROUTE:
        if (family !== AF_INET && family !== AF_INET6) return acked(fail(ERRNO.EOPNOTSUPP));
        return acked(fail(ERRNO.EOPNOTSUPP, 'fake-rtnetlink: route lookups (RTM_GETROUTE without NLM_F_DUMP) are not modelled'));
      case RTM.NEWROUTE:
      case RTM.DELROUTE: {
        const add = msg.type === RTM.NEWROUTE;
        if (family === AF_INET) return acked(add ? newRoute4(this.state, msg) : delRoute4(this.state, msg));
        if (family === AF_INET6) return acked(add ? newRoute6(this.state, msg) : delRoute6(this.state, msg));
        return acked(fail(ERRNO.EOPNOTSUPP));
      }
      case RTM.NEWRULE:
        return acked(newRule(this.state, msg));
      case RTM.DELRULE:
        return acked(delRule(this.state, msg));
      default:
        return acked(fail(ERRNO.EOPNOTSUPP));
    }
  }

  /** dumpOf lists the bodies a dump request gets, or the error it fails with before any page. */
  #dumpOf(msg: NlMsg, family: number): Dump | KernelError {
    const s = this.state;
    // Families without their own dump fall back to AF_UNSPEC's, which walks every family.
    const v4 = family !== AF_INET6;
    const v6 = family !== AF_INET;
    switch (msg.type) {
      case RTM.GETLINK: {
        const links = [...s.links.values()].sort((a, b) => a.index - b.index);
        // AF_BRIDGE lists bridge ports (there are none); AF_INET6 has its own per-device summary.
        if (family === AF_BRIDGE) return { type: RTM.NEWLINK, fills: [], splitDone: false };
        if (family === AF_INET6) {
          return { type: RTM.NEWLINK, fills: links.map((l) => (w: MsgWriter) => fillLink6(w, l)), splitDone: false };
        }
        return { type: RTM.NEWLINK, fills: links.map((l) => (w: MsgWriter) => fillLink(w, l)), splitDone: true };
      }
      case RTM.GETADDR: {
        const fills: Fill[] = [];
        for (const f of [4, 6] as const) {
          if ((f === 4 && !v4) || (f === 6 && !v6)) continue;
          for (const [index, list] of [...s.addrs[f]].sort((a, b) => a[0] - b[0])) {
            const l = s.links.get(index)!;
            for (const a of list) fills.push((w) => fillAddr(w, a, l));
          }
        }
        // inet6_dump_ifaddr, unlike the IPv4 and all-family dumps, lets NLMSG_DONE share the last datagram.
        return { type: RTM.NEWADDR, fills, splitDone: family !== AF_INET6 };
      }
      case RTM.GETROUTE: {
        const fills: Fill[] = [];
        // Without strict checking the kernel filters on nothing but RTM_F_PREFIX, which no route here has.
        const view = Buffer.from(msg.bytes.buffer, msg.bytes.byteOffset, msg.len);
        const rtmFlags = msg.len >= 16 + RTMSG_LEN ? view.readUInt32LE(24) : 0;
        const prefixOnly = (rtmFlags & RTM_F_PREFIX) !== 0;
        if (!prefixOnly) {
          if (v4) for (const t of dumpOrder(s.tables4)) for (const r of routes4(t)) fills.push((w) => fillRoute4(w, r));
          if (v6) for (const t of dumpOrder(s.tables6)) for (const r of routes6(t)) fills.push((w) => fillRoute6(w, r));
        }
        return { type: RTM.NEWROUTE, fills, splitDone: true };
      }
      case RTM.GETRULE: {
        // fib_nl_dumprule looks the family up itself: an unknown one fails the dump on its first call.
        if (family !== AF_UNSPEC && family !== AF_INET && family !== AF_INET6) {
          return { type: RTM.NEWRULE, fills: [], splitDone: false, doneErrno: -ERRNO.EAFNOSUPPORT };
        }
        const rules = [...(v4 ? s.rules[4] : []), ...(v6 ? s.rules[6] : [])];
        return { type: RTM.NEWRULE, fills: rules.map((r) => (w: MsgWriter) => fillRule(w, s, r)), splitDone: false };
      }
      default:
        return fail(ERRNO.EOPNOTSUPP);
    }
  }

  #message(type: number, flags: number, to: ReplyTo, fill: Fill): Uint8Array {
    const w = new MsgWriter(256);
    const at = w.beginMessage(type, flags, to.seq, to.pid);
    fill(w);
    w.endMessage(at);
    return w.take();
  }

  /**
   * pages cuts a dump into datagrams of at most pageSize bytes. NLMSG_DONE shares the last page only for dumps
   * without the kernel's RTNL_FLAG_DUMP_SPLIT_NLM_DONE (rules); an error before the first entry is a lone DONE.
   */
  #pages(to: ReplyTo, dump: Dump, interrupt: boolean): Answer {
    const flags = NLM_F_MULTI | (interrupt ? NLM_F_DUMP_INTR : 0);
    const done = (errno: number) =>
      this.#message(NLMSG_DONE, flags, to, (w) => {
        w.u32le(errno);
      });
    if (dump.doneErrno !== undefined) return { now: [done(dump.doneErrno)], later: [], dumping: false };
    const pages: Uint8Array[] = [];
    let page: Uint8Array[] = [];
    let used = 0;
    const flush = () => {
      if (page.length) pages.push(Buffer.concat(page));
      page = [];
      used = 0;
    };
    for (const fill of dump.fills) {
      const m = this.#message(dump.type, flags, to, fill);
      if (used + m.length > this.opts.pageSize) flush();
      page.push(m);
      used += m.length;
    }
    const last = done(0);
    if (dump.splitDone || used + last.length > this.opts.pageSize) flush();
    page.push(last);
    flush();
    const [first = new Uint8Array(), ...rest] = pages;
    return { now: [first], later: rest, dumping: rest.length > 0 };
  }
}
