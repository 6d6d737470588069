/**
 * The wire side of FakeZtunnel: its limits, the hello and ack bytes it sends, and the small helpers around the
 * messages it receives.
 */
import { encodeAck, encodeHello } from '../../proxy/zds-messages.js';
import type { ReceivedFd } from '../../unix/received-fd.js';
import type { FakeZtunnelMessage } from './types.js';

/** DEFAULT_TIMEOUT_MS bounds connect, sends and waits unless the options say otherwise. */
export const DEFAULT_TIMEOUT_MS = 5000;
/**
 * MAX_FDS is one more than ztunnel accepts, so that an add with two fds is told apart from one with one (a third
 * is CTRUNC).
 */
export const MAX_FDS = 2;
/** MAX_TIMEOUT_MS is the longest timer Node takes. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;
/** MAX_COUNT bounds the count of a scripted fault. */
export const MAX_COUNT = 2 ** 31 - 1;

/** CountedQueue hands out each pushed value count times, in push order (a count is not expanded into copies). */
export class CountedQueue<T> {
  readonly #items: { value: T; left: number }[] = [];

  push(value: T, count: number): void {
    this.#items.push({ value, left: count });
  }

  shift(): T | undefined {
    const head = this.#items[0];
    if (!head) return undefined;
    if (--head.left === 0) this.#items.shift();
    return head.value;
  }

  clear(): void {
    this.#items.length = 0;
  }
}

/** short cuts text to max code points (never half a surrogate pair: an ack may not carry one). */
export function short(text: string, max = 64): string {
  if (text.length <= max) return text;
  const points = [...text];
  return points.length > max ? `${points.slice(0, max).join('')}...` : text;
}

/** closeFds closes the fds of a message nobody takes. */
export function closeFds(fds: readonly ReceivedFd[]): void {
  for (const fd of fds) fd.close();
}

/** label names a received message in a timeout's message. */
export function label(m: FakeZtunnelMessage): string {
  return m.kind === 'snapshotSent' ? 'snapshotSent' : `${m.kind} '${short(m.uid, 32)}'`;
}

/**
 * helloBytes encodes the hello. proto3 leaves a zero version out, and an empty message is what a SOCK_SEQPACKET
 * reader takes for EOF: NOT_USED is sent with its field written out (tag 1 varint, value 0), which decodes the same.
 */
export function helloBytes(version: number): Uint8Array {
  const bytes = encodeHello(version);
  return bytes.length > 0 ? bytes : Uint8Array.of(0x08, 0x00);
}

/** ackBytes encodes an ack; an error text too long for one (a uid near the limit in it) is cut to fit. */
export function ackBytes(error: string): Uint8Array {
  try {
    return encodeAck(error);
  } catch {
    return encodeAck(short(error, 200));
  }
}
