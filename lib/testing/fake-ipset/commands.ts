/**
 * The ipset command handlers of the fake kernel (ip_set_core.c): each request message gets the datagrams the kernel
 * would send for it — a data reply, a dump, an ACK or an error — with the same checks in the same order.
 */
import { sameFields } from '../netlink-kernel/compare.js';
import { AttrTable, type AttrList, type NlMsg, MsgWriter, parseAttrs, readBe16, readBe32, readNulString, readU8 } from '../netlink-kernel/codec.js';
import {
  AF_INET,
  AF_INET6,
  ATTR,
  DATA_ATTR as D,
  ERRNO,
  IPSET_CMD,
  IPSET_DEFAULT_BUCKETSIZE,
  IPSET_DEFAULT_HASHSIZE,
  IPSET_DEFAULT_MAXELEM,
  IPSET_ERR,
  IPSET_FLAG_WITH_COMMENT,
  IPSET_FLAG_WITH_COUNTERS,
  IPSET_FLAG_WITH_FORCEADD,
  IPSET_FLAG_WITH_SKBINFO,
  IPSET_MAX_TIMEOUT,
  IPSET_MAXNAMELEN,
  IPSET_MIMINAL_HASHSIZE,
  IPSET_MSG_MAX,
  IPSET_PROTOCOL,
  IPSET_PROTOCOL_MIN,
  NFGENMSG_LEN,
  NFNL_SUBSYS_IPSET,
  NLM_F_ACK,
  NLM_F_CAPPED,
  NLM_F_EXCL,
  NLM_F_REQUEST,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLMSG_MIN_TYPE,
} from './constants.js';
import { type ReplyTo, dumpSets } from './dump.js';
import { type SetState, hostMask } from './model.js';
import { CREATE_POLICY_HASH, parseStrict } from './policy.js';
import { SetStore } from './store.js';
import { TYPES, uadt, type AdtKind } from './types.js';

const NAME_MAX = IPSET_MAXNAMELEN - 1;

/** Outcome of one command: datagrams to send before the ACK, and the error (0 = success). */
interface Outcome {
  replies: Uint8Array[];
  error: number;
  /** The error reply was already built (ADT line numbers, dump start): no further ACK or error. */
  final?: boolean;
}

function ok(replies: Uint8Array[] = []): Outcome {
  return { replies, error: 0 };
}

function err(error: number): Outcome {
  return { replies: [], error };
}

/** KernelOptions are what the fake's kernel needs from its owner. */
export interface KernelOptions {
  now: () => number;
  /** Port id used as nlmsg_pid of replies; undefined echoes the request's pid. */
  portId: number | undefined;
  dumpPageSize: number;
  initval: () => number;
}

/** IpsetKernel is the ipset subsystem of one fake network namespace. */
export class IpsetKernel {
  readonly store: SetStore;

  constructor(private readonly opts: KernelOptions) {
    this.store = new SetStore(opts.now);
  }

  /** replyTo is where answers to msg go: its seq, and the port id (or the request's pid without one). */
  replyTo(msg: NlMsg): ReplyTo {
    return { seq: msg.seq, pid: this.opts.portId ?? msg.pid };
  }

  /** handle processes one request message and returns the datagrams the kernel would send for it. */
  handle(msg: NlMsg): Uint8Array[] {
    const to = this.replyTo(msg);
    const wantsAck = (msg.flags & NLM_F_ACK) !== 0;
    // netlink_rcv_skb: only requests of a real type reach nfnetlink; the rest is just acknowledged.
    if ((msg.flags & NLM_F_REQUEST) === 0 || msg.type < NLMSG_MIN_TYPE) return wantsAck ? [ack(msg, to)] : [];
    const out = this.#dispatch(msg, to);
    if (out.final) return out.replies;
    if (out.error !== 0) return [...out.replies, errorReply(msg, to, -out.error)];
    return wantsAck ? [...out.replies, ack(msg, to)] : out.replies;
  }

  #dispatch(msg: NlMsg, to: ReplyTo): Outcome {
    if (msg.type >> 8 !== NFNL_SUBSYS_IPSET) return err(ERRNO.EINVAL);
    const cmd = msg.type & 0xff;
    if (cmd >= IPSET_MSG_MAX) return err(ERRNO.EINVAL);
    // nfnetlink answers a message too short for nfgenmsg with success, without calling ipset.
    if (msg.len < NLMSG_HDRLEN + NFGENMSG_LEN) return ok();
    const attrs = parseAttrs(msg.bytes, NLMSG_HDRLEN + NFGENMSG_LEN, msg.len);
    const bad = checkTopLevel(attrs);
    if (bad !== 0) return err(bad);
    const exist = (msg.flags & NLM_F_EXCL) === 0;
    switch (cmd) {
      case IPSET_CMD.PROTOCOL:
        return this.#protocol(attrs, to);
      case IPSET_CMD.CREATE:
        return this.#create(attrs, exist);
      case IPSET_CMD.DESTROY:
        return this.#destroy(attrs, exist);
      case IPSET_CMD.FLUSH:
        return this.#flush(attrs);
      case IPSET_CMD.RENAME:
      case IPSET_CMD.SWAP:
        return this.#renameOrSwap(attrs, cmd === IPSET_CMD.SWAP);
      case IPSET_CMD.LIST:
      case IPSET_CMD.SAVE:
        return this.#dump(msg, attrs, to);
      case IPSET_CMD.ADD:
      case IPSET_CMD.DEL:
        return this.#addDel(msg, attrs, cmd === IPSET_CMD.ADD ? 'add' : 'del', exist, to);
      case IPSET_CMD.TEST:
        return this.#test(attrs);
      case IPSET_CMD.HEADER:
        return this.#header(attrs, to);
      case IPSET_CMD.TYPE:
        return this.#type(attrs, to);
      case IPSET_CMD.GET_BYNAME:
        return this.#getByName(attrs, to);
      case IPSET_CMD.GET_BYINDEX:
        return this.#getByIndex(attrs, to);
      default:
        return err(ERRNO.EOPNOTSUPP);
    }
  }

  #protocol(attrs: AttrList, to: ReplyTo): Outcome {
    if (!attrs.byType.has(ATTR.PROTOCOL)) return err(IPSET_ERR.PROTOCOL);
    const w = reply(IPSET_CMD.PROTOCOL, to);
    w.u8(ATTR.PROTOCOL, IPSET_PROTOCOL);
    w.u8(ATTR.PROTOCOL_MIN, IPSET_PROTOCOL_MIN);
    return ok([finish(w)]);
  }

  #create(attrs: AttrList, exist: boolean): Outcome {
    const name = str(attrs, ATTR.SETNAME);
    const typename = str(attrs, ATTR.TYPENAME);
    const rev = attrs.byType.get(ATTR.REVISION);
    const fam = attrs.byType.get(ATTR.FAMILY);
    const data = attrs.byType.get(ATTR.DATA);
    if (protocolMinFailed(attrs) || name === undefined || typename === undefined || !rev || !fam || (data && !data.nested)) {
      return err(IPSET_ERR.PROTOCOL);
    }
    const type = TYPES.get(typename);
    const revision = readU8(rev);
    if (!type || revision < type.minRevision || revision > type.maxRevision) return err(IPSET_ERR.FIND_TYPE);
    const family = readU8(fam);
    let tb: AttrList = { byType: new AttrTable(), all: [], trailing: 0 };
    if (data) {
      const parsed = parseStrict(data, CREATE_POLICY_HASH);
      if (!parsed) return err(IPSET_ERR.PROTOCOL);
      tb = parsed;
    }
    if (family !== AF_INET && family !== AF_INET6) return err(IPSET_ERR.INVALID_FAMILY);
    for (const t of [D.HASHSIZE, D.MAXELEM, D.TIMEOUT, D.CADT_FLAGS]) {
      const a = tb.byType.get(t);
      if (a && !a.netOrder) return err(IPSET_ERR.PROTOCOL);
    }
    const get32 = (t: number) => {
      const a = tb.byType.get(t);
      return a ? readBe32(a) : undefined;
    };
    const hashsize = Math.max(get32(D.HASHSIZE) ?? IPSET_DEFAULT_HASHSIZE, IPSET_MIMINAL_HASHSIZE);
    const cadt = get32(D.CADT_FLAGS) ?? 0;
    const bucketAttr = tb.byType.get(D.BUCKETSIZE);
    // Captured on 6.18: 1 and 2 give 2, 3 gives 4, 13 and 255 give 12.
    let bucketsize = bucketAttr ? readU8(bucketAttr) : IPSET_DEFAULT_BUCKETSIZE;
    if (bucketsize < 2) bucketsize = 2;
    else if (bucketsize > IPSET_DEFAULT_BUCKETSIZE) bucketsize = IPSET_DEFAULT_BUCKETSIZE;
    else if (bucketsize % 2) bucketsize += 1;
    const timeout = get32(D.TIMEOUT);
    const set: SetState = {
      name,
      index: -1,
      type: type.name,
      revision,
      family,
      hashsize: roundPow2(hashsize),
      maxelem: get32(D.MAXELEM) ?? IPSET_DEFAULT_MAXELEM,
      bucketsize,
      initval: get32(D.INITVAL) ?? this.opts.initval(),
      timeout: timeout === undefined ? undefined : Math.min(timeout, IPSET_MAX_TIMEOUT),
      counters: (cadt & IPSET_FLAG_WITH_COUNTERS) !== 0,
      comment: (cadt & IPSET_FLAG_WITH_COMMENT) !== 0,
      forceadd: (cadt & IPSET_FLAG_WITH_FORCEADD) !== 0,
      skbinfo: (cadt & IPSET_FLAG_WITH_SKBINFO) !== 0,
      entries: new Map(),
      cidrs: new Map(),
      references: 0,
    };
    const clash = this.store.get(name);
    if (clash) {
      // Without NLM_F_EXCL an identical set is fine (hashsize is not compared: resizing changes it anyway).
      return exist && sameSet(clash, set) ? ok() : err(ERRNO.EEXIST);
    }
    const index = this.store.freeIndex();
    if (index < 0) return err(IPSET_ERR.MAX_SETS);
    set.index = index;
    this.store.insert(set);
    return ok();
  }

  #destroy(attrs: AttrList, exist: boolean): Outcome {
    if (protocolMinFailed(attrs)) return err(IPSET_ERR.PROTOCOL);
    const name = str(attrs, ATTR.SETNAME);
    const code = this.store.destroy(name);
    if (code === ERRNO.ENOENT && exist) return ok();
    return code === 0 ? ok() : err(code);
  }

  #flush(attrs: AttrList): Outcome {
    if (protocolMinFailed(attrs)) return err(IPSET_ERR.PROTOCOL);
    const name = str(attrs, ATTR.SETNAME);
    if (name === undefined) {
      for (const s of this.store.all()) this.store.flush(s);
      return ok();
    }
    const set = this.store.find(name);
    if (typeof set === 'number') return err(set);
    this.store.flush(set);
    return ok();
  }

  #renameOrSwap(attrs: AttrList, swap: boolean): Outcome {
    const a = str(attrs, ATTR.SETNAME);
    const b = str(attrs, ATTR.SETNAME2);
    if (protocolMinFailed(attrs) || a === undefined || b === undefined) return err(IPSET_ERR.PROTOCOL);
    const code = swap ? this.store.swap(a, b) : this.store.rename(a, b);
    return code === 0 ? ok() : err(code);
  }

  #dump(msg: NlMsg, attrs: AttrList, to: ReplyTo): Outcome {
    if (protocolMinFailed(attrs)) return err(IPSET_ERR.PROTOCOL);
    const name = str(attrs, ATTR.SETNAME);
    const flagsAttr = attrs.byType.get(ATTR.FLAGS);
    const flags = flagsAttr ? readBe32(flagsAttr) : 0;
    let sets: SetState[];
    if (name === undefined) {
      sets = this.store.all();
    } else {
      const set = this.store.find(name);
      if (typeof set === 'number') {
        // ip_set_dump_start sends its own error when asked to ACK, then netlink sends the dump's error too.
        const e = errorReply(msg, to, -set);
        return { replies: (msg.flags & NLM_F_ACK) !== 0 ? [e, e] : [e], error: set, final: true };
      }
      sets = [set];
    }
    for (const s of sets) this.store.live(s);
    // A dump ends with NLMSG_DONE and never with an ACK, whatever the flags.
    return { replies: dumpSets(sets, to, flags, this.opts.dumpPageSize, this.opts.now()), error: 0, final: true };
  }

  #addDel(msg: NlMsg, attrs: AttrList, kind: AdtKind, exist: boolean, to: ReplyTo): Outcome {
    const name = str(attrs, ATTR.SETNAME);
    const data = attrs.byType.get(ATTR.DATA);
    const adt = attrs.byType.get(ATTR.ADT);
    const lineAttr = attrs.byType.get(ATTR.LINENO);
    if (
      protocolMinFailed(attrs) ||
      name === undefined ||
      (data !== undefined) === (adt !== undefined) ||
      (data && !data.nested) ||
      (adt && (!adt.nested || !lineAttr))
    ) {
      return err(IPSET_ERR.PROTOCOL);
    }
    const set = this.store.find(name);
    if (typeof set === 'number') return err(set);
    const useLineno = lineAttr !== undefined;
    const policy = TYPES.get(set.type)!.adtPolicy;
    const nests = data ? [data] : adt!.children().all;
    for (const nest of nests) {
      if (nest.type !== ATTR.DATA) return err(IPSET_ERR.PROTOCOL);
      const tb = parseStrict(nest, policy);
      if (!tb) return err(IPSET_ERR.PROTOCOL);
      const parsed = uadt(set, tb, kind);
      let code = parsed.error;
      if (parsed.ok) code = kind === 'add' ? this.store.add(set, parsed, exist) : this.store.del(set, parsed, exist);
      if (code === IPSET_ERR.EXIST && exist) code = 0;
      if (code === 0) continue;
      const lineno = parsed.lineno?.value;
      if (useLineno && lineno && lineno.some((b) => b !== 0)) {
        return { replies: [errorReply(msg, to, -code, lineno)], error: code, final: true };
      }
      return err(code);
    }
    return ok();
  }

  #test(attrs: AttrList): Outcome {
    const name = str(attrs, ATTR.SETNAME);
    const data = attrs.byType.get(ATTR.DATA);
    if (protocolMinFailed(attrs) || name === undefined || !data || !data.nested) return err(IPSET_ERR.PROTOCOL);
    const set = this.store.find(name);
    if (typeof set === 'number') return err(set);
    const tb = parseStrict(data, TYPES.get(set.type)!.adtPolicy);
    if (!tb) return err(IPSET_ERR.PROTOCOL);
    const parsed = uadt(set, tb, 'test');
    // ip_set_utest folds every failure of the type's parser into "not a member".
    if (!parsed.ok) return err(IPSET_ERR.EXIST);
    const [el] = parsed.elems;
    return el && this.store.test(set, el, hostMask(set.family), parsed.nomatch) ? ok() : err(IPSET_ERR.EXIST);
  }

  #header(attrs: AttrList, to: ReplyTo): Outcome {
    const name = str(attrs, ATTR.SETNAME);
    if (protocolMinFailed(attrs) || name === undefined) return err(IPSET_ERR.PROTOCOL);
    const set = this.store.find(name);
    if (typeof set === 'number') return err(set);
    const w = reply(IPSET_CMD.HEADER, to);
    w.u8(ATTR.PROTOCOL, IPSET_PROTOCOL);
    w.str(ATTR.SETNAME, set.name);
    w.str(ATTR.TYPENAME, set.type);
    w.u8(ATTR.FAMILY, set.family);
    w.u8(ATTR.REVISION, set.revision);
    return ok([finish(w)]);
  }

  #type(attrs: AttrList, to: ReplyTo): Outcome {
    const typename = str(attrs, ATTR.TYPENAME);
    const fam = attrs.byType.get(ATTR.FAMILY);
    if (protocolMinFailed(attrs) || typename === undefined || !fam) return err(IPSET_ERR.PROTOCOL);
    const type = TYPES.get(typename);
    if (!type) return err(IPSET_ERR.FIND_TYPE);
    const w = reply(IPSET_CMD.TYPE, to);
    w.u8(ATTR.PROTOCOL, IPSET_PROTOCOL);
    w.str(ATTR.TYPENAME, typename);
    w.u8(ATTR.FAMILY, readU8(fam));
    w.u8(ATTR.REVISION, type.maxRevision);
    w.u8(ATTR.REVISION_MIN, type.minRevision);
    return ok([finish(w)]);
  }

  #getByName(attrs: AttrList, to: ReplyTo): Outcome {
    const name = str(attrs, ATTR.SETNAME);
    if (protocolFailed(attrs) || name === undefined) return err(IPSET_ERR.PROTOCOL);
    const set = this.store.find(name);
    if (typeof set === 'number') return err(set);
    const w = reply(IPSET_CMD.GET_BYNAME, to);
    w.u8(ATTR.PROTOCOL, IPSET_PROTOCOL);
    w.u8(ATTR.FAMILY, set.family);
    w.be16(ATTR.INDEX, set.index);
    return ok([finish(w)]);
  }

  #getByIndex(attrs: AttrList, to: ReplyTo): Outcome {
    const index = attrs.byType.get(ATTR.INDEX);
    if (protocolFailed(attrs) || !index) return err(IPSET_ERR.PROTOCOL);
    const set = this.store.slots[readBe16(index)];
    if (!set) return err(ERRNO.ENOENT);
    const w = reply(IPSET_CMD.GET_BYINDEX, to);
    w.u8(ATTR.PROTOCOL, IPSET_PROTOCOL);
    w.str(ATTR.SETNAME, set.name);
    return ok([finish(w)]);
  }
}

/**
 * checkTopLevel applies the command policies' length rules that nfnetlink enforces before ipset runs: names must be
 * NUL-terminated and at most 31 bytes, integers long enough; failures are -EINVAL.
 */
function checkTopLevel(attrs: AttrList): number {
  for (const a of attrs.all) {
    if (a.type === ATTR.SETNAME || a.type === ATTR.TYPENAME) {
      if (readNulString(a, NAME_MAX) === undefined) return ERRNO.EINVAL;
    } else if ((a.type === ATTR.PROTOCOL || a.type === ATTR.REVISION || a.type === ATTR.FAMILY) && a.len < 1) {
      return ERRNO.EINVAL;
    } else if ((a.type === ATTR.LINENO || a.type === ATTR.FLAGS) && a.len < 4) {
      return ERRNO.EINVAL;
    } else if (a.type === ATTR.INDEX && a.len < 2) {
      return ERRNO.EINVAL;
    }
  }
  return 0;
}

function str(attrs: AttrList, type: number): string | undefined {
  const a = attrs.byType.get(type);
  return a ? readNulString(a, NAME_MAX) : undefined;
}

function protocolMinFailed(attrs: AttrList): boolean {
  const p = attrs.byType.get(ATTR.PROTOCOL);
  return !p || readU8(p) < IPSET_PROTOCOL_MIN;
}

function protocolFailed(attrs: AttrList): boolean {
  const p = attrs.byType.get(ATTR.PROTOCOL);
  return !p || readU8(p) !== IPSET_PROTOCOL;
}

/**
 * sameSet is the kernel's test for "create of an existing set without NLM_F_EXCL is fine": same type, maxelem,
 * default timeout and extensions. Forceadd, hashsize, revision and even the family are not compared (checked
 * against 6.18: re-creating an inet hash:ip as inet6 without EXCL succeeds and keeps the inet set).
 */
function sameSet(a: SetState, b: SetState): boolean {
  return sameFields(a, b, ['type', 'maxelem', 'timeout', 'counters', 'comment', 'skbinfo']);
}

function roundPow2(n: number): number {
  let p = 1;
  while (p < n && p < 2 ** 31) p *= 2;
  return p;
}

function reply(cmd: number, to: ReplyTo): MsgWriter {
  const w = new MsgWriter(256);
  w.beginMessage((NFNL_SUBSYS_IPSET << 8) | cmd, 0, to.seq, to.pid);
  w.nfgen();
  return w;
}

function finish(w: MsgWriter): Uint8Array {
  w.endMessage(0);
  return w.take();
}

/** ack is the success ACK: NLMSG_ERROR 0 with only the request's header echoed (NLM_F_CAPPED). */
export function ack(msg: NlMsg, to: ReplyTo): Uint8Array {
  const w = new MsgWriter(64);
  w.beginMessage(NLMSG_ERROR, NLM_F_CAPPED, to.seq, to.pid);
  w.u32le(0);
  w.bytes(msg.bytes.subarray(0, NLMSG_HDRLEN));
  w.endMessage(0);
  return w.take();
}

/**
 * errorReply is NLMSG_ERROR with a negative errno and the whole request echoed; for a failed ADT entry the echo's
 * top-level LINENO carries the entry's LINENO bytes, as call_ad patches it.
 */
export function errorReply(msg: NlMsg, to: ReplyTo, errno: number, lineno?: Uint8Array): Uint8Array {
  const w = new MsgWriter(msg.len + 32);
  w.beginMessage(NLMSG_ERROR, 0, to.seq, to.pid);
  w.u32le(errno);
  const echoAt = w.length;
  w.bytes(msg.bytes);
  w.endMessage(0);
  const out = w.take();
  if (lineno) {
    const echoed = parseAttrs(out, echoAt + NLMSG_HDRLEN + NFGENMSG_LEN, out.length);
    const at = echoed.byType.get(ATTR.LINENO);
    if (at && at.len >= 4) out.set(lineno.subarray(0, 4), at.off);
  }
  return out;
}
