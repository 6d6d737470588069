/**
 * Fault injection for tests of code on FakeNftables: a scripted errno for the next (matching) message, as if the
 * kernel refused it (in a batch, the whole batch is then aborted like any refusal), a lost answer, or a truncated
 * datagram. Each fault fires once, in the order it was added.
 */
import { type NlMsg, parseAttrs } from '../netlink-kernel/codec.js';
import { type MatcherShape, numberOf } from '../netlink-kernel/fault-injection.js';
import { NFGENMSG_LEN, NFNL_SUBSYS_NFTABLES, NFT_MSG, NLMSG_HDRLEN } from './constants.js';
import { nameOf } from './request.js';

/** NftMessageName names a message in fault matchers: the NFT_MSG_* name in lower case ('newsetelem', 'getset', ...). */
export type NftMessageName = Lowercase<keyof typeof NFT_MSG>;

/** NftFaultMatch narrows a fault to messages of one type and/or naming one table; empty matches any message. */
export interface NftFaultMatch {
  /** Only messages of this type. */
  message?: NftMessageName;
  /** Only messages naming this table. */
  table?: string;
}

/** MessageInfo is what matchers look at in a message. */
export interface MessageInfo {
  cmd: number;
  table: string | undefined;
}

/** messageNumber maps a message name to NFT_MSG_*; undefined for a name that is not a message. */
export function messageNumber(name: string): number | undefined {
  return numberOf(NFT_MSG, name);
}

/** describe reads what matchers look at: the message type and the table it names (attribute 1 in every type). */
export function describe(msg: NlMsg): MessageInfo {
  const cmd = msg.type >> 8 === NFNL_SUBSYS_NFTABLES ? msg.type & 0xff : -1;
  if (msg.len < NLMSG_HDRLEN + NFGENMSG_LEN) return { cmd, table: undefined };
  try {
    return { cmd, table: nameOf(parseAttrs(msg.bytes, NLMSG_HDRLEN + NFGENMSG_LEN, msg.len).byType.get(1)) };
  } catch {
    return { cmd, table: undefined };
  }
}

/** NFT_MATCHER is the shape of NftFaultMatch, for checkFaultMatch. */
export const NFT_MATCHER: MatcherShape = {
  name: 'message',
  known: (name) => messageNumber(name) !== undefined,
  expected: 'an nf_tables message name such as "newsetelem"',
  about: 'table',
};

/** nftMatches says whether message req is one that matcher m narrows a fault to. */
export function nftMatches(m: NftFaultMatch, req: MessageInfo): boolean {
  return (m.message === undefined || messageNumber(m.message) === req.cmd) && (m.table === undefined || m.table === req.table);
}
