/** Option types and argument checks of the seqpacket API: everything is refused here, before any native call. */
import { native } from '../native.js';
import { checkArray, checkInteger, checkString, invalidType, invalidValue } from '../validate.js';

/** SEQPACKET_MAX_BYTES is the most data one message may carry, sent or received (64 KiB). */
export const SEQPACKET_MAX_BYTES = 65536;

/** SeqpacketListenOptions are the options of SeqpacketServer.listen. */
export interface SeqpacketListenOptions {
  /** The socket file (at most 107 bytes, sun_path). A stale socket file there is replaced. */
  path: string;
  /** Permissions of the socket file, 0..0o777, set exactly (the umask does not apply). Default 0o600. */
  mode?: number;
  /** Connections the kernel queues before accept(), 1..65535. Default 16. */
  backlog?: number;
}

/** SeqpacketAcceptOptions are the options of SeqpacketServer.accept. */
export interface SeqpacketAcceptOptions {
  /** Deadline in ms (0..2^31-1); default none. */
  timeoutMs?: number;
}

/** SeqpacketConnectOptions are the options of SeqpacketSocket.connect. */
export interface SeqpacketConnectOptions {
  /** Deadline in ms for a server whose backlog is full (0..2^31-1); default none. */
  timeoutMs?: number;
}

/** SendableFd is an fd to attach to a message: a number, or anything with an `fd` (Netns, ReceivedFd). */
export type SendableFd = number | { readonly fd: number };

/** SeqpacketSendOptions are the options of SeqpacketSocket.send. */
export interface SeqpacketSendOptions {
  /** Open fds to attach (SCM_RIGHTS), at most 253. They stay the caller's: it may close them once send() returned. */
  fds?: readonly SendableFd[];
  /** Deadline in ms (0..2^31-1) for room in the socket buffer; default none. */
  timeoutMs?: number;
}

/** SeqpacketReceiveOptions are the options of SeqpacketSocket.receive. */
export interface SeqpacketReceiveOptions {
  /** Deadline in ms (0..2^31-1) for a message to arrive; default none. */
  timeoutMs?: number;
  /** Longest message accepted, 1..65536 bytes. Default 1024 (ZDS's buffer). A longer one is ERR_UNIX_TRUNCATED. */
  maxBytes?: number;
  /** Most fds accepted with one message, 0..253. Default 1. More are ERR_UNIX_CTRUNC. */
  maxFds?: number;
}

/** checkSocketPath throws unless value is a path that fits a sockaddr_un. */
export function checkSocketPath(name: string, value: unknown): string {
  return checkString(name, value, native.unixConstants.pathMax);
}

/** checkTimeout returns the deadline in ms, or -1 for none (undefined). */
export function checkTimeout(name: string, value: unknown): number {
  return value === undefined ? -1 : checkInteger(name, value, 0, 2 ** 31 - 1);
}

/** checkData throws unless value is a Uint8Array of 1..SEQPACKET_MAX_BYTES bytes. */
export function checkData(name: string, value: unknown): Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalidType(name, 'a Uint8Array', value);
  // No empty messages: a receiver reads one as the end of the stream.
  if (value.byteLength < 1 || value.byteLength > SEQPACKET_MAX_BYTES) {
    throw invalidValue(name, `1 to ${SEQPACKET_MAX_BYTES} bytes`, `${value.byteLength} bytes`);
  }
  return value;
}

function openFd(name: string, value: unknown): number {
  let fd: unknown = value;
  if (typeof value === 'object' && value !== null && 'fd' in value) {
    try {
      fd = (value as { fd: unknown }).fd;
    } catch {
      // A closed Netns or ReceivedFd throws from its fd getter.
      throw invalidValue(name, 'an open fd', value);
    }
  }
  return checkInteger(name, fd, 0, 2 ** 31 - 1);
}

/** checkFds returns the fd numbers of a send's fds option, each checked to be open. */
export function checkFds(name: string, value: unknown): number[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw invalidType(name, 'an array of fds', value);
  const max = native.unixConstants.maxFds;
  if (value.length > max) throw invalidValue(name, `at most ${max} fds`, `${value.length} fds`);
  const fds = checkArray(name, value, 'an array of fds', (fd, at) => openFd(at, fd));
  const closed = fds.length === 0 ? -1 : native.fdsOpen(fds);
  if (closed >= 0) throw invalidValue(`${name}[${closed}]`, 'an open fd', fds[closed]);
  return fds;
}
