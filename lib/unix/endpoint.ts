/** UnixEndpoint: what a seqpacket server and socket share, the one native handle each owns. */
import { unixClosedError } from './errors.js';

/**
 * UnixEndpoint owns one native handle of a unix socket file: it is closed once, by close() or `using`, and every
 * call after that fails with `ERR_UNIX_CLOSED` naming the file.
 */
export abstract class UnixEndpoint<H extends { close(): void }> implements Disposable {
  /** path is the socket file. */
  readonly path: string;
  readonly #what: string;
  #handle: H | undefined;

  protected constructor(handle: H, path: string, what: string) {
    this.#handle = handle;
    this.path = path;
    this.#what = what;
  }

  /** closed tells whether close() was called. */
  get closed(): boolean {
    return this.#handle === undefined;
  }

  /**
   * close closes the handle: pending calls reject with `ERR_UNIX_CLOSED` (a server also removes its socket file if
   * it is still the one it made; connections it accepted stay open). Calling it again does nothing.
   */
  close(): void {
    const handle = this.#handle;
    if (!handle) return;
    this.#handle = undefined;
    handle.close();
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** toString names the class and the socket file. */
  toString(): string {
    return `${this.constructor.name}(${this.path})`;
  }

  /**
   * liveHandle is the handle while open; throws `ERR_UNIX_CLOSED` after close().
   * @internal
   */
  protected liveHandle(): H {
    if (!this.#handle) throw unixClosedError(this.#what, this.path);
    return this.#handle;
  }
}
