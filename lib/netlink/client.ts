/**
 * The head every netlink client built on one native handle shares (Rtnetlink, Nftables): opening the handle in the
 * namespace or on a peer, the closed state, the queue that runs operations in call order, and close().
 */
import { PodnetError, withCallerStack } from '../errors.js';
import { native } from '../native.js';
import type { NetlinkHandleClass } from '../native.js';
import type { Netns } from '../netns.js';
import { invalidType } from '../validate.js';
import { checkNetlinkOpenOptions, type NetlinkClientOpenOptions } from './open-options.js';

/** RawNetlinkHandle is what a client needs of its native handle: to close it. */
export interface RawNetlinkHandle {
  close(): void;
}

/** OpenedNetlink is a handle opened by openNetlink, and how to open another on the same namespace or peer. */
export interface OpenedNetlink<H> {
  handle: H;
  /** The client's own namespace handle (undefined: the current namespace, or a peer). */
  netns: Netns | undefined;
  /** Opens another handle on the same namespace or peer (a stream's own socket). */
  reopen: () => H;
}

/**
 * openNetlink checks the open options (NetlinkOpenOptions) and opens a native handle in the namespace or on the peer
 * they name. Rejects with InvalidArgumentError on bad options, PodnetSystemError when the namespace cannot be opened
 * or entered; nothing stays open when it rejects. The socket in another namespace is opened on the hop thread
 * (native XHandle.open): entering the namespace takes a thread hand-off each way, which the JS thread spends on other
 * work (a pod's other steps) instead of waiting; with `defer`, the first operation opens it in its own hop.
 */
export async function openNetlink<H>(options: unknown, Handle: NetlinkHandleClass<H>): Promise<OpenedNetlink<H>> {
  const defer = checkDefer(options);
  const { timeoutMs, peer, netns } = checkNetlinkOpenOptions(options, ['defer']);
  try {
    const reopen = peer
      ? () => new Handle(-1, timeoutMs, (req) => peer.exchange(req))
      : () => new Handle(netns ? netns.fd : -1, timeoutMs);
    let handle: H;
    if (!netns || peer) handle = reopen();
    else if (defer) handle = new Handle(netns.fd, timeoutMs, undefined, undefined, true);
    else handle = await Handle.open(netns.fd, timeoutMs);
    return { handle, netns, reopen };
  } catch (err) {
    netns?.close();
    throw err;
  }
}

/** checkDefer reads the `defer` option (NetlinkClientOpenOptions), before anything is opened. */
function checkDefer(options: unknown): boolean {
  const defer = (options as NetlinkClientOpenOptions | undefined)?.defer;
  if (defer !== undefined && typeof defer !== 'boolean') throw invalidType('options.defer', 'a boolean', defer);
  return defer === true;
}

/**
 * NetlinkClient is the part of a netlink client that is the same for each: the namespace it works in, whether it is
 * closed, operations run one after another in call order, and one meaning of close(). `name` is the client's name
 * in messages and codes (`rtnetlink`: `ERR_RTNETLINK_CLOSED`).
 */
export abstract class NetlinkClient<H extends RawNetlinkHandle> implements Disposable {
  #handle: H | undefined;
  readonly #netns: Netns | undefined;
  readonly #name: string;
  #tail: Promise<unknown> = Promise.resolve();
  #releasing: Promise<void> | undefined;

  protected constructor(handle: H, netns: Netns | undefined, name: string) {
    this.#handle = handle;
    this.#netns = netns;
    this.#name = name;
  }

  /** netns is the namespace this client works in (undefined: the process's own, or a peer's). */
  get netns(): Netns | undefined {
    return this.#netns;
  }

  /** closed tells whether close() was called. */
  get closed(): boolean {
    return this.#handle === undefined;
  }

  /**
   * live returns the handle; throws PodnetError `ERR_<NAME>_CLOSED` after close().
   * @internal
   */
  protected live(): H {
    if (!this.#handle) throw new PodnetError(`${this.#name} client is closed`, `ERR_${this.#name.toUpperCase()}_CLOSED`);
    return this.#handle;
  }

  /**
   * serial runs fn after every operation queued before it (the queue survives failures); its errors pass through
   * context (the client's withContext), and carry the caller's stack. Rejects with `ERR_<NAME>_CLOSED` after close().
   * @internal
   */
  protected serial<T>(fn: (h: H) => Promise<T>, context: (err: unknown) => unknown): Promise<T> {
    const caller = new Error();
    let handle: H;
    try {
      handle = this.live();
    } catch (err) {
      return Promise.reject(err);
    }
    const run = this.#tail.then(() => fn(handle)).catch((err: unknown) => {
      throw context(err);
    });
    this.#tail = run.catch(() => undefined);
    return withCallerStack(run, caller);
  }

  /**
   * close means one thing for every podnet netlink client (Ipset, Rtnetlink, Nftables): it refuses new calls at once
   * (they reject, and *Sync calls throw, with the client's `ERR_<CLIENT>_CLOSED`), lets every call made before it
   * finish as it would have, and releases the socket and the namespace handle once those settled; a stream whose
   * iteration has begun runs on its own socket to its end. A second close() does nothing.
   */
  close(): void {
    const h = this.#handle;
    if (!h) return;
    this.#handle = undefined;
    const netns = this.#netns;
    this.#releasing = this.#tail.then(() => {
      h.close();
      netns?.close();
    });
  }

  /**
   * released resolves once close() has released the socket and the namespace handle and the socket is closed. An
   * Ipset or Nftables socket is closed on a thread of the addon's own, which the kernel keeps waiting for an RCU grace
   * period (milliseconds) after nf_tables deletions anywhere on the machine; released() waits for that without
   * holding the JS thread, for a caller that wants nothing of the client left when it goes on. Rejects with PodnetError
   * `ERR_INVALID_STATE` before close().
   */
  async released(): Promise<void> {
    if (this.#releasing === undefined) throw new PodnetError(`${this.#name} client is not closed: released() follows close()`, 'ERR_INVALID_STATE');
    await this.#releasing;
    if (native.pendingCloses() > 0) await native.closesSettled();
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }
}
