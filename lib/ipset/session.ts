/**
 * IpsetSession: what the parts of one Ipset client share: its netlink handle and how to open more (dump sockets),
 * its namespace, what it knows of each set, and the buffers its JS-thread checks reuse.
 */
import { IpsetError } from '../errors.js';
import { native, type RawIpsetHandle } from '../native.js';
import type { NetlinkPeer } from '../netlink/peer.js';
import type { Netns } from '../netns.js';
import { newFields, type SetShape } from './entry.js';
import { ipsetClosedError, ipsetError } from './error-map.js';
import { LIST_HEADER, firstHeader } from './header.js';
import { RecordWriter } from './record.js';
import { type RequestAbout, traced, tracedSync } from './request-trace.js';
import { SetCache } from './set-cache.js';
import { SyncChannel } from './sync-channel.js';
import type { IpsetHeader } from './types.js';
import type { IpsetRequestMode } from '../diagnostics.js';

/** Where a client's sockets talk: the namespace (or a JS peer), the answer deadline and SO_RCVBUF (0: podnet's). */
export interface SessionTarget {
  netns: Netns | undefined;
  peer: NetlinkPeer | undefined;
  timeoutMs: number;
  receiveBuffer: number;
}

/** newHandle opens one more socket to the target. Throws PodnetSystemError when the namespace cannot be entered. */
export function newHandle(target: SessionTarget): RawIpsetHandle {
  const { peer, netns, timeoutMs, receiveBuffer } = target;
  if (peer) return new native.IpsetHandle(-1, timeoutMs, (req) => peer.exchange(req));
  return new native.IpsetHandle(netns ? netns.fd : -1, timeoutMs, undefined, receiveBuffer);
}

export class IpsetSession {
  #handle: RawIpsetHandle | undefined;
  /** close() was called: new calls are refused while the ones made before it finish. */
  #closing = false;
  readonly target: SessionTarget;
  /** addSync/delSync's path to the handle; it has its own record buffer (an async call may still read adtWriter's). */
  readonly sync: SyncChannel;
  readonly sets = new SetCache();
  /**
   * Coalesced async adds and dels. An async native call reads its writer's buffer in place until it settles; the
   * queue runs one operation at a time, so no async operation writes a buffer that is still being read.
   */
  readonly adtWriter = new RecordWriter(4096);
  /** Reused by every check on the JS thread (a check and its push never interleave with another). */
  readonly fields = newFields();
  /** list()'s own socket, opened on first use: a dump in chunks must not share a socket with *Sync calls. */
  #dumpHandle: RawIpsetHandle | undefined;

  constructor(handle: RawIpsetHandle, target: SessionTarget) {
    this.#handle = handle;
    this.target = target;
    this.sync = new SyncChannel(handle);
  }

  /** closed tells whether close() was called (the sockets may still serve the calls made before it). */
  get closed(): boolean {
    return this.#closing;
  }

  /** netnsPath is the namespace errors name (undefined: the process's own, or a peer). */
  get netnsPath(): string | undefined {
    return this.target.netns?.path;
  }

  /** about is what a request of this client is about, for `podnet:ipset:request`. */
  about(command: string, set: string | undefined, mode: IpsetRequestMode): RequestAbout {
    return { command, set, netns: this.netnsPath, mode };
  }

  /**
   * live is the handle for a call being made now (a *Sync call, or one about to be queued). Throws PodnetError
   * ERR_IPSET_CLOSED once close() was called.
   */
  live(): RawIpsetHandle {
    if (this.#closing || !this.#handle) throw ipsetClosedError();
    return this.#handle;
  }

  /**
   * handle is the handle for work queued before close(), which close() lets finish. Throws PodnetError
   * ERR_IPSET_CLOSED once the sockets are released.
   */
  handle(): RawIpsetHandle {
    if (!this.#handle) throw ipsetClosedError();
    return this.#handle;
  }

  /** dumpHandle is list()'s socket (opened now on first use) while the sockets are held. */
  dumpHandle(): RawIpsetHandle {
    this.handle();
    return (this.#dumpHandle ??= newHandle(this.target));
  }

  /** The set's shape, from the cache or its header; a missing set fails as the command that needed it. */
  async shape(name: string, command: string): Promise<SetShape> {
    const known = this.sets.shape(name);
    if (known) return known;
    try {
      return this.sets.remember(await this.headerNow(name));
    } catch (err) {
      if (err instanceof IpsetError) throw ipsetError(-err.errno, { operation: command, set: name, netns: this.netnsPath, cause: err });
      throw err;
    }
  }

  /** shapeSync is shape() with the header read synchronously. */
  shapeSync(name: string, command: string): SetShape {
    const known = this.sets.shape(name);
    if (known) return known;
    try {
      const handle = this.live();
      const header = tracedSync(
        () => this.about('header', name, 'sync'),
        () => firstHeader(handle.list(name, LIST_HEADER, true).sets, name),
      );
      return this.sets.remember(header);
    } catch (err) {
      if (err instanceof IpsetError) throw ipsetError(-err.errno, { operation: command, set: name, netns: this.netnsPath, cause: err });
      throw err;
    }
  }

  /** The set's size, from a header when the client does not know it (a set made with `exist`, or elsewhere). */
  async size(name: string): Promise<number> {
    const known = this.sets.size(name);
    if (known !== undefined) return known;
    try {
      this.sets.remember(await this.headerNow(name));
    } catch {
      // The operation itself reports a missing set.
    }
    return this.sets.size(name) ?? Infinity;
  }

  /** headerNow asks the kernel for a set's header (ENOENT IpsetError when there is none). */
  async headerNow(name: string): Promise<IpsetHeader> {
    const handle = this.handle();
    return traced(
      () => this.about('header', name, 'worker'),
      async () => firstHeader((await handle.list(name, LIST_HEADER, false)).sets, name),
    );
  }

  /**
   * close refuses new calls at once (ERR_IPSET_CLOSED) and releases the sockets and the namespace handle when
   * `drained` settles: the calls made before close() finish on them.
   */
  close(drained: Promise<unknown>): void {
    if (this.#closing) return;
    this.#closing = true;
    void drained.then(() => this.#release());
  }

  #release(): void {
    if (!this.#handle) return;
    this.#handle.close();
    this.#handle = undefined;
    this.#dumpHandle?.close();
    this.#dumpHandle = undefined;
    this.target.netns?.close();
  }
}
