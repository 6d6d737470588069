/** Public types of the ipset client. */

/** Set types whose entries podnet encodes and decodes. */
export type IpsetType = 'hash:ip' | 'hash:net' | 'hash:ip,port';
export type IpsetFamily = 'inet' | 'inet6';
/** Protocols for hash:ip,port entries, by name or number. */
export type IpsetProto = 'tcp' | 'udp' | 'sctp' | 'udplite' | 'icmp' | 'icmpv6' | number;

/** An entry as given to add/del/test. Which fields are allowed depends on the set's type and extensions. */
export interface IpsetEntry {
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

/** An entry as a dump returns it. */
export interface IpsetListedEntry {
  ip: string;
  cidr?: number;
  port?: number;
  proto?: IpsetProto;
  comment?: string;
  /** Seconds left (sets with a timeout). */
  timeout?: number;
  bytes?: number;
  packets?: number;
  nomatch?: boolean;
}

export interface IpsetCreateOptions {
  type: IpsetType;
  family?: IpsetFamily;
  comment?: boolean;
  /** Default timeout of entries, seconds; enables the timeout extension. */
  timeout?: number;
  counters?: boolean;
  maxelem?: number;
  hashsize?: number;
}

/** A set's header. `type` is the kernel's raw type name, also for types podnet does not decode. */
export interface IpsetHeader {
  name: string;
  type: string;
  family: IpsetFamily | 'unspec';
  revision: number;
  references: number;
  maxelem: number;
  hashsize: number;
  elements: number;
  memsize: number;
  comment: boolean;
  /** Default timeout in seconds when the set has the timeout extension. */
  timeout: number | undefined;
  counters: boolean;
  /** False for set types podnet does not decode: list() then returns no entries. */
  decoded: boolean;
}

export interface IpsetListing extends IpsetHeader {
  entries: IpsetListedEntry[];
}

export interface IpsetBatchFailure {
  index: number;
  entry: IpsetEntry;
  error: Error;
}

export interface IpsetBatchResult {
  applied: number;
  failed: IpsetBatchFailure[];
}
