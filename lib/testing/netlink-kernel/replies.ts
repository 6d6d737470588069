/**
 * The replies every fake kernel sends a socket with NETLINK_EXT_ACK on: the ACK, and NLMSG_ERROR with the request
 * echoed and the extended ACK TLVs after it, which point at the offending attribute by its offset.
 */
import { type Attr, type NlMsg, MsgWriter, align4, u32attr } from './codec.js';
import {
  NLA_F_NESTED,
  NLM_F_ACK_TLVS,
  NLM_F_CAPPED,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLMSGERR_ATTR_MSG,
  NLMSGERR_ATTR_OFFS,
  NLMSGERR_ATTR_POLICY,
} from './constants.js';

/** ReplyTo is where answers to a request go: its seq, and the port id the kernel would put in nlmsg_pid. */
export interface ReplyTo {
  seq: number;
  pid: number;
}

/**
 * ExtAck is what the kernel's netlink_ext_ack carries into an error reply: a message, the offset of the offending
 * attribute from the start of the request, and that attribute's policy (NLMSGERR_ATTR_POLICY payload).
 */
export interface ExtAck {
  msg?: string;
  offset?: number;
  policy?: Uint8Array;
}

/** KernelError is a failed request: a positive errno and what the extended ACK says about it. */
export interface KernelError extends ExtAck {
  errno: number;
}

/** fail builds a KernelError; most of the kernel's checks have a message, some only an errno. */
export function fail(errno: number, msg?: string): KernelError {
  return msg === undefined ? { errno } : { errno, msg };
}

/**
 * attrOffset is where attribute a starts within its message (NLMSGERR_ATTR_OFFS); a must come from parseAttrs over
 * the message's own bytes, whose offsets count from the nlmsghdr.
 */
export function attrOffset(a: Attr): number {
  return a.off - 4;
}

/** ack is the success reply of an EXT_ACK socket: error 0 and only the request's nlmsghdr, NLM_F_CAPPED. */
export function ack(msg: NlMsg, to: ReplyTo): Uint8Array {
  const w = new MsgWriter(64);
  const at = w.beginMessage(NLMSG_ERROR, NLM_F_CAPPED, to.seq, to.pid);
  w.u32le(0);
  w.bytes(msg.bytes.subarray(0, NLMSG_HDRLEN));
  w.endMessage(at);
  return w.take();
}

/**
 * errorReply is NLMSG_ERROR with -errno, the whole request echoed (padded to 4 bytes, its own nlmsg_len kept), and
 * the extended ACK TLVs after it; NLM_F_ACK_TLVS is set exactly when there are TLVs.
 */
export function errorReply(msg: NlMsg, to: ReplyTo, e: KernelError): Uint8Array {
  const tlvs = e.msg !== undefined || e.offset !== undefined || e.policy !== undefined;
  const w = new MsgWriter(msg.len + 128);
  const at = w.beginMessage(NLMSG_ERROR, tlvs ? NLM_F_ACK_TLVS : 0, to.seq, to.pid);
  w.u32le(-Math.abs(e.errno));
  w.bytes(msg.bytes);
  w.bytes(new Uint8Array(align4(msg.len) - msg.len));
  if (e.msg !== undefined) w.str(NLMSGERR_ATTR_MSG, e.msg);
  if (e.offset !== undefined) u32attr(w, NLMSGERR_ATTR_OFFS, e.offset);
  if (e.policy !== undefined) w.raw(NLMSGERR_ATTR_POLICY | NLA_F_NESTED, e.policy);
  w.endMessage(at);
  return w.take();
}
