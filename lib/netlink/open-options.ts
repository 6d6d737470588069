/**
 * The options every netlink client's open() takes (Ipset, Rtnetlink, Nftables), checked in one place: where to talk
 * (a namespace, or a NetlinkPeer instead of the kernel) and the deadline for each answer.
 */
import { Netns, type NetnsLike } from '../netns.js';
import { checkInteger, checkOptions, invalidType, invalidValue } from '../validate.js';

const KNOWN = ['netns', 'netlink', 'timeoutMs'];
import type { NetlinkPeer } from './peer.js';

/** NetlinkOpenOptions are the fields every netlink client's open options share. */
export interface NetlinkOpenOptions {
  /** The namespace to work in (a handle or a path); default: the current one. */
  netns?: NetnsLike;
  /** A peer to talk to instead of the kernel (a fake kernel such as FakeNetlink). */
  netlink?: NetlinkPeer;
  /** Deadline for each kernel answer, milliseconds (default 5000). */
  timeoutMs?: number;
}

/**
 * NetlinkClientOpenOptions are the open options of the clients whose socket may wait for their first operation
 * (Rtnetlink, Nftables).
 */
export interface NetlinkClientOpenOptions extends NetlinkOpenOptions {
  /**
   * With a `netns`, open the socket with the first operation, on the same hop into the namespace as that
   * operation's exchange, instead of now (default false). A client opened for one batch then takes one thread
   * hand-off each way instead of two, and the JS thread one turn fewer. open() then checks the options and opens the
   * namespace handle only; what it would reject with when the socket cannot be opened in the namespace (entering it,
   * `socket`), the first operation rejects with, and the next one tries again. No effect without `netns` or with
   * `netlink`. Operations that open sockets this way run on the one hop thread, one after another: clients meant to
   * work side by side (several namespaces at once) gain less, or lose, where their exchanges are long.
   */
  defer?: boolean;
}

/** What checkNetlinkOpenOptions found. */
export interface NetlinkTarget {
  timeoutMs: number;
  peer: NetlinkPeer | undefined;
  /**
   * The client's own handle on the namespace (a path opened, a handle reopened), so the caller may close theirs;
   * the client closes it. Undefined: the current namespace.
   */
  netns: Netns | undefined;
}

/**
 * checkNetlinkOpenOptions checks the shared open options (timeoutMs 1..3600000, default 5000; netlink a peer;
 * netns a Netns or a path) and opens the client's own namespace handle last, so a bad option leaves nothing open.
 * Throws InvalidArgumentError naming the option, or what Netns.open throws.
 */
export function checkNetlinkOpenOptions(options: unknown, extra: readonly string[] = []): NetlinkTarget {
  const opts = checkOptions<NetlinkOpenOptions>('options', options);
  // A misspelt option (`peer` for `netlink`, `ns` for `netns`) would otherwise open a client on the kernel of the
  // current namespace: the one place it must never land by mistake.
  for (const key of Object.keys(opts)) {
    if (!KNOWN.includes(key) && !extra.includes(key)) {
      throw invalidValue(`options.${key}`, `no such option (the options are ${[...KNOWN, ...extra].join(', ')})`, (opts as Record<string, unknown>)[key]);
    }
  }
  const timeoutMs = opts.timeoutMs === undefined ? 5000 : checkInteger('options.timeoutMs', opts.timeoutMs, 1, 3_600_000);
  const peer = opts.netlink;
  if (peer !== undefined && typeof (peer as NetlinkPeer).exchange !== 'function') {
    throw invalidType('options.netlink', 'a NetlinkPeer (an object with exchange())', peer);
  }
  let netns: Netns | undefined;
  if (opts.netns instanceof Netns) netns = opts.netns.reopen();
  else if (typeof opts.netns === 'string') netns = Netns.open(opts.netns);
  else if (opts.netns !== undefined) throw invalidType('options.netns', 'a Netns or a path', opts.netns);
  return { timeoutMs, peer, netns };
}
