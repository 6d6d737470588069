/** ReceivedFd: an fd that arrived with a message (SCM_RIGHTS), owned by podnet until closed or handed on. */
import { closeSync } from 'node:fs';

import { PodnetError } from '../errors.js';
import { Netns } from '../netns.js';

// Safety net for fds nobody closed: closed when their ReceivedFd is collected. close() and toNetns() unregister
// first, so an fd number is never closed twice (it may belong to another file by then).
const finalizer = new FinalizationRegistry<number>((fd) => {
  try {
    closeSync(fd);
  } catch {
    // Nothing to report to: the owner is gone.
  }
});

let adopt: (fd: number) => ReceivedFd;

/**
 * ReceivedFd is a descriptor received with a message: it refers to the same open file as the sender's (received
 * close-on-exec). It owns the fd: close() it (or `using` it), or hand it on with toNetns(); one dropped without
 * either is closed when it is garbage collected.
 */
export class ReceivedFd implements Disposable {
  #fd: number;

  static {
    adopt = (fd) => new ReceivedFd(fd);
  }

  private constructor(fd: number) {
    this.#fd = fd;
    finalizer.register(this, fd, this);
  }

  /** fd is the open descriptor. Throws `ERR_UNIX_FD_CLOSED` after close() or toNetns(). */
  get fd(): number {
    if (this.#fd < 0) throw new PodnetError('received fd is closed or was handed on', 'ERR_UNIX_FD_CLOSED');
    return this.#fd;
  }

  /** closed tells whether the fd was closed or handed on. */
  get closed(): boolean {
    return this.#fd < 0;
  }

  /** close closes the fd. Calling it again (or after toNetns) does nothing. */
  close(): void {
    const fd = this.#release();
    if (fd >= 0) closeSync(fd);
  }

  /**
   * toNetns hands the fd to a new Netns, which owns it from then on (this ReceivedFd is then closed). Throws
   * `ERR_NOT_NETNS` (a PodnetSystemError) when the fd is not a network namespace, and `ERR_UNIX_FD_CLOSED` after
   * close(); on a throw this ReceivedFd still owns the fd, open.
   */
  toNetns(path?: string): Netns {
    const netns = Netns.fromFd(this.fd, path);
    this.#release();
    return netns;
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  #release(): number {
    const fd = this.#fd;
    if (fd >= 0) {
      this.#fd = -1;
      finalizer.unregister(this);
    }
    return fd;
  }
}

/** adoptReceivedFd wraps an fd the addon received; the ReceivedFd owns it from then on. */
export function adoptReceivedFd(fd: number): ReceivedFd {
  return adopt(fd);
}
