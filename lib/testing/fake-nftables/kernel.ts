/**
 * nfnetlink as nf_tables sees it: a sendmsg that starts with NFNL_MSG_BATCH_BEGIN is one batch (nfnetlink_rcv_batch:
 * res_id names the subsystem, the generation is checked, every message is processed even after one failed, acks
 * and errors are queued and delivered after the commit or abort, a batch whose tables fail validation at the
 * commit is aborted and replayed so that the rule to blame is named, END is never acknowledged, and what follows
 * END is dropped); anything else is messages one by one (netlink_rcv_skb: GETs answered, changes refused with EINVAL).
 */
import { type NlMsg, splitMessages } from '../netlink-kernel/codec.js';
import { type ReplyTo, ack, errorReply } from '../netlink-kernel/replies.js';
import { delChain, newChain } from './chains.js';
import {
  BATCH_ONLY,
  E,
  NFGENMSG_LEN,
  NFNL_BATCH_GENID,
  NFNL_MSG_BATCH_BEGIN,
  NFNL_MSG_BATCH_END,
  NFNL_SUBSYS_NFTABLES,
  NFT_MSG,
  NFT_MSG_MAX,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_REQUEST,
  NLMSG_HDRLEN,
  NLMSG_MIN_TYPE,
} from './constants.js';
import { type GetContext, get } from './gets.js';
import { Draft, type State } from './model.js';
import { Failure, type Request, parseRequest } from './request.js';
import { delRule, newRule } from './rules.js';
import { type BatchIds, delSet, delSetElem, newSet, newSetElem } from './sets.js';
import { delTable, newTable } from './tables.js';
import { validateTable } from './validate.js';

/** How many subsystems nfnetlink has slots for (NFNL_SUBSYS_COUNT): a res_id past them is EINVAL. */
const NFNL_SUBSYS_COUNT = 12;

export interface KernelOptions {
  portId: number | undefined;
  pageSize: number;
  procPid: number;
  procName: string;
}

/** What the fault layer may do to one message: fail it with an errno instead of running it. */
export type MessageHook = (msg: NlMsg) => number | undefined;

/** Whether the fault layer has the set of this element dump rehashed after its first datagram (see elementDump). */
export type DumpHook = (msg: NlMsg) => boolean;

export class NftKernel {
  readonly state: State;

  constructor(state: State, readonly opts: KernelOptions) {
    this.state = state;
  }

  replyTo(msg: NlMsg): ReplyTo {
    return { seq: msg.seq, pid: this.opts.portId ?? msg.pid };
  }

  /** handle answers the bytes of one sendmsg with the datagrams recvmsg would return. */
  handle(request: Uint8Array, hook?: MessageHook, rehash?: DumpHook): Uint8Array[] {
    const msgs = splitMessages(request);
    const first = msgs[0];
    if (!first) return [];
    if (first.type === NFNL_MSG_BATCH_BEGIN) return this.#batch(request, msgs, hook);
    return msgs.flatMap((m) => this.#single(m, hook, rehash));
  }

  #error(msg: NlMsg, f: Failure | number): Uint8Array {
    return errorReply(msg, this.replyTo(msg), typeof f === 'number' ? { errno: f } : f.error);
  }

  #single(msg: NlMsg, hook?: MessageHook, rehash?: DumpHook): Uint8Array[] {
    const wantsAck = (msg.flags & NLM_F_ACK) !== 0;
    const acked = (): Uint8Array[] => (wantsAck ? [ack(msg, this.replyTo(msg))] : []);
    if (!(msg.flags & NLM_F_REQUEST) || msg.type < NLMSG_MIN_TYPE) return acked();
    // Messages shorter than nfgenmsg are taken and ignored.
    const req = parseRequest(msg);
    if (!req) return acked();
    const injected = hook?.(msg);
    if (injected !== undefined) return [this.#error(msg, injected)];
    const sub = msg.type >> 8;
    const cmd = msg.type & 0xff;
    if (sub !== NFNL_SUBSYS_NFTABLES || cmd >= NFT_MSG_MAX || BATCH_ONLY.has(cmd) || cmd > NFT_MSG.GETGEN) {
      return [this.#error(msg, E.EINVAL)];
    }
    const ctx: GetContext = {
      state: this.state,
      to: this.replyTo(msg),
      pageSize: this.opts.pageSize,
      procPid: this.opts.procPid,
      procName: this.opts.procName,
      rehash: cmd === NFT_MSG.GETSETELEM && (msg.flags & NLM_F_DUMP) === NLM_F_DUMP && (rehash?.(msg) ?? false),
    };
    try {
      const answer = get(ctx, req, cmd);
      if (answer.error) return [...answer.datagrams, this.#error(msg, answer.error)];
      return answer.dump ? answer.datagrams : [...answer.datagrams, ...acked()];
    } catch (err) {
      if (err instanceof Failure) return [this.#error(msg, err)];
      throw err;
    }
  }

  #batch(request: Uint8Array, msgs: NlMsg[], hook?: MessageHook, replayFor?: string): Uint8Array[] {
    const begin = msgs[0]!;
    if (begin.len < NLMSG_HDRLEN + NFGENMSG_LEN) return [];
    const b = begin.bytes;
    const resIdNet = ((b[NLMSG_HDRLEN + 2] ?? 0) << 8) | (b[NLMSG_HDRLEN + 3] ?? 0);
    // Old nft sent res_id in host order; the kernel still takes that.
    const resId = resIdNet === NFNL_SUBSYS_NFTABLES << 8 ? NFNL_SUBSYS_NFTABLES : resIdNet;
    const beginReq = parseRequest(begin)!;
    if (resId >= NFNL_SUBSYS_COUNT) return [this.#error(begin, E.EINVAL)];
    if (resId !== NFNL_SUBSYS_NFTABLES) return [this.#error(begin, E.EOPNOTSUPP)];
    const genAttr = beginReq.attrs.get(NFNL_BATCH_GENID);
    if (genAttr && genAttr.len >= 4) {
      const gen = genAttr.buf.readUInt32BE(genAttr.off);
      if (gen !== 0 && gen !== this.state.genId) return [this.#error(begin, E.ERESTART)];
    }
    const queued: Uint8Array[] = [];
    if (begin.flags & NLM_F_ACK) queued.push(ack(begin, this.replyTo(begin)));
    const draft = new Draft(this.state);
    const ids: BatchIds = { sets: new Map(), validate: new Set(), validateNow: new Set(replayFor === undefined ? [] : [replayFor]) };
    let failed = false;
    let done = false;
    let consumed = alignedLength(begin);
    for (const msg of msgs.slice(1)) {
      consumed += alignedLength(msg);
      if (msg.len < NLMSG_HDRLEN + NFGENMSG_LEN) {
        // A malformed message ends the batch with nothing applied and nothing said.
        return this.#abort(draft, []);
      }
      let err = 0;
      let failure: Failure | undefined;
      if (!(msg.flags & NLM_F_REQUEST)) err = E.EINVAL;
      else if (msg.type === NFNL_MSG_BATCH_BEGIN) return this.#abort(draft, []);
      else if (msg.type === NFNL_MSG_BATCH_END) {
        done = true;
        break;
      } else if (msg.type < NLMSG_MIN_TYPE || msg.type >> 8 !== resId) err = E.EINVAL;
      else {
        const cmd = msg.type & 0xff;
        if (cmd >= NFT_MSG_MAX || !BATCH_ONLY.has(cmd)) err = E.EINVAL;
        else {
          const injected = hook?.(msg);
          if (injected !== undefined) err = injected;
          else {
            try {
              this.#apply(draft, parseRequest(msg)!, cmd, ids);
            } catch (e) {
              if (!(e instanceof Failure)) throw e;
              failure = e;
              err = e.error.errno;
            }
          }
        }
      }
      if (err !== 0) {
        failed = true;
        queued.push(failure ? this.#error(msg, failure) : this.#error(msg, err));
      } else if (msg.flags & NLM_F_ACK) {
        queued.push(ack(msg, this.replyTo(msg)));
      }
    }
    // Bytes after the last whole message (a cut header) fail the batch as a malformed one does.
    if (!done && consumed < request.byteLength && request.byteLength - consumed >= NLMSG_HDRLEN) return this.#abort(draft, []);
    const invalid = !failed && replayFor === undefined ? this.#firstInvalid(draft, ids) : undefined;
    if (invalid !== undefined) {
      // The commit (or, for a batch without END, the abort) found a table the kernel will not run: nfnetlink
      // aborts and replays the batch with that table validated after every rule, which names the rule. What the
      // first pass took stays taken, handles included.
      if (done) this.state.validateDo = true;
      this.#abort(draft, []);
      return this.#batch(request, msgs, hook, invalid);
    }
    if (done && !failed) {
      draft.commit();
      return queued;
    }
    return this.#abort(draft, queued);
  }

  /** The first table, in the netns's order, that the batch gave a rule and that fails validation. */
  #firstInvalid(draft: Draft, ids: BatchIds): string | undefined {
    for (const [key, table] of draft.tables) {
      if ((ids.validate.has(key) || ids.validateNow.has(key)) && validateTable(table) !== 0) return key;
    }
    return undefined;
  }

  /** abort drops the batch's changes (handles it took stay taken, as in the kernel) and returns what is said. */
  #abort(draft: Draft, replies: Uint8Array[]): Uint8Array[] {
    draft.abort();
    return replies;
  }

  #apply(draft: Draft, req: Request, cmd: number, ids: BatchIds): void {
    switch (cmd) {
      case NFT_MSG.NEWTABLE: {
        const before = new Set(draft.tables.keys());
        newTable(draft, req);
        // A table made while the last commit's validation failure stands is validated after every rule.
        if (this.state.validateDo) for (const key of draft.tables.keys()) if (!before.has(key)) ids.validateNow.add(key);
        return;
      }
      case NFT_MSG.DELTABLE:
        return delTable(draft, req);
      case NFT_MSG.NEWCHAIN:
        return newChain(draft, req);
      case NFT_MSG.DELCHAIN:
        return delChain(draft, req);
      case NFT_MSG.NEWRULE:
        return newRule(draft, req, ids);
      case NFT_MSG.DELRULE:
        return delRule(draft, req);
      case NFT_MSG.NEWSET:
        return newSet(draft, req, ids);
      case NFT_MSG.DELSET:
        return delSet(draft, req);
      case NFT_MSG.NEWSETELEM:
        return newSetElem(draft, req, ids);
      case NFT_MSG.DELSETELEM:
        return delSetElem(draft, req, ids);
    }
  }
}

function alignedLength(m: NlMsg): number {
  return (m.len + 3) & ~3;
}
