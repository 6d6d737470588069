/**
 * One nf_tables request message as the handlers see it: its header, family and top-level attributes (the last of
 * each type wins, as nla_parse), plus the checks every handler shares: names (NLA_STRING of at most 255 bytes),
 * user data (NLA_BINARY of at most 256), big-endian integers, and the error a failed check answers with.
 */
import { type Attr, type AttrTable, type NlMsg, parseAttrs } from '../netlink-kernel/codec.js';
import { type KernelError, attrOffset } from '../netlink-kernel/replies.js';
import { E, NFGENMSG_LEN, NFT_USERDATA_MAXLEN, NLMSG_HDRLEN } from './constants.js';

export interface Request {
  msg: NlMsg;
  family: number;
  attrs: AttrTable;
}

/** parseRequest reads nfgenmsg and the attributes after it; undefined when the payload is shorter than nfgenmsg. */
export function parseRequest(msg: NlMsg): Request | undefined {
  if (msg.len < NLMSG_HDRLEN + NFGENMSG_LEN) return undefined;
  const family = msg.bytes[NLMSG_HDRLEN] ?? 0;
  return { msg, family, attrs: parseAttrs(msg.bytes, NLMSG_HDRLEN + NFGENMSG_LEN, msg.len).byType };
}

/** Failure is a kernel error thrown by a handler; the batch turns it into the message's error reply. */
export class Failure extends Error {
  constructor(readonly error: KernelError) {
    super(`errno ${error.errno}`);
  }
}

/** fail throws the errno, with the offending attribute's offset (NL_SET_BAD_ATTR) when one is named. */
export function fail(errno: number, bad?: Attr): never {
  throw new Failure(bad ? { errno, offset: attrOffset(bad) } : { errno });
}

/** nameOf reads an NLA_STRING name: ERANGE past 255 bytes (the NUL not counted); undefined when absent. */
export function nameOf(a: Attr | undefined): string | undefined {
  if (!a) return undefined;
  let len = a.len;
  if (len > 0 && a.buf[a.off + len - 1] === 0) len--;
  if (len > 255) fail(E.ERANGE, a);
  // nla_strdup stops at the first NUL.
  let end = a.off;
  while (end < a.off + len && a.buf[end] !== 0) end++;
  return a.buf.toString('utf8', a.off, end);
}

/** requiredName is nameOf for an attribute a lookup needs: EINVAL when it is missing. */
export function requiredName(a: Attr | undefined): string {
  const name = nameOf(a);
  if (name === undefined) fail(E.EINVAL);
  return name;
}

/** named returns what attribute a names in map: EINVAL when a is missing, ENOENT (pointing at a) when nothing has the name. */
export function named<T>(map: ReadonlyMap<string, T>, a: Attr | undefined): T {
  const found = map.get(requiredName(a));
  if (!found) fail(E.ENOENT, a);
  return found;
}

/** be32 reads a 4-byte big-endian attribute (NLA_U32 policy: ERANGE... EINVAL when shorter). */
export function be32(a: Attr): number {
  if (a.len < 4) fail(E.EINVAL, a);
  return a.buf.readUInt32BE(a.off);
}

export function be64(a: Attr): bigint {
  if (a.len < 8) fail(E.EINVAL, a);
  return a.buf.readBigUInt64BE(a.off);
}

/** udataOf copies a user data attribute (NLA_BINARY, at most 256 bytes: ERANGE past it). */
export function udataOf(a: Attr | undefined): Uint8Array | undefined {
  if (!a) return undefined;
  if (a.len > NFT_USERDATA_MAXLEN) fail(E.ERANGE, a);
  return Uint8Array.from(a.value);
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/**
 * byHandle finds the object a NFTA_*_HANDLE attribute names among objects: ENOENT naming the attribute when none
 * has that handle.
 */
export function byHandle<T extends { handle: bigint }>(objects: ReadonlyMap<string, T>, attr: Attr): T {
  const handle = be64(attr);
  const found = [...objects.values()].find((o) => o.handle === handle);
  if (!found) fail(E.ENOENT, attr);
  return found;
}

/**
 * byName finds the object a name attribute names among objects: ENOENT naming the attribute when there is none.
 */
export function byName<T>(objects: ReadonlyMap<string, T>, attr: Attr): T {
  const found = objects.get(nameOf(attr)!);
  if (found === undefined) fail(E.ENOENT, attr);
  return found;
}

/**
 * toDelete finds what a delete names, by handle when it carries one and by name otherwise, as the kernel's
 * nf_tables_del* do: EINVAL when it carries neither, ENOENT naming the attribute when nothing matches.
 */
export function toDelete<T extends { handle: bigint }>(objects: ReadonlyMap<string, T>, handleAttr: Attr | undefined, nameAttr: Attr | undefined): T {
  if (handleAttr) return byHandle(objects, handleAttr);
  if (!nameAttr) fail(E.EINVAL);
  return byName(objects, nameAttr);
}
