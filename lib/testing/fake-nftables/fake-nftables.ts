/**
 * FakeNftables: an in-process stand-in for the kernel's nf_tables netlink subsystem that podnet's native netlink
 * engine talks to instead of a socket (`Nftables.open({ netlink: new FakeNftables() })`). It answers the bytes of
 * each sendmsg with the datagrams the kernel would send: batches applied all or nothing, dumps paged, errors with
 * the kernel's codes. See the header of each file here for what it models and what it leaves out.
 */
import { splitMessages } from '../netlink-kernel/codec.js';
import { FaultInjectingPeer } from '../netlink-kernel/fault-injection.js';
import { type NetlinkKernelOptions, checkKernelOptions, truncateFirst } from '../netlink-kernel/peer-options.js';
import type { NetlinkPeer } from '../../netlink/peer.js';
import { invalidType, invalidValue } from '../../validate.js';
import { type MessageInfo, NFT_MATCHER, type NftFaultMatch, describe, nftMatches } from './faults.js';
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

function checkUint(name: string, value: unknown, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) throw invalidValue(name, `an integer between 0 and ${max}`, value);
  return value;
}

/**
 * FakeNftables implements NetlinkPeer with an in-memory nf_tables kernel. State is read with `dump()`; faults are
 * scheduled with `failNext`, `dropNextReply`, `truncateNextReply` and `rehashDuringNextDump`. The constructor throws
 * InvalidArgumentError on bad options.
 */
export class FakeNftables extends FaultInjectingPeer<NftFaultMatch, MessageInfo> implements NetlinkPeer {
  readonly #kernel: NftKernel;

  constructor(options: FakeNftablesOptions = {}) {
    super(nftMatches, NFT_MATCHER);
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
      const f = this.takeFault(info, ['drop', 'truncate']);
      if (f?.kind === 'drop') drop = true;
      if (f?.kind === 'truncate') truncate = f.bytes ?? null;
      if (f) break;
    }
    const replies = this.#kernel.handle(
      request,
      (msg) => {
        const f = this.takeFault(describe(msg), ['error']);
        return f?.kind === 'error' ? Math.abs(f.errno) : undefined;
      },
      (msg) => this.takeFault(describe(msg), ['rehash']) !== undefined,
    );
    if (drop) return [];
    if (truncate !== undefined) truncateFirst(replies, truncate);
    return replies;
  }

  /**
   * rehashDuringNextDump has the set of the next (matching) element dump grow its hash table after the dump's first
   * datagram, as the kernel resizes a hash set in a worker some time after adds: each later datagram is walked in
   * the new order, skipping as many elements as were sent, so the listing repeats some elements and misses as many,
   * with no NLM_F_DUMP_INTR (the generation is unchanged). A set that fits one datagram is listed whole. Throws
   * InvalidArgumentError on a bad matcher.
   */
  rehashDuringNextDump(match?: NftFaultMatch): void {
    this.schedule({ kind: 'rehash', match: match ?? {} });
  }

  /** dump returns a frozen snapshot of every table, chain, rule, set and element; later changes do not alter it. */
  dump(): FakeNftablesSnapshot {
    return snapshot(this.#kernel.state);
  }

  /** genId is the current generation (what GETGEN answers). */
  get genId(): number {
    return this.#kernel.state.genId;
  }
}
