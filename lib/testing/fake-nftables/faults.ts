/**
 * Fault injection for tests of code on FakeNftables: a scripted errno for the next (matching) message, as if the
 * kernel refused it (in a batch, the whole batch is then aborted like any refusal), a lost answer, or a truncated
 * datagram. Each fault fires once, in the order it was added.
 */
import { type NlMsg, parseAttrs } from '../netlink-kernel/codec.js';
import { MatchingFaultQueue } from '../netlink-kernel/fault-queue.js';
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

export type NftFault =
  | { kind: 'error'; errno: number; match: NftFaultMatch }
  | { kind: 'drop'; match: NftFaultMatch }
  | { kind: 'truncate'; bytes: number | undefined; match: NftFaultMatch };

interface MessageInfo {
  cmd: number;
  table: string | undefined;
}

export function messageNumber(name: string): number | undefined {
  const key = name.toUpperCase();
  return Object.hasOwn(NFT_MSG, key) ? NFT_MSG[key as keyof typeof NFT_MSG] : undefined;
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

export class NftFaultQueue extends MatchingFaultQueue<NftFault, NftFaultMatch, MessageInfo> {
  constructor() {
    super((m, req) => (m.message === undefined || messageNumber(m.message) === req.cmd) && (m.table === undefined || m.table === req.table));
  }
}
