/**
 * Network namespace handles. A Netns holds an open, close-on-exec fd of a
 * namespace file and that namespace's identity (device and inode): two handles
 * on the same namespace are equal however they were opened.
 */
import { PodnetError, withCallerStack } from './errors.js';
import { native } from './native.js';
import { checkInteger, checkString, invalidValue } from './validate.js';

/** NETNS_RUN_DIR is where `ip netns add` bind-mounts named namespaces (Netns.named opens them there). */
export const NETNS_RUN_DIR = '/run/netns';

// Safety net for handles nobody closed: the fd is closed when the handle is
// collected. close() unregisters first, so an fd number is never closed twice.
const finalizer = new FinalizationRegistry<number>((fd) => {
  try {
    native.netnsClose(fd);
  } catch {
    // Nothing to report to: the owner is gone.
  }
});

/** Netns is an open network namespace. Close it (or `using` it) when done. */
export class Netns implements Disposable {
  /** Netns.path is the file the handle was opened from. */
  readonly path: string;
  /** Netns.id is unique per namespace on this host: "<device>:<inode>" of the namespace file. */
  readonly id: string;
  /** Netns.inode is the namespace's inode number, as `ip netns identify` and /proc show it. */
  readonly inode: number;
  #fd: number;
  readonly #dev: number;

  private constructor(path: string, fd: number, dev: number, ino: number) {
    this.path = path;
    this.#fd = fd;
    this.#dev = dev;
    this.inode = ino;
    this.id = `${dev}:${ino}`;
    finalizer.register(this, fd, this);
  }

  /**
   * Netns.open opens the network namespace file at path. Throws a PodnetSystemError (`ENOENT`, `EACCES`, ...) naming
   * the path, or a PodnetError with code `ERR_NOT_NETNS` when the file is not a network namespace. The file's type is
   * checked before it is opened for reading, so a FIFO or a device is refused without being opened or waited on.
   */
  static open(path: string): Netns {
    checkString('path', path, 4096);
    const raw = native.netnsOpen(path);
    return new Netns(path, raw.fd, raw.dev, raw.ino);
  }

  /** Netns.fromPid opens `/proc/<pid>/ns/net`. Throws `ENOENT` when the process does not exist. */
  static fromPid(pid: number): Netns {
    checkInteger('pid', pid, 1, 0x7fffffff);
    return Netns.open(`/proc/${pid}/ns/net`);
  }

  /** Netns.named opens a namespace made by `ip netns add NAME` (under /run/netns). Throws `ENOENT` when missing. */
  static named(name: string): Netns {
    checkNetnsName(name);
    return Netns.open(`${NETNS_RUN_DIR}/${name}`);
  }

  /**
   * Netns.fromFd takes over fd, an open network namespace descriptor obtained elsewhere (received with SCM_RIGHTS,
   * ...): the handle closes it from then on. path only names the handle (default `/proc/self/fd/<fd>`). Throws a
   * PodnetSystemError with code `ERR_NOT_NETNS` when fd is not a network namespace (`EBADF` when it is not open); the
   * fd then stays the caller's, still open.
   */
  static fromFd(fd: number, path = `/proc/self/fd/${fd}`): Netns {
    checkInteger('fd', fd, 0, 0x7fffffff);
    checkString('path', path, 4096);
    const raw = native.netnsIdentify(fd);
    return new Netns(path, raw.fd, raw.dev, raw.ino);
  }

  /**
   * Netns.create makes a new, empty network namespace with its loopback up (as a pod's starts), and resolves a handle
   * on it. The namespace is anonymous: nothing names it in /run/netns, so there is nothing to delete and nothing to
   * leak; it lives while this handle (or a duplicate, or a process started in it) does, and the kernel frees it when
   * the last goes. The kernel's setup runs on a short-lived thread of its own, never on the JS thread. Rejects with a
   * PodnetSystemError carrying `errno` and `syscall` (operation `create`): `EPERM` from `unshare` without
   * CAP_SYS_ADMIN, `ENOSPC` past the user's namespace limit, `EINVAL` for a kernel without network namespaces.
   */
  static async create(): Promise<Netns> {
    const raw = await withCallerStack(native.netnsCreate(), new Error('netns create'));
    return new Netns(`/proc/self/fd/${raw.fd}`, raw.fd, raw.dev, raw.ino);
  }

  /** Netns.current opens the namespace of this process (of its main thread, where JS runs). */
  static current(): Netns {
    return Netns.open('/proc/self/ns/net');
  }

  /**
   * fd is the open descriptor. Throws `ERR_NETNS_CLOSED` after close(): a stale fd number may belong to another file.
   */
  get fd(): number {
    if (this.#fd < 0) throw new PodnetError(`network namespace handle for '${this.path}' is closed`, 'ERR_NETNS_CLOSED');
    return this.#fd;
  }

  /** closed tells whether close() was called. */
  get closed(): boolean {
    return this.#fd < 0;
  }

  /**
   * Netns.duplicate opens a handle of its own on the namespace fd refers to (a duplicate of the fd, close-on-exec);
   * fd stays the caller's. Throws a PodnetSystemError `EBADF` when fd is not open, `ERR_NOT_NETNS` when it is not a
   * network namespace.
   */
  static duplicate(fd: number, path = `/proc/self/fd/${fd}`): Netns {
    checkInteger('fd', fd, 0, 0x7fffffff);
    checkString('path', path, 4096);
    const raw = native.netnsDup(fd);
    return new Netns(path, raw.fd, raw.dev, raw.ino);
  }

  /**
   * reopen returns a new, independent handle on the same namespace (a duplicate of the fd, so a path that now names
   * another namespace does not matter). Components keep their own so callers may close theirs.
   */
  reopen(): Netns {
    // This handle's fd was identified when it was opened, and a duplicate refers to the same open file: no need to
    // check it again.
    return new Netns(this.path, native.netnsDupFd(this.fd), this.#dev, this.inode);
  }

  /** equals tells whether other is a handle on the same namespace. */
  equals(other: Netns): boolean {
    return other instanceof Netns && other.id === this.id;
  }

  /** close releases the fd. Calling it again does nothing. */
  close(): void {
    if (this.#fd < 0) return;
    const fd = this.#fd;
    this.#fd = -1;
    finalizer.unregister(this);
    native.netnsClose(fd);
  }

  /** Symbol.dispose is close(), for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** toString names the path and the identity. */
  toString(): string {
    return `Netns(${this.path}, ${this.id})`;
  }
}

/** checkNetnsName throws ERR_INVALID_ARG_VALUE unless name is usable as a file name under /run/netns. */
export function checkNetnsName(name: unknown): string {
  const value = checkString('name', name, 255);
  if (value.includes('/') || value === '.' || value === '..') {
    throw invalidValue('name', 'a namespace name without "/" (not "." or "..")', value);
  }
  return value;
}

/** NetnsLike is a namespace given as a handle or a path (opened, and closed again, by whoever takes it). */
export type NetnsLike = Netns | string;

/**
 * resolveNetns opens a path (the caller then owns the handle) or passes a handle through. Returns undefined for
 * undefined, meaning "the current namespace".
 */
export function resolveNetns(netns: NetnsLike | undefined): { netns: Netns | undefined; owned: boolean } {
  if (netns === undefined) return { netns: undefined, owned: false };
  if (netns instanceof Netns) {
    if (netns.closed) throw invalidValue('netns', 'an open Netns', netns);
    return { netns, owned: false };
  }
  if (typeof netns === 'string') return { netns: Netns.open(netns), owned: true };
  throw invalidValue('netns', 'a Netns or a path', netns);
}
