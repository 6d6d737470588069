/**
 * FakeRtnetlink: an in-process stand-in for one network namespace's NETLINK_ROUTE kernel side that podnet's native
 * netlink engine can talk to instead of a socket. It answers the same request bytes with the bytes a 6.18 kernel
 * sends a socket with NETLINK_EXT_ACK on.
 */
import type { NetlinkPeer } from '../../netlink/peer.js';
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../../validate.js';
import { type NetlinkKernelOptions, checkErrno, checkKernelOptions } from '../netlink-kernel/peer-options.js';
import { type KernelError, type NlMsg, MsgWriter, fail, parseAddr, splitMessages } from './codec.js';
import {
  NLM_F_DUMP,
  NLM_F_MULTI,
  NLMSG_DONE,
  RT_TABLE_LOCAL,
  RT_TABLE_MAIN,
  RTM,
} from './constants.js';
import { type RtnetlinkFaultMatch, FaultQueue, checkMatch } from './faults.js';
import { RouteKernel } from './kernel.js';
import { addAddr4, addAddr6, bringUp } from './links.js';
import { type Link, NetnsState } from './model.js';
import { defaultRules } from './rules.js';
import { type FakeRtnetlinkSnapshot, snapshot } from './snapshot.js';

/** FakeRtnetlinkOptions configure a FakeRtnetlink; every field is optional. */
export interface FakeRtnetlinkOptions extends NetlinkKernelOptions {
  /** loopbackUp brings lo up with 127.0.0.1/8, ::1/128 and their routes, as `ip link set lo up` does (default true). */
  loopbackUp?: boolean;
  /** ipv6 false is net.ipv6.conf.*.disable_ipv6=1: no IPv6 addresses, and IPv6 routes through a device fail (default true). */
  ipv6?: boolean;
  /** now is the clock in milliseconds behind the addresses' IFA_CACHEINFO timestamps (default Date.now). */
  now?: () => number;
}

/** FakeLinkOptions describe a link for addLink; it behaves like an ifb device (ethernet, NOARP, always carrier). */
export interface FakeLinkOptions {
  /** The interface name (at most 15 bytes, unique in the namespace). */
  name: string;
  /** ifindex (default: the next free one, as the kernel allocates them). */
  index?: number;
  /** Administratively up (default true). */
  up?: boolean;
  /** IFLA_MTU (default 1500). */
  mtu?: number;
  /** IFLA_TXQLEN (default 1000). */
  txqlen?: number;
  /** MAC address "aa:bb:cc:dd:ee:ff" (default 02:00:00:00:hh:ll from the index). */
  address?: string;
}

function checkBool(name: string, value: unknown, dflt: boolean): boolean {
  if (value === undefined) return dflt;
  if (typeof value !== 'boolean') throw invalidType(name, 'a boolean', value);
  return value;
}

/**
 * FakeRtnetlink implements NetlinkPeer with one fake namespace: `exchange` takes the bytes of one sendmsg and
 * returns the datagrams recvmsg would return. Links and addresses are set up with `addLink` and `addAddress`;
 * routes and rules change through netlink requests only. State is inspected with `dump()`; faults are scheduled
 * with `failNext`, `dropNextReply` and `interruptNextDump`. The constructor throws InvalidArgumentError on bad
 * options.
 */
export class FakeRtnetlink implements NetlinkPeer {
  readonly #state: NetnsState;
  readonly #kernel: RouteKernel;
  readonly #faults = new FaultQueue();
  readonly #now: () => number;
  #nextIndex = 2;

  constructor(options: FakeRtnetlinkOptions = {}) {
    const o = checkOptions<FakeRtnetlinkOptions>('options', options);
    const now = o.now ?? Date.now;
    if (typeof now !== 'function') throw invalidType('options.now', 'a function', now);
    const { pageSize: page, portId } = checkKernelOptions(o);
    const up = checkBool('options.loopbackUp', o.loopbackUp, true);
    this.#now = now;
    this.#state = new NetnsState(checkBool('options.ipv6', o.ipv6, true));
    this.#state.rules[4].push(...defaultRules(4));
    this.#state.rules[6].push(...defaultRules(6));
    this.#state.table6(RT_TABLE_MAIN);
    this.#state.table6(RT_TABLE_LOCAL);
    this.#kernel = new RouteKernel(this.#state, { portId, pageSize: page });
    const zero = new Uint8Array(6);
    const lo: Link = { index: 1, name: 'lo', loopback: true, up, mtu: 65536, txqlen: 1000, address: zero, broadcast: zero };
    this.#state.links.set(1, lo);
    if (up) bringUp(this.#state, lo, this.#stamp());
  }

  // IFA_CACHEINFO stamps are hundredths of a second of the kernel's clock.
  #stamp(): number {
    return Math.floor(this.#now() / 10) >>> 0;
  }

  /** exchange processes the messages of one sendmsg in order and returns the reply datagrams. Never throws. */
  exchange(request: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    const later: Uint8Array[] = [];
    let busy = false;
    for (const msg of splitMessages(request)) {
      const info = { type: msg.type, family: msg.len > 16 ? (msg.bytes[16] ?? 0) : -1, dump: (msg.flags & NLM_F_DUMP) !== 0 };
      const fault = this.#faults.take(info, ['error', 'drop']);
      if (fault?.kind === 'error') {
        out.push(this.#failure(msg, info.dump, fail(fault.errno)));
        continue;
      }
      const interrupt = info.dump && this.#faults.take(info, ['interrupt']) !== undefined;
      const answer = this.#kernel.handle(msg, busy, interrupt);
      busy ||= answer.dumping;
      if (fault?.kind === 'drop') continue;
      out.push(...answer.now);
      later.push(...answer.later);
    }
    return [...out, ...later];
  }

  // A scripted failure looks like the kernel's: NLMSG_ERROR for a request, a lone NLMSG_DONE for a dump.
  #failure(msg: NlMsg, dump: boolean, e: KernelError): Uint8Array {
    const get = ((msg.type - RTM.NEWLINK) & 3) === 2;
    if (!dump || !get) return this.#kernel.error(msg, e);
    const to = this.#kernel.replyTo(msg);
    const w = new MsgWriter(32);
    const at = w.beginMessage(NLMSG_DONE, NLM_F_MULTI, to.seq, to.pid);
    w.u32le(-e.errno);
    w.endMessage(at);
    return w.take();
  }

  /**
   * addLink adds a link (an ifb-like ethernet device) and, when it is up and IPv6 is on, what addrconf gives it: an
   * EUI-64 link-local address, fe80::/64 and ff00::/8. Returns its index. Throws InvalidArgumentError on a bad or
   * taken name or index, a bad MTU or address.
   */
  addLink(options: FakeLinkOptions): number {
    const o = checkOptions<FakeLinkOptions>('options', options);
    const name = checkString('options.name', o.name, 15);
    if (name === '.' || name === '..' || /[/:\s]/.test(name)) throw invalidValue('options.name', 'a valid interface name', name);
    if (this.#state.linkByName(name)) throw invalidValue('options.name', 'a name no link has', name);
    let index = o.index;
    if (index === undefined) {
      while (this.#state.links.has(this.#nextIndex)) this.#nextIndex++;
      index = this.#nextIndex++;
    } else {
      checkInteger('options.index', index, 1, 0x7fffffff);
      if (this.#state.links.has(index)) throw invalidValue('options.index', 'an index no link has', index);
    }
    const mtu = o.mtu === undefined ? 1500 : checkInteger('options.mtu', o.mtu, 68, 65535);
    const txqlen = o.txqlen === undefined ? 1000 : checkInteger('options.txqlen', o.txqlen, 0, 0xffffffff);
    let address = Uint8Array.of(2, 0, 0, 0, (index >> 8) & 0xff, index & 0xff);
    if (o.address !== undefined) {
      const text = checkString('options.address', o.address, 17);
      if (!/^([0-9a-f]{2}:){5}[0-9a-f]{2}$/i.test(text)) {
        throw invalidValue('options.address', 'a MAC address such as "02:00:00:00:00:01"', text);
      }
      address = Uint8Array.from(text.split(':').map((h) => parseInt(h, 16)));
    }
    const up = checkBool('options.up', o.up, true);
    const link: Link = { index, name, loopback: false, up, mtu, txqlen, address, broadcast: new Uint8Array(6).fill(0xff) };
    this.#state.links.set(index, link);
    if (up) bringUp(this.#state, link, this.#stamp());
    return index;
  }

  /**
   * addAddress adds an address ("10.0.0.1/24", "fd00::1/64") to a link (its name or index) with the routes the
   * kernel adds for it: the local route, and on an up link the prefix route and (IPv4 below /31) the broadcast
   * route. Throws InvalidArgumentError on an unknown link, a malformed address, an address the link already has,
   * an IPv6 address while IPv6 is off, or an IPv6 address on lo (not modelled).
   */
  addAddress(link: string | number, address: string): void {
    const s = this.#state;
    const l = typeof link === 'number' ? s.links.get(link) : typeof link === 'string' ? s.linkByName(link) : undefined;
    if (!l) throw invalidValue('link', 'the name or index of a link', link);
    const text = checkString('address', address, 64);
    const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
    const bytes = m ? parseAddr(m[1]!) : undefined;
    const len = m ? Number(m[2]) : NaN;
    if (!bytes || len > bytes.length * 8) {
      throw invalidValue('address', 'an address with prefix length such as "10.0.0.1/24"', address);
    }
    if (bytes.length === 16 && (!this.#state.ipv6 || l.loopback)) {
      const why = l.loopback ? 'IPv6 addresses on lo are not modelled' : 'IPv6 is off';
      throw invalidValue('address', `an IPv4 address (${why})`, address);
    }
    const add = bytes.length === 4 ? addAddr4 : addAddr6;
    const added = add(this.#state, l, bytes, len, this.#stamp());
    if (added === 'exists') throw invalidValue('address', `an address ${l.name} does not have yet`, address);
  }

  /** dump returns a frozen snapshot of links, addresses, routes and rules; changing the fake later does not change it. */
  dump(): FakeRtnetlinkSnapshot {
    return snapshot(this.#state);
  }

  /**
   * failNext makes the next request (or the next one matching `match`: its type and family) fail with `errno`
   * (sign ignored) without touching state: NLMSG_ERROR with the request echoed, or for a dump a lone NLMSG_DONE
   * carrying the error. The one-object form `failNext({ errno, type, family })` is deprecated. Throws
   * InvalidArgumentError on a bad errno or matcher.
   */
  failNext(errno: number, match?: RtnetlinkFaultMatch): void;
  /** @deprecated use failNext(errno, { type, family }) */
  failNext(options: RtnetlinkFaultMatch & { errno: number }): void;
  failNext(errnoOrOptions: number | (RtnetlinkFaultMatch & { errno: number }), match?: RtnetlinkFaultMatch): void {
    if (typeof errnoOrOptions === 'number') {
      this.#faults.add({ kind: 'error', errno: checkErrno('errno', errnoOrOptions), match: checkMatch('match', match) });
      return;
    }
    const o = checkOptions<RtnetlinkFaultMatch & { errno: number }>('options', errnoOrOptions);
    const errno = checkErrno('options.errno', o.errno);
    this.#faults.add({ kind: 'error', errno, match: checkMatch('options', { type: o.type, family: o.family }) });
  }

  /**
   * dropNextReply applies the next (matching) request but loses every datagram it would answer with, like replies
   * lost to a full receive buffer. Throws InvalidArgumentError on a bad matcher.
   */
  dropNextReply(match?: RtnetlinkFaultMatch): void {
    this.#faults.add({ kind: 'drop', match: checkMatch('match', match) });
  }

  /**
   * interruptNextDump sets NLM_F_DUMP_INTR on every message of the next (matching) dump, as the kernel does when
   * the table changed while it was being dumped. Throws InvalidArgumentError on a bad matcher.
   */
  interruptNextDump(match?: RtnetlinkFaultMatch): void {
    this.#faults.add({ kind: 'interrupt', match: checkMatch('match', match) });
  }

  /** pendingFaults is how many scheduled faults have not fired yet. */
  get pendingFaults(): number {
    return this.#faults.size;
  }

  /** clearFaults drops every scheduled fault. */
  clearFaults(): void {
    this.#faults.clear();
  }
}
