/**
 * The one place that loads the addon and types its raw surface. Everything
 * else imports {@link native}; nothing else calls require() on a .node file.
 *
 * node-gyp-build finds the binary: a source build in build/Release first, else
 * the prebuild in prebuilds/<platform>-<arch>/ that matches this libc (what an
 * installed package carries). PODNET_ADDON_PATH names the file instead (the
 * sanitizer build lives apart, in build-asan/).
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { PodnetError, errorFromNative, type NativeErrorFields } from './errors.js';

/** A namespace fd with its identity, as netnsOpen/netnsIdentify return it. */
export interface RawNetns {
  fd: number;
  dev: number;
  ino: number;
}

/** A set header as the addon reports it (numbers as the kernel sends them). */
export interface RawSetHeader {
  name: string;
  type: string;
  family: number;
  revision: number;
  hasData: boolean;
  hashsize: number;
  maxelem: number;
  references: number;
  elements: number;
  memsize: number;
  bucketsize: number;
  cadtFlags: number;
  timeout?: number;
  decoded: boolean;
}

export interface RawCreateSpec {
  name: string;
  type: string;
  family: number;
  hashsize?: number;
  maxelem?: number;
  timeout?: number;
  cadtFlags: number;
  exist: boolean;
}

/**
 * [applied, index, error, index, error, ...]: the number of entries applied, then pairs of failed entries. One typed
 * array and no object, so a single add's answer costs no property keys at the N-API boundary.
 */
export type RawAdtResult = Uint32Array;

export interface RawListResult {
  sets: RawSetHeader[];
  records: Buffer;
  count: number;
}

export interface RawEntriesChunk {
  header?: RawSetHeader;
  records: Buffer;
  count: number;
  done: boolean;
}

type MaybeSync<T, S extends boolean> = S extends true ? T : Promise<T>;

/** Where each field of a sync channel's frame lives (native/ipset/sync_channel.h). */
export interface RawSyncFrameLayout {
  result: number;
  command: number;
  flags: number;
  nameLength: number;
  name: number;
  record: number;
  bytes: number;
  /** The flags bit for NLM_F_EXCL. */
  excl: number;
}

/** One netlink session speaking ipset (native/ipset/ipset_binding.cc). */
export interface RawIpsetHandle {
  protocol<S extends boolean>(sync: S): MaybeSync<number, S>;
  create<S extends boolean>(spec: RawCreateSpec, sync: S): MaybeSync<void, S>;
  /** wholeSetCommand sends a command on whole sets by name: destroy, flush (name '' for all), rename, swap (name2). */
  wholeSetCommand<S extends boolean>(cmd: number, name: string, name2: string, excl: boolean, sync: S): MaybeSync<void, S>;
  /** records are read in place (on a worker when async): do not write them until the call settles. */
  adt<S extends boolean>(cmd: number, name: string, records: Uint8Array, excl: boolean, sync: S): MaybeSync<RawAdtResult, S>;
  /**
   * syncChannel(frame) returns a function of no arguments that sends the ADD or DEL written in frame (laid out as
   * ipsetSyncFrame, at least its `bytes` long) and writes the entry's kernel error, or 0, at its `result`. It
   * throws for a closed handle, a malformed frame or a system error. close() reaches it too.
   */
  syncChannel(frame: Uint8Array): () => void;
  test<S extends boolean>(name: string, record: Uint8Array, sync: S): MaybeSync<boolean, S>;
  list<S extends boolean>(name: string, flags: number, sync: S): MaybeSync<RawListResult, S>;
  entries(name: string | null, maxRecords: number): Promise<RawEntriesChunk>;
  setTimeout(ms: number): void;
  close(): void;
}

/** An attribute the route codec does not decode (native/rtnetlink/objects.h). */
export interface RawRtAttr {
  type: number;
  data: Buffer;
}

export interface RawLink {
  index: number;
  name: string;
  type: number;
  flags: number;
  mtu?: number;
  operstate: number;
  address?: string;
  kind?: string;
  master?: number;
  unknown: RawRtAttr[];
}

export interface RawAddress {
  family: number;
  address: string;
  prefixLength: number;
  index: number;
  scope: number;
  flags: number;
  peer?: string;
  label?: string;
  unknown: RawRtAttr[];
}

/** A route as decoded, or as handed to changeRoute (addresses then as bytes in network order). */
export interface RawRoute<A = string> {
  family: number;
  dst?: A;
  dstLength: number;
  src?: A;
  srcLength: number;
  tos: number;
  table: number;
  protocol: number;
  scope: number;
  type: number;
  flags: number;
  gateway?: A;
  prefsrc?: A;
  oif?: number;
  priority?: number;
  unknown?: RawRtAttr[];
}

/** A rule as decoded, or as handed to changeRule (addresses then as bytes). */
export interface RawRule<A = string> {
  family: number;
  src?: A;
  srcLength: number;
  dst?: A;
  dstLength: number;
  tos: number;
  action: number;
  flags: number;
  table: number;
  priority?: number;
  mark?: number;
  mask?: number;
  goto?: number;
  protocol: number;
  iifname?: string;
  oifname?: string;
  unknown?: RawRtAttr[];
}

/** One change of changeAll: a route or a rule, with the message type and flags changeRoute / changeRule take. */
export type RawRtnetlinkChange =
  | { type: number; flags: number; route: RawRoute<Uint8Array> }
  | { type: number; flags: number; rule: RawRule<Uint8Array> };

/** One netlink session speaking NETLINK_ROUTE (native/rtnetlink/rtnetlink_binding.cc). Every call is async. */
export interface RawRtnetlinkHandle {
  links(): Promise<RawLink[]>;
  /** By index when index > 0, else by name; rejects with the kernel's ENODEV when missing. */
  link(index: number, name: string): Promise<RawLink>;
  addresses(family: number): Promise<RawAddress[]>;
  routes(family: number): Promise<RawRoute[]>;
  rules(family: number): Promise<RawRule[]>;
  changeRoute(type: number, flags: number, route: RawRoute<Uint8Array>): Promise<void>;
  changeRule(type: number, flags: number, rule: RawRule<Uint8Array>): Promise<void>;
  /** Sends the changes in few exchanges; one entry per change: undefined when made, else its error. */
  changeAll(changes: RawRtnetlinkChange[]): Promise<(Error | undefined)[]>;
  setTimeout(ms: number): void;
  close(): void;
}

/** An attribute the nf_tables codec does not decode (native/nftables/objects.h). */
export interface RawNftAttr {
  type: number;
  data: Buffer;
}

export interface RawNftTable {
  family: number;
  name: string;
  flags: number;
  use: number;
  handle?: number;
  comment?: string;
  unknown: RawNftAttr[];
}

export interface RawNftChain {
  family: number;
  table: string;
  name: string;
  handle?: number;
  hook?: number;
  priority?: number;
  type?: string;
  policy?: number;
  flags: number;
  use: number;
  comment?: string;
  unknown: RawNftAttr[];
}

export interface RawNftSet {
  family: number;
  table: string;
  name: string;
  flags: number;
  keyType: number;
  keyLen: number;
  size?: number;
  handle?: number;
  comment?: string;
  /** A map's data: its type (nft's datatype id, or nftablesConstants.dataVerdict) and length. */
  map?: { type: number; length: number };
  unknown: RawNftAttr[];
}

/**
 * One rule expression (native/nftables/expr.cc): its fields named by the codec's schema (numbers, data as bytes, a
 * set name, a verdict code with its chain) when the rule AST holds it, or else its NFTA_EXPR_DATA raw as `data`.
 */
export interface RawNftExpr {
  name: string;
  fields?: Record<string, number | string | Uint8Array>;
  data?: Uint8Array;
}

export interface RawNftRule {
  family: number;
  table: string;
  chain: string;
  handle?: number;
  position?: number;
  comment?: string;
  exprs: RawNftExpr[];
  unknown: RawNftAttr[];
}

export interface RawNftElement {
  key: Buffer;
  flags: number;
  comment?: string;
  /** A map element's data: a value, or a verdict code with the chain of a jump or goto. */
  data?: { value: Buffer } | { verdict: number; chain?: string };
  unknown: RawNftAttr[];
}

/** A dump message of a type the codec does not decode, whole (nfgenmsg and attributes). */
export interface RawNftMessage {
  type: number;
  payload: Buffer;
}

export interface RawNftListing<T> {
  objects: T[];
  raw: RawNftMessage[];
}

/** One change of a batch as run() takes it: kind is one of nftablesConstants' op* (table, chain, set, elements, flush table, rule). */
export interface RawNftOp {
  kind: number;
  del?: boolean;
  flags: number;
  family: number;
  table: string;
  name?: string;
  comment?: string;
  hook?: number;
  priority?: number;
  type?: string;
  policy?: number;
  setFlags?: number;
  keyType?: number;
  keyLen?: number;
  /** Sets: NFTA_SET_DESC_SIZE, 0 or absent for none. */
  size?: number;
  setId?: number;
  /** Element ops: their elements as records (native/nftables/element_records.h). */
  records?: Uint8Array;
  /** Rules: the chain, the handle to delete (none: the whole chain), the position to add at, the expressions. */
  chain?: string;
  handle?: number;
  position?: number;
  exprs?: RawNftExpr[];
}

/** Ops converted to native form by nftPrepare (an opaque native value). */
export type RawNftBatch = { readonly __nftBatch: unique symbol };

/**
 * NetlinkHandleClass is a netlink handle's class: `new (netnsFd or -1, timeoutMs, exchange?)` opens its socket on the
 * calling thread (or talks to a JS peer); with `defer` true and a netnsFd, the first operation opens it on the hop
 * thread, inside the namespace, in the same hop as its own exchange (the handle keeps a duplicate of netnsFd until it
 * is closed and its operations are done); `open(netnsFd, timeoutMs)` opens it on the hop thread without blocking the
 * JS thread, and resolves to the handle.
 */
export interface NetlinkHandleClass<H> {
  new (netnsFd: number, timeoutMs: number, exchange?: (request: Uint8Array) => Uint8Array[], receiveBufferBytes?: number, defer?: boolean): H;
  open(netnsFd: number, timeoutMs: number): Promise<H>;
}

/** One netlink session speaking nf_tables (native/nftables/nftables_binding.cc). Every call is async. */
export interface RawNftablesHandle {
  /**
   * One batch, all or nothing; rejects with an 'nftables' error naming index (op) and element when the kernel did.
   * genId (non-zero) goes in the batch as NFNL_BATCH_GENID: at another generation the kernel refuses it whole (ERESTART).
   */
  run(ops: RawNftOp[] | RawNftBatch, genId?: number): Promise<void>;
  /** The ruleset generation (NFT_MSG_GETGEN's NFTA_GEN_ID), never 0. */
  generation(): Promise<number>;
  tables(family: number): Promise<RawNftListing<RawNftTable>>;
  chains(family: number, table: string): Promise<RawNftListing<RawNftChain>>;
  sets(family: number, table: string): Promise<RawNftListing<RawNftSet>>;
  rules(family: number, table: string): Promise<RawNftListing<RawNftRule>>;
  elements(family: number, table: string, set: string): Promise<RawNftElement[]>;
  /** Sends a set's element dump, which elementsNext then reads; the socket serves nothing else until it is done. */
  elementsStart(family: number, table: string, set: string): Promise<void>;
  /** The dump's next elements (at least maxElements unless it ended: done); EAGAIN when the kernel flagged it interrupted. */
  elementsNext(maxElements: number): Promise<{ elements: RawNftElement[]; done: boolean }>;
  /** One set (not a dump); null when the kernel answers ENOENT (no such table or set). */
  getSet(family: number, table: string, set: string): Promise<RawNftSet | null>;
  /** null when the kernel answers ENOENT. */
  getElement(family: number, table: string, set: string, key: Uint8Array): Promise<RawNftElement | null>;
  setTimeout(ms: number): void;
  close(): void;
}

/** What spawnInNetns resolves: the child ran (maybe killed by the deadline or the output limit) and was reaped. */
export interface RawSpawnResult {
  exitCode: number | null;
  signal: string | null;
  stdout: Buffer;
  stderr: Buffer;
  timedOut: boolean;
  outputLimitExceeded: boolean;
  /** The binary that was executed (resolved on the safe PATH). */
  path: string;
  durationMs: number;
}

/** SO_PEERCRED of a unix socket's peer, as read when it connected (native/unix/seqpacket_ops.h). */
export interface RawPeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

/** A connected SOCK_SEQPACKET socket (native/unix/socket_wrap.h). timeoutMs < 0: no deadline. */
export interface RawSeqpacketSocketHandle {
  connect(path: string, timeoutMs: number): Promise<void>;
  /** fds are sent as given (duplicated if the message must wait): the caller keeps them. */
  send(data: Uint8Array, fds: number[], timeoutMs: number): Promise<void>;
  /** Resolves null at end of stream; the fds are the caller's from then on. */
  receive(maxBytes: number, maxFds: number, timeoutMs: number): Promise<{ data: Buffer; fds: number[] } | null>;
  peerCredentials(): RawPeerCredentials | undefined;
  close(): void;
}

/** A listening SOCK_SEQPACKET socket (native/unix/server_wrap.h). */
export interface RawSeqpacketServerHandle {
  accept(timeoutMs: number): Promise<RawSeqpacketSocketHandle>;
  close(): void;
}

/** The raw functions the addon exports. Arguments are checked in TypeScript before these are called. */
export interface NativeBinding {
  setErrorFactory(factory: (fields: NativeErrorFields) => Error): void;
  buildInfo(): { asan: boolean; napiVersion: number };
  /** How many netfilter sockets the addon's closer thread has yet to close (native/util/close_later.h). */
  pendingCloses(): number;
  /** Resolves once the closer thread has closed every socket handed to it before the call. */
  closesSettled(): Promise<void>;
  netnsOpen(path: string): RawNetns;
  netnsIdentify(fd: number): RawNetns;
  netnsDup(fd: number): RawNetns;
  /** A close-on-exec duplicate of a namespace fd already identified (a handle's own): the new fd, unchecked. */
  netnsDupFd(fd: number): number;
  netnsClose(fd: number): void;
  /** Makes an anonymous network namespace with its loopback up, on a short-lived thread: its fd and identity. */
  netnsCreate(): Promise<RawNetns>;
  /** Takes the xtables lock at path without waiting: the fd holding it; throws EWOULDBLOCK while another holds it. */
  xtablesTryLock(path: string): number;
  /** Releases a lock xtablesTryLock took. */
  xtablesUnlock(fd: number): void;
  /** A lock file (a memfd's /proc path) that only this process's children use. */
  xtablesPrivateLockPath(): string;
  /** Inode of the netns seen by native work run inside fd's namespace (the RunInNetns mechanism). */
  netnsInodeInside(fd: number): Promise<number>;
  /**
   * new IpsetHandle(netnsFd or -1, timeoutMs, exchange?, receiveBufferBytes?) opens a socket in that netns (SO_RCVBUF
   * set to receiveBufferBytes when > 0, else podnet's 8 MiB), or talks to a JS peer.
   */
  IpsetHandle: new (
    netnsFd: number,
    timeoutMs: number,
    exchange?: ((request: Uint8Array) => Uint8Array[]) | undefined,
    receiveBufferBytes?: number,
  ) => RawIpsetHandle;
  ipsetSyncFrame: RawSyncFrameLayout;
  ipsetCommands: { destroy: number; flush: number; rename: number; swap: number; add: number; del: number };
  /**
   * new RtnetlinkHandle(netnsFd or -1, timeoutMs, exchange?) opens a NETLINK_ROUTE socket in that netns, or talks to a
   * JS peer; RtnetlinkHandle.open(netnsFd, timeoutMs) opens the socket on the hop thread.
   */
  RtnetlinkHandle: NetlinkHandleClass<RawRtnetlinkHandle>;
  rtnetlinkConstants: {
    newRoute: number;
    delRoute: number;
    newRule: number;
    delRule: number;
    create: number;
    excl: number;
    replace: number;
  };
  /**
   * new NftablesHandle(netnsFd or -1, timeoutMs, exchange?) opens a NETLINK_NETFILTER socket in that netns, or talks
   * to a JS peer; NftablesHandle.open(netnsFd, timeoutMs) opens the socket on the hop thread.
   */
  NftablesHandle: NetlinkHandleClass<RawNftablesHandle>;
  /** nftPrepare converts ops to native form once; run() then sends them as they are, as often as asked. */
  nftPrepare(ops: RawNftOp[]): RawNftBatch;
  /** nftExprsSize returns the bytes checked expressions take encoded (their whole attribute), or -1 if the codec refuses one. */
  nftExprsSize(exprs: readonly unknown[]): number;
  nftablesConstants: {
    create: number;
    excl: number;
    replace: number;
    append: number;
    ruleExprsMax: number;
    nameMax: number;
    commentMax: number;
    typeIpv4Addr: number;
    typeIpv6Addr: number;
    /** NFT_DATA_VERDICT: a verdict map's data type. */
    dataVerdict: number;
    /** Flag bits listings show in their own form: NFT_SET_INTERVAL, NFT_SET_ELEM_INTERVAL_END, _CATCHALL, NFT_CHAIN_BASE. */
    setInterval: number;
    setElemIntervalEnd: number;
    setElemCatchall: number;
    chainBase: number;
    /** The kinds of a RawNftOp (nft::Op::Kind). */
    opTable: number;
    opChain: number;
    opSet: number;
    opElements: number;
    opFlushTable: number;
    opRule: number;
    /** The most bytes one batch (one sendmsg) may take: the socket's send buffer, less what netlink keeps. */
    batchMax: number;
  };
  /**
   * Forks, joins netnsFd's namespace (-1: stay), execs argv with exactly env ("NAME=value"), feeds stdin, collects
   * output until exit, kills the process group at the deadline or the output limit. Rejects only when the program
   * could not be started (execve / setns errors naming the binary as path).
   */
  spawnInNetns(
    netnsFd: number,
    argv: string[],
    env: string[],
    stdin: Buffer | null,
    timeoutMs: number,
    maxOutputBytes: number,
    feed?: RawStdinFeed,
  ): Promise<RawSpawnResult>;
  /** A stdin whose bytes come after the program started: spawnInNetns(..., null, ..., feed). */
  StdinFeed: new () => RawStdinFeed;
  /** new SeqpacketServerHandle(path, mode, backlog) binds and listens; throws PodnetSystemError (EADDRINUSE, ...). */
  SeqpacketServerHandle: new (path: string, mode: number, backlog: number) => RawSeqpacketServerHandle;
  /** new SeqpacketSocketHandle() is a fresh, unconnected socket for connect(). */
  SeqpacketSocketHandle: new () => RawSeqpacketSocketHandle;
  /** fdsOpen returns the index of the first of fds that is not an open fd, or -1 when all are. */
  fdsOpen(fds: readonly number[]): number;
  /** sun_path's capacity without the NUL, and SCM_MAX_FD (fds per message). */
  unixConstants: { pathMax: number; maxFds: number };
}

/** Bytes for a started program's stdin (native/spawn/stdin_feed.h). */
export interface RawStdinFeed {
  write(data: Buffer): void;
  end(): void;
  /** close releases the feed's eventfd (the run does when it ends; this is for a feed never run). */
  close(): void;
}

/** The package's root: dist/ or lib/ is one level down. */
const packageRoot = fileURLToPath(new URL('..', import.meta.url));

/** The part of node-gyp-build used here: where the binary for this platform is, or a throw naming the target. */
interface NodeGypBuild {
  path(dir: string): string;
}

function addonPath(require: NodeJS.Require): string {
  const override = process.env.PODNET_ADDON_PATH;
  if (override) return override;
  try {
    return (require('node-gyp-build') as NodeGypBuild).path(packageRoot);
  } catch (cause) {
    throw new PodnetError(
      `podnet's native addon was not found under '${packageRoot}' (no build/Release and no prebuild for ` +
        `${process.platform}-${process.arch}: run npm install to build it from source, or set PODNET_ADDON_PATH)`,
      'ERR_PODNET_ADDON_LOAD',
      { cause },
    );
  }
}

function load(): NativeBinding {
  const require = createRequire(import.meta.url);
  const path = addonPath(require);
  let binding: NativeBinding;
  try {
    binding = require(path) as NativeBinding;
  } catch (cause) {
    throw new PodnetError(
      `podnet's native addon could not be loaded from '${path}' (run npm install, or set PODNET_ADDON_PATH)`,
      'ERR_PODNET_ADDON_LOAD',
      { cause },
    );
  }
  binding.setErrorFactory(errorFromNative);
  return binding;
}

/** native is the loaded addon; loading happens once, at first import. */
export const native: NativeBinding = load();
