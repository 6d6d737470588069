/**
 * Kernel constants of nf_tables over nfnetlink as the fake needs them. Names follow linux/netfilter/nfnetlink.h and
 * linux/netfilter/nf_tables.h; the attribute order of dump messages and the error codes were checked against a
 * 6.18 kernel (test/fixtures/nftables/replies.hex, and test/nftables/kernel-contract.test.ts).
 */
export {
  NLA_F_NESTED,
  NLM_F_ACK,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_MULTI,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLMSG_MIN_TYPE,
} from '../netlink-kernel/constants.js';

/** NLM_F_NONREC: a delete that refuses to take what the object holds with it (EBUSY instead). */
export const NLM_F_NONREC = 0x100;

export { NFGENMSG_LEN } from '../netlink-kernel/constants.js';
export const NFNL_SUBSYS_NFTABLES = 10;
export const NFNL_MSG_BATCH_BEGIN = 16;
export const NFNL_MSG_BATCH_END = 17;
/** NFNL_BATCH_GENID: the generation a batch was built against (ERESTART when it moved on). */
export const NFNL_BATCH_GENID = 1;

export const NFT_MSG = {
  NEWTABLE: 0,
  GETTABLE: 1,
  DELTABLE: 2,
  NEWCHAIN: 3,
  GETCHAIN: 4,
  DELCHAIN: 5,
  NEWRULE: 6,
  GETRULE: 7,
  DELRULE: 8,
  NEWSET: 9,
  GETSET: 10,
  DELSET: 11,
  NEWSETELEM: 12,
  GETSETELEM: 13,
  DELSETELEM: 14,
  NEWGEN: 15,
  GETGEN: 16,
} as const;
/** Message types of the subsystem the kernel has callbacks for in 6.18 (NFT_MSG_MAX); past it is EINVAL. */
export const NFT_MSG_MAX = 36;
/** Messages that only a batch may carry (NFNL_CB_BATCH); the GET* are answered outside of batches. */
export const BATCH_ONLY = new Set<number>([0, 2, 3, 5, 6, 8, 9, 11, 12, 14]);

export const NFTA_TABLE = { NAME: 1, FLAGS: 2, USE: 3, HANDLE: 4, USERDATA: 6 } as const;
export const NFT_TABLE_F_DORMANT = 0x1;
export const NFT_TABLE_F_OWNER = 0x2;
export const NFT_TABLE_F_PERSIST = 0x4;
export const NFT_TABLE_F_MASK = 0x7;

export const NFTA_CHAIN = { TABLE: 1, HANDLE: 2, NAME: 3, HOOK: 4, POLICY: 5, USE: 6, TYPE: 7, COUNTERS: 8, FLAGS: 10, ID: 11, USERDATA: 12 } as const;
export const NFTA_HOOK = { HOOKNUM: 1, PRIORITY: 2, DEV: 3, DEVS: 4 } as const;
/** NFTA_DEVICE_NAME: one device of NFTA_HOOK_DEVS. */
export const NFTA_DEVICE_NAME = 1;
export const NFT_CHAIN_BASE = 0x1;

export const NFTA_RULE = { TABLE: 1, CHAIN: 2, HANDLE: 3, EXPRESSIONS: 4, POSITION: 6, USERDATA: 7, ID: 9, POSITION_ID: 10, CHAIN_ID: 11 } as const;
export const NFTA_LIST_ELEM = 1;
export const NFTA_EXPR = { NAME: 1, DATA: 2 } as const;
export const NFTA_IMMEDIATE = { DREG: 1, DATA: 2 } as const;
export const NFTA_LOOKUP = { SET: 1, SREG: 2, DREG: 3, SET_ID: 4, FLAGS: 5 } as const;
export const NFTA_DATA = { VALUE: 1, VERDICT: 2 } as const;
export const NFTA_VERDICT = { CODE: 1, CHAIN: 2, CHAIN_ID: 3 } as const;
/** NFTA_SET_DATA_TYPE of a verdict map. */
export const NFT_DATA_VERDICT = 0xffffff00;
/** sizeof(struct nft_verdict) on a 64-bit kernel: a verdict map's data length, whatever NFTA_SET_DATA_LEN says. */
export const NFT_VERDICT_LEN = 16;
export const NFT_JUMP = -3;
export const NFT_GOTO = -4;
/**
 * The verdicts without a chain that nft_verdict_init takes: NF_DROP, NF_ACCEPT, NFT_CONTINUE, NFT_BREAK, NFT_RETURN.
 * NF_QUEUE is refused (EINVAL; nft writes a queue as the queue expression), as is a code with a parameter.
 */
export const PLAIN_VERDICTS: ReadonlySet<number> = new Set([0, 1, -1, -2, -5]);

export const NFTA_SET = {
  TABLE: 1,
  NAME: 2,
  FLAGS: 3,
  KEY_TYPE: 4,
  KEY_LEN: 5,
  DATA_TYPE: 6,
  DATA_LEN: 7,
  POLICY: 8,
  DESC: 9,
  ID: 10,
  TIMEOUT: 11,
  USERDATA: 13,
  HANDLE: 16,
  TYPE: 19,
  COUNT: 20,
} as const;
export const NFT_SET_ANONYMOUS = 0x1;
export const NFT_SET_CONSTANT = 0x2;
export const NFT_SET_INTERVAL = 0x4;
export const NFT_SET_MAP = 0x8;
export const NFT_SET_TIMEOUT = 0x10;
export const NFT_SET_EVAL = 0x20;
export const NFT_SET_OBJECT = 0x40;
export const NFT_SET_CONCAT = 0x80;
export const NFT_SET_EXPR = 0x100;
/** The flags a set may be created with (NFT_SET_FLAGS_MASK... every bit the 6.18 kernel defines). */
export const NFT_SET_FLAGS_MASK = 0x1ff;

export const NFTA_SET_ELEM_LIST = { TABLE: 1, SET: 2, ELEMENTS: 3, SET_ID: 4 } as const;
export const NFTA_SET_ELEM = { KEY: 1, DATA: 2, FLAGS: 3, TIMEOUT: 4, EXPIRATION: 5, USERDATA: 6, KEY_END: 10 } as const;
export const NFT_SET_ELEM_INTERVAL_END = 0x1;

export const NFTA_GEN = { ID: 1, PROC_PID: 2, PROC_NAME: 3 } as const;

/** The longest name (NFT_NAME_MAXLEN - 1), user data (NFT_USERDATA_MAXLEN) and key (NFT_DATA_VALUE_MAXLEN). */
export const NFT_NAME_MAXLEN = 256;
export const NFT_USERDATA_MAXLEN = 256;
export const NFT_DATA_VALUE_MAXLEN = 64;
export const NFT_TABLE_MAXNAMELEN = 256;
/** Rules hold at most this many expressions (NFT_RULE_MAXEXPRS). */
export const NFT_RULE_MAXEXPRS = 128;

/** The families nf_tables has tables for; others are EAFNOSUPPORT. */
export const NFPROTO = { UNSPEC: 0, INET: 1, IPV4: 2, ARP: 3, NETDEV: 5, BRIDGE: 7, IPV6: 10 } as const;
export const FAMILIES = new Set<number>([1, 2, 3, 5, 7, 10]);

/** Chain types registered per family (nft_chain_filter, nft_chain_nat, nft_chain_route), with the hooks they take. */
export const CHAIN_TYPES: Readonly<Record<number, Readonly<Record<string, readonly number[]>>>> = {
  1: { filter: [0, 1, 2, 3, 4, 5], nat: [0, 1, 3, 4], route: [3] },
  2: { filter: [0, 1, 2, 3, 4], nat: [0, 1, 3, 4], route: [3] },
  10: { filter: [0, 1, 2, 3, 4], nat: [0, 1, 3, 4], route: [3] },
  3: { filter: [0, 1] },
  7: { filter: [0, 1, 2, 3, 4] },
  5: { filter: [0, 1] },
};

/**
 * The expression types a 6.18 kernel with this configuration knows (nft_expr_type_get): the core ones and every
 * CONFIG_NFT_* built in. A name not here is ENOENT, as the kernel's after its module autoload fails.
 */
export const EXPRESSIONS = new Set<string>([
  'immediate', 'cmp', 'lookup', 'bitwise', 'byteorder', 'payload', 'dynset', 'range', 'meta', 'rt', 'exthdr',
  'last', 'counter', 'objref', 'inner', 'ct', 'notrack', 'numgen', 'connlimit', 'log', 'limit', 'masq', 'redir',
  'nat', 'tunnel', 'quota', 'reject', 'match', 'target', 'hash', 'fib', 'xfrm', 'socket', 'osf', 'tproxy',
  'synproxy', 'dup', 'fwd',
]);

// E is the errno table every fake kernel shares, under the short name the nf_tables files use.
export { ERRNO as E } from '../netlink-kernel/errno.js';
