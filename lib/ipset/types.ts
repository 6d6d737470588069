/** Public types of the ipset client. */

/** IpsetType names the set types whose entries podnet encodes and decodes. */
export type IpsetType = 'hash:ip' | 'hash:net' | 'hash:ip,port';
/** IpsetFamily is a set's address family: 'inet' (IPv4) or 'inet6' (IPv6). */
export type IpsetFamily = 'inet' | 'inet6';
/** IpsetProto is the protocol of a hash:ip,port entry, by name or number. */
export type IpsetProto = 'tcp' | 'udp' | 'sctp' | 'udplite' | 'icmp' | 'icmpv6' | number;

/**
 * IpsetEntry is an entry as given to add/del/test. Which fields are allowed depends on the set's type and extensions:
 * a field the set lacks is refused with InvalidArgumentError before anything is sent.
 */
export interface IpsetEntry {
  /** The address, canonical (IPv6 compressed, no zone), of the set's family. */
  ip: string;
  /** hash:net only: prefix length (also accepted as "ip/cidr"). */
  cidr?: number;
  /** hash:ip,port only. */
  port?: number;
  /** hash:ip,port only; default 'tcp' as the ipset CLI does. */
  proto?: IpsetProto;
  /** Sets created with `comment: true` only; at most 255 bytes, no NUL. */
  comment?: string;
  /** Sets created with a timeout only; seconds, 0 = never expires. */
  timeout?: number;
}

/** IpsetListedEntry is an entry as a dump returns it; fields the set type or its extensions lack are absent. */
export interface IpsetListedEntry {
  /** The address (IPv6 compressed). */
  ip: string;
  /** The prefix length (hash:net). */
  cidr?: number;
  /** The port, or ICMP type << 8 | code (hash:ip,port). */
  port?: number;
  /** The protocol of port (hash:ip,port). */
  proto?: IpsetProto;
  /** The entry's comment (sets with comments). */
  comment?: string;
  /** Seconds left (sets with a timeout). */
  timeout?: number;
  /** The byte counter (sets with counters). */
  bytes?: number;
  /** The packet counter (sets with counters). */
  packets?: number;
  /** A hash:net entry that excludes its prefix from a larger one. */
  nomatch?: boolean;
}

/** IpsetCreateOptions describe a set to create: its type, family and extensions. */
export interface IpsetCreateOptions {
  /** The set type. */
  type: IpsetType;
  /** The address family (default 'inet'). */
  family?: IpsetFamily;
  /** Entries may have comments (the comment extension). */
  comment?: boolean;
  /** Default timeout of entries, seconds; enables the timeout extension. */
  timeout?: number;
  /** Entries count packets and bytes (the counters extension). */
  counters?: boolean;
  /** The most entries the set takes (the kernel's default 65536). */
  maxelem?: number;
  /** The initial hash size (the kernel's default 1024; it grows the hash as entries are added). */
  hashsize?: number;
}

/** IpsetHeader is a set's header. `type` is the kernel's raw type name, also for types podnet does not decode. */
export interface IpsetHeader {
  /** The set's name. */
  name: string;
  /** The kernel's type name ('hash:ip', 'bitmap:port', ...). */
  type: string;
  /** The address family ('unspec' for types without one). */
  family: IpsetFamily | 'unspec';
  /** The type revision the set was created with. */
  revision: number;
  /** How many iptables rules (or other sets) reference the set; a referenced set cannot be destroyed. */
  references: number;
  /** The most entries the set takes. */
  maxelem: number;
  /** The current hash size. */
  hashsize: number;
  /** How many entries the set holds. */
  elements: number;
  /** The kernel memory the set uses, bytes. */
  memsize: number;
  /** Whether entries may have comments. */
  comment: boolean;
  /** Default timeout in seconds when the set has the timeout extension. */
  timeout: number | undefined;
  /** Whether entries count packets and bytes. */
  counters: boolean;
  /** False for set types podnet does not decode: list() then returns no entries. */
  decoded: boolean;
}

/** IpsetListing is a set as list() returns it: its header and its entries. */
export interface IpsetListing extends IpsetHeader {
  /** The entries, in the kernel's dump order (none when `decoded` is false). */
  entries: IpsetListedEntry[];
}

/** IpsetBatchFailure is one entry of a batch that was not applied, and why. */
export interface IpsetBatchFailure {
  /** The entry's position in the batch (0-based). */
  index: number;
  /** The entry, as given. */
  entry: IpsetEntry;
  /** Why: an IpsetError from the kernel (`IPSET_ERR_EXIST` on an add, `IPSET_ERR_ENTRY_MISSING` on a del, ...), or an InvalidArgumentError for a streamed entry. */
  error: Error;
}

/** IpsetBatchResult is what addMany / delMany did: how many entries were applied, and each one that was not. */
export interface IpsetBatchResult {
  /** How many entries the kernel applied. */
  applied: number;
  /** The entries that were not applied, in batch order. */
  failed: IpsetBatchFailure[];
}
