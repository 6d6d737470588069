/**
 * Netlink constants every fake kernel speaks, whatever its family: the message header, its flags, attribute flags,
 * the extended ACK attributes and the nfgenmsg header of the netfilter families. Names follow linux/netlink.h and
 * linux/netfilter/nfnetlink.h; each family's own constants live next to its fake.
 */

export const NLMSG_HDRLEN = 16;
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
export const NLMSG_MIN_TYPE = 0x10;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_ROOT = 0x100;
export const NLM_F_MATCH = 0x200;
export const NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH;
export const NLM_F_REPLACE = 0x100;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
export const NLM_F_APPEND = 0x800;
/** Flags of an error message: the echo was cut to the header, and TLVs follow it. */
export const NLM_F_CAPPED = 0x100;
export const NLM_F_ACK_TLVS = 0x200;

/** Extended ACK attributes (enum nlmsgerr_attrs). */
export const NLMSGERR_ATTR_MSG = 1;
export const NLMSGERR_ATTR_OFFS = 2;
export const NLMSGERR_ATTR_POLICY = 4;

export const NLA_F_NESTED = 0x8000;
export const NLA_F_NET_BYTEORDER = 0x4000;
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;

/** NFGENMSG_LEN is the size of the nfgenmsg header that follows nlmsghdr in every nfnetlink message. */
export const NFGENMSG_LEN = 4;

export const AF_UNSPEC = 0;
export const AF_INET = 2;
export const AF_INET6 = 10;

/**
 * DEFAULT_DUMP_PAGE is the room of one dump datagram in bytes: what a 6.18 kernel fills when the reader's buffer is
 * 32 KiB or more.
 */
export const DEFAULT_DUMP_PAGE = 32448;

/**
 * namedConstants pairs each of keys with its value in table and its kernel name (prefix_KEY), for the lists of
 * attributes a fake refuses by name.
 */
export function namedConstants<K extends string>(prefix: string, table: Readonly<Record<K, number>>, keys: readonly K[]): readonly [number, string][] {
  return keys.map((k) => [table[k], `${prefix}_${k}`]);
}
