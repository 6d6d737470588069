/**
 * FakeNftables: an in-process stand-in for the kernel's nf_tables netlink subsystem that podnet's native netlink
 * engine talks to instead of a socket (`Nftables.open({ netlink: new FakeNftables() })`). It answers the bytes of
 * each sendmsg with the datagrams the kernel would send: batches applied all or nothing, dumps paged, errors with
 * the kernel's codes. See the header of each file here for what it models and what it leaves out.
 */
import { splitMessages } from '../netlink-kernel/codec.js';
import { type NetlinkKernelOptions, checkErrno, checkKernelOptions, checkTruncation, truncateFirst } from '../netlink-kernel/peer-options.js';
import type { NetlinkPeer } from '../../netlink/peer.js';
import { invalidType, invalidValue } from '../../validate.js';
import { type NftFaultMatch, NftFaultQueue, describe, messageNumber } from './faults.js';
import { NftKernel } from './kernel.js';
import { emptyState } from './model.js';
import { type FakeNftablesSnapshot, snapshot } from './snapshot.js';

/**
 * The longest datagram the kernel takes from a podnet socket: sk_sndbuf (twice the 8 MiB podnet asks for) less the
 * 32 bytes netlink_sendmsg keeps; the addon refuses a longer batch before sending (ERR_NFTABLES_BATCH_TOO_LARGE).
 */
const SEND_MAX = (16 << 20) - 32;

/** FakeNftablesOptions configure a FakeNftables; every field is optional. */
export interface FakeNftablesOptions extends NetlinkKernelOptions {
  /** What NEWGEN names as the process that committed last (NFTA_GEN_PROC_PID / _NAME); default this process. */
  procPid?: number;
  /** The process name NEWGEN reports (default 'node'). */
  procName?: string;
}

function checkMatch(name: string, match: unknown): NftFaultMatch {
  if (match === undefined) return {};
  if (typeof match !== 'object' || match === null) throw invalidType(name, 'an object', match);
  const m = match as NftFaultMatch;
  if (m.message !== undefined && (typeof m.message !== 'string' || messageNumber(m.message) === undefined)) {
    throw invalidValue(`${name}.message`, 'an nf_tables message name such as "newsetelem"', m.message);
  }
  if (m.table !== undefined && typeof m.table !== 'string') throw invalidType(`${name}.table`, 'a string', m.table);
  return { ...m };
}

function checkUint(name: string, value: unknown, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) throw invalidValue(name, `an integer between 0 and ${max}`, value);
  return value;
}

/**
 * FakeNftables implements NetlinkPeer with an in-memory nf_tables kernel. State is read with `dump()`; faults are
 * scheduled with `failNext`, `dropNextReply` and `truncateNextReply`. The constructor throws InvalidArgumentError on
 * bad options.
 */
export class FakeNftables implements NetlinkPeer {
  readonly #kernel: NftKernel;
  readonly #faults = new NftFaultQueue();

  constructor(options: FakeNftablesOptions = {}) {
    if (typeof options !== 'object' || options === null) throw invalidType('options', 'an object', options);
    const { pageSize: page, portId } = checkKernelOptions(options);
    const procPid = checkUint('options.procPid', options.procPid, 0xffffffff) ?? process.pid;
    if (options.procName !== undefined && typeof options.procName !== 'string') throw invalidType('options.procName', 'a string', options.procName);
    this.#kernel = new NftKernel(emptyState(), { portId, pageSize: page, procPid, procName: options.procName ?? 'node' });
  }

  /** exchange processes the messages of one sendmsg and returns the reply datagrams. Never throws. */
  exchange(request: Uint8Array): Uint8Array[] {
    // The kernel never receives a datagram over the sender's send buffer (netlink_sendmsg: EMSGSIZE): nothing of it
    // is applied or answered.
    if (request.byteLength > SEND_MAX) return [];
    let drop = false;
    let truncate: number | null | undefined;
    // Drops and truncations are decided per sendmsg, by its first matching message.
    for (const msg of splitMessages(request)) {
      const info = describe(msg);
      const f = this.#faults.take(info, ['drop', 'truncate']);
      if (f?.kind === 'drop') drop = true;
      if (f?.kind === 'truncate') truncate = f.bytes ?? null;
      if (f) break;
    }
    const replies = this.#kernel.handle(request, (msg) => {
      const f = this.#faults.take(describe(msg), ['error']);
      return f?.kind === 'error' ? Math.abs(f.errno) : undefined;
    });
    if (drop) return [];
    if (truncate !== undefined) truncateFirst(replies, truncate);
    return replies;
  }

  /** dump returns a frozen snapshot of every table, chain, rule, set and element; later changes do not alter it. */
  dump(): FakeNftablesSnapshot {
    return snapshot(this.#kernel.state);
  }

  /** genId is the current generation (what GETGEN answers). */
  get genId(): number {
    return this.#kernel.state.genId;
  }

  /**
   * failNext makes the next message (or the next one matching `match`) fail with `errno` (sign ignored) without
   * running it; in a batch the batch is then aborted, as for any refusal. Throws InvalidArgumentError on a bad errno
   * or matcher.
   */
  failNext(errno: number, match?: NftFaultMatch): void {
    this.#faults.add({ kind: 'error', errno: checkErrno('errno', errno), match: checkMatch('match', match) });
  }

  /**
   * dropNextReply processes the next sendmsg holding a (matching) message but loses every datagram it answers with,
   * like replies lost to a full receive buffer. Throws InvalidArgumentError on a bad matcher.
   */
  dropNextReply(match?: NftFaultMatch): void {
    this.#faults.add({ kind: 'drop', match: checkMatch('match', match) });
  }

  /**
   * truncateNextReply processes the next sendmsg holding a (matching) message and cuts its first reply datagram to
   * `bytes` (default: half of it). Throws InvalidArgumentError on a bad length or matcher.
   */
  truncateNextReply(bytes?: number, match?: NftFaultMatch): void {
    this.#faults.add({ kind: 'truncate', bytes: checkTruncation(bytes), match: checkMatch('match', match) });
  }

  /** pendingFaults is how many scheduled faults have not fired yet. */
  get pendingFaults(): number {
    return this.#faults.size;
  }

  /** clearFaults drops every scheduled fault. */
  clearFaults(): void {
    this.#faults.clear();
  }
}
