/**
 * FakeIpsetKernel: an in-process stand-in for the Linux kernel's ipset nfnetlink subsystem that podnet's native
 * netlink engine can talk to instead of a socket. It answers the same request bytes with the kernel's reply bytes.
 */
import type { NetlinkPeer } from '../../netlink/peer.js';
import { invalidType, invalidValue } from '../../validate.js';
import { type NlMsg, parseAttrs, readNulString, splitMessages } from '../netlink-kernel/codec.js';
import { FaultInjectingPeer } from '../netlink-kernel/fault-injection.js';
import { type NetlinkKernelOptions, checkKernelOptions, truncateFirst } from '../netlink-kernel/peer-options.js';
import { ATTR, NFGENMSG_LEN, NFNL_SUBSYS_IPSET, NLMSG_HDRLEN } from './constants.js';
import { IpsetKernel, errorReply } from './commands.js';
import { type FaultMatch, IPSET_MATCHER, type RequestInfo, matches } from './faults.js';
import { type FakeIpsetSnapshot, setSnapshot } from './snapshot.js';

/** FakeIpsetKernelOptions configure a FakeIpsetKernel; every field is optional. */
export interface FakeIpsetKernelOptions extends NetlinkKernelOptions {
  /**
   * now is the clock in milliseconds that timeouts run on (default Date.now). Inject one to make entries expire
   * on demand.
   */
  now?: () => number;
  /** seed makes the INITVAL of sets created without one reproducible (default 1). */
  seed?: number;
}

/**
 * FakeIpsetKernel implements NetlinkPeer with an in-memory ipset kernel: `exchange` takes the bytes of one sendmsg and
 * returns the datagrams recvmsg would return. State is inspected with `dump()`; faults are scheduled with
 * `failNext`, `dropNextReply` and `truncateNextReply`. The constructor throws InvalidArgumentError on bad options.
 */
export class FakeIpsetKernel extends FaultInjectingPeer<FaultMatch, RequestInfo> implements NetlinkPeer {
  readonly #kernel: IpsetKernel;
  readonly #now: () => number;

  constructor(options: FakeIpsetKernelOptions = {}) {
    super(matches, IPSET_MATCHER, 0x7fffffff);
    if (typeof options !== 'object' || options === null) throw invalidType('options', 'an object', options);
    const now = options.now ?? Date.now;
    if (typeof now !== 'function') throw invalidType('options.now', 'a function', now);
    const { pageSize: page, portId } = checkKernelOptions(options);
    let state = (options.seed ?? 1) >>> 0 || 1;
    const initval = () => {
      // xorshift32: any fixed sequence will do, the kernel's is random.
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return state >>> 0;
    };
    this.#now = now;
    this.#kernel = new IpsetKernel({ now, portId, dumpPageSize: page, initval });
  }

  /** exchange processes the messages of one sendmsg in order and returns the reply datagrams. Never throws. */
  exchange(request: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (const msg of splitMessages(request)) {
      const fault = this.takeFault(describe(msg));
      if (fault?.kind === 'error') {
        out.push(errorReply(msg, this.#kernel.replyTo(msg), -Math.abs(fault.errno)));
        continue;
      }
      const replies = this.#kernel.handle(msg);
      if (fault?.kind === 'drop') continue;
      if (fault?.kind === 'truncate') truncateFirst(replies, fault.bytes);
      out.push(...replies);
    }
    return out;
  }

  /** dump returns a frozen snapshot of every set and its live entries; changing the fake later does not change it. */
  dump(): FakeIpsetSnapshot {
    const now = this.#now();
    return Object.freeze({ sets: Object.freeze(this.#kernel.store.all().map((s) => setSnapshot(s, now))) });
  }

  /**
   * setReferenced sets how many outside users (iptables `-m set` rules) hold set `name`: while non-zero, DESTROY
   * fails with IPSET_ERR_BUSY and RENAME with IPSET_ERR_REFERENCED, as in the kernel. Throws InvalidArgumentError
   * when the set does not exist or count is not a non-negative integer.
   */
  setReferenced(name: string, count = 1): void {
    const set = this.#kernel.store.get(name);
    if (!set) throw invalidValue('name', 'the name of an existing set', name);
    if (!Number.isInteger(count) || count < 0 || count > 0xffffffff) {
      throw invalidValue('count', 'a non-negative integer', count);
    }
    set.references = count;
  }
}

function describe(msg: NlMsg): { cmd: number; setName: string | undefined } {
  const cmd = msg.type >> 8 === NFNL_SUBSYS_IPSET ? msg.type & 0xff : -1;
  if (msg.len < NLMSG_HDRLEN + NFGENMSG_LEN) return { cmd, setName: undefined };
  const name = parseAttrs(msg.bytes, NLMSG_HDRLEN + NFGENMSG_LEN, msg.len).byType.get(ATTR.SETNAME);
  return { cmd, setName: name ? readNulString(name, 255) : undefined };
}
