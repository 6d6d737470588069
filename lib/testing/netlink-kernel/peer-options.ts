/**
 * What every fake kernel's public surface checks the same way: the options they share (reply port id, dump page
 * size) and the arguments of their scripted faults (errno, truncation length), with one message shape.
 */
import { checkInteger, invalidValue } from '../../validate.js';
import { DEFAULT_DUMP_PAGE } from './constants.js';

/** NetlinkKernelOptions are the options every fake kernel takes; each fake adds its own. */
export interface NetlinkKernelOptions {
  /**
   * portId is the nlmsg_pid of every reply. The kernel uses the socket's port id; without a socket the fake echoes
   * the request's nlmsg_pid unless this is set.
   */
  portId?: number;
  /**
   * dumpPageSize is the room of one dump datagram in bytes (default 32448, what a 6.18 kernel fills when the
   * reader's buffer is 32 KiB or more). Smaller values make paging easy to test.
   */
  dumpPageSize?: number;
}

/**
 * checkKernelOptions validates the shared options and returns the page size (defaulted) and port id. Throws
 * InvalidArgumentError naming the bad field.
 */
export function checkKernelOptions(options: NetlinkKernelOptions): { pageSize: number; portId: number | undefined } {
  const pageSize = options.dumpPageSize === undefined ? DEFAULT_DUMP_PAGE : checkInteger('options.dumpPageSize', options.dumpPageSize, 256, 1 << 20);
  const portId = options.portId === undefined ? undefined : checkInteger('options.portId', options.portId, 0, 0xffffffff);
  return { pageSize, portId };
}

/**
 * checkErrno validates the errno of a scripted failure and returns it positive: a kernel errno is below 4096
 * (MAX_ERRNO) unless the family has codes of its own above it (ipset's 4096..), so max is the fake's. Throws
 * InvalidArgumentError otherwise.
 */
export function checkErrno(name: string, errno: unknown, max = 4095): number {
  if (typeof errno !== 'number' || !Number.isInteger(errno) || errno === 0 || Math.abs(errno) > max) {
    throw invalidValue(name, `a non-zero errno between -${max} and ${max}`, errno);
  }
  return Math.abs(errno);
}

/** checkTruncation validates the length a reply is cut to (undefined: half of it). Throws InvalidArgumentError. */
export function checkTruncation(bytes: unknown): number | undefined {
  if (bytes !== undefined && (typeof bytes !== 'number' || !Number.isInteger(bytes) || bytes < 0)) {
    throw invalidValue('bytes', 'a non-negative integer', bytes);
  }
  return bytes;
}

/** truncateFirst cuts the first reply datagram to bytes (null or undefined: half of it), as a truncation fault does. */
export function truncateFirst(replies: Uint8Array[], bytes: number | null | undefined): void {
  const first = replies[0];
  if (first) replies[0] = first.slice(0, bytes ?? Math.floor(first.length / 2));
}
