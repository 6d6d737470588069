/**
 * The messages nf_tables answers GET requests and dumps with (nf_tables_fill_table_info, _chain_info, _set,
 * _rule_info, the set element dump and nf_tables_fill_gen_info), attribute for attribute in the kernel's order:
 * big-endian integers without NLA_F_NET_BYTEORDER, nests without NLA_F_NESTED, the generation in nfgenmsg.res_id.
 */
import { MsgWriter, align4 } from '../netlink-kernel/codec.js';
import type { ReplyTo } from '../netlink-kernel/replies.js';
import {
  NFNL_SUBSYS_NFTABLES,
  NFT_MSG,
  NFTA_CHAIN,
  NFTA_DATA,
  NFTA_GEN,
  NFTA_DEVICE_NAME,
  NFTA_HOOK,
  NFTA_LIST_ELEM,
  NFTA_RULE,
  NFTA_SET,
  NFTA_SET_ELEM,
  NFTA_SET_ELEM_LIST,
  NFTA_TABLE,
  NFT_CHAIN_BASE,
} from './constants.js';
import type { ChainObj, ElementObj, RuleObj, SetObj, TableObj } from './model.js';
import { tableUse } from './tables.js';

/** What nf_tables prints as NFTA_SET_TYPE on 6.18 (a hashed pointer of the set's ops); opaque to everyone. */
const SET_TYPE_TEXT = '0xffffffff82508880';

export function attr(type: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(align4(4 + payload.byteLength));
  const v = new DataView(out.buffer);
  v.setUint16(0, 4 + payload.byteLength, true);
  v.setUint16(2, type, true);
  out.set(payload, 4);
  return out;
}

export function u32(v: number): Uint8Array {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
}

export function u64(v: bigint): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(v);
  return b;
}

export function str(s: string): Uint8Array {
  return Buffer.concat([Buffer.from(s, 'utf8'), Buffer.alloc(1)]);
}

export function concat(parts: Uint8Array[]): Uint8Array {
  return Buffer.concat(parts);
}

/** Writes one nf_tables message: nlmsghdr, nfgenmsg with the generation in res_id, then the attributes. */
export function message(to: ReplyTo, msg: number, flags: number, family: number, genId: number, attrs: Uint8Array[]): Uint8Array {
  const w = new MsgWriter(256);
  const at = w.beginMessage((NFNL_SUBSYS_NFTABLES << 8) | msg, flags, to.seq, to.pid);
  w.bytes(Uint8Array.of(family, 0, (genId >> 8) & 0xff, genId & 0xff));
  for (const a of attrs) w.bytes(a);
  w.endMessage(at);
  return w.take();
}

export function tableAttrs(t: TableObj): Uint8Array[] {
  const out = [attr(NFTA_TABLE.NAME, str(t.name)), attr(NFTA_TABLE.USE, u32(tableUse(t))), attr(NFTA_TABLE.HANDLE, u64(t.handle)), attr(NFTA_TABLE.FLAGS, u32(t.flags))];
  if (t.udata) out.push(attr(NFTA_TABLE.USERDATA, t.udata));
  return out;
}

export function chainAttrs(t: TableObj, c: ChainObj): Uint8Array[] {
  const out = [attr(NFTA_CHAIN.TABLE, str(t.name)), attr(NFTA_CHAIN.NAME, str(c.name)), attr(NFTA_CHAIN.HANDLE, u64(c.handle))];
  if (c.base) {
    const hook = [attr(NFTA_HOOK.HOOKNUM, u32(c.base.hook)), attr(NFTA_HOOK.PRIORITY, u32(c.base.priority))];
    // A chain on devices lists them (an empty list when it has none), and the one alone again as NFTA_HOOK_DEV.
    const devs = c.base.devices;
    if (devs) {
      hook.push(attr(NFTA_HOOK.DEVS, concat(devs.map((d) => attr(NFTA_DEVICE_NAME, str(d))))));
      if (devs.length === 1) hook.push(attr(NFTA_HOOK.DEV, str(devs[0]!)));
    }
    out.push(attr(NFTA_CHAIN.HOOK, concat(hook)));
    out.push(attr(NFTA_CHAIN.POLICY, u32(c.base.policy)), attr(NFTA_CHAIN.TYPE, str(c.base.type)), attr(NFTA_CHAIN.FLAGS, u32(NFT_CHAIN_BASE)));
  }
  // A chain is in use by its own rules and by the jumps to it.
  out.push(attr(NFTA_CHAIN.USE, u32(c.rules.length + c.refs)));
  if (c.udata) out.push(attr(NFTA_CHAIN.USERDATA, c.udata));
  return out;
}

export function setAttrs(t: TableObj, s: SetObj): Uint8Array[] {
  const out = [attr(NFTA_SET.TABLE, str(t.name)), attr(NFTA_SET.NAME, str(s.name)), attr(NFTA_SET.HANDLE, u64(s.handle))];
  if (s.flags !== 0) out.push(attr(NFTA_SET.FLAGS, u32(s.flags)));
  out.push(attr(NFTA_SET.KEY_TYPE, u32(s.keyType)), attr(NFTA_SET.KEY_LEN, u32(s.keyLen)));
  if (s.dataType !== 0 || s.dataLen !== 0) out.push(attr(NFTA_SET.DATA_TYPE, u32(s.dataType)), attr(NFTA_SET.DATA_LEN, u32(s.dataLen)));
  if (s.policy !== undefined && s.policy !== 0) out.push(attr(NFTA_SET.POLICY, u32(s.policy)));
  if (s.udata) out.push(attr(NFTA_SET.USERDATA, s.udata));
  out.push(attr(NFTA_SET.DESC, s.size ? attr(1, u32(s.size)) : new Uint8Array(0)));
  out.push(attr(NFTA_SET.TYPE, str(SET_TYPE_TEXT)), attr(NFTA_SET.COUNT, u32(s.elements.size)));
  return out;
}

/** ruleAttrs: POSITION is the handle of the rule before it, as the kernel dumps it. */
export function ruleAttrs(t: TableObj, c: ChainObj, r: RuleObj, prev: RuleObj | undefined): Uint8Array[] {
  const out = [attr(NFTA_RULE.TABLE, str(t.name)), attr(NFTA_RULE.CHAIN, str(c.name)), attr(NFTA_RULE.HANDLE, u64(r.handle))];
  if (prev) out.push(attr(NFTA_RULE.POSITION, u64(prev.handle)));
  out.push(attr(NFTA_RULE.EXPRESSIONS, r.expressions));
  if (r.udata) out.push(attr(NFTA_RULE.USERDATA, r.udata));
  return out;
}

export function elementAttr(e: ElementObj): Uint8Array {
  const parts = [attr(NFTA_SET_ELEM.KEY, attr(NFTA_DATA.VALUE, e.key))];
  if (e.data) parts.push(attr(NFTA_SET_ELEM.DATA, e.data));
  if (e.flags !== 0) parts.push(attr(NFTA_SET_ELEM.FLAGS, u32(e.flags)));
  if (e.udata) parts.push(attr(NFTA_SET_ELEM.USERDATA, e.udata));
  return attr(NFTA_LIST_ELEM, concat(parts));
}

export function elementsAttrs(t: TableObj, s: SetObj, elements: Uint8Array[]): Uint8Array[] {
  return [attr(NFTA_SET_ELEM_LIST.TABLE, str(t.name)), attr(NFTA_SET_ELEM_LIST.SET, str(s.name)), attr(NFTA_SET_ELEM_LIST.ELEMENTS, concat(elements))];
}

export function genMessage(to: ReplyTo, genId: number, pid: number, procName: string): Uint8Array {
  return message(to, NFT_MSG.NEWGEN, 0, 0, genId, [attr(NFTA_GEN.ID, u32(genId)), attr(NFTA_GEN.PROC_PID, u32(pid)), attr(NFTA_GEN.PROC_NAME, str(procName))]);
}
