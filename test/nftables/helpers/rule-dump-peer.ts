// A NetlinkPeer that acknowledges batches and answers a GETRULE dump with rule messages: the NEWRULE messages of
// the batches it acknowledged (each given a handle, as the kernel does) or payloads a test sets. Enough to run
// podnet's rule encoder and decoder against each other without root; the kernel tests prove both against nft.
import type { NetlinkPeer } from '../../../lib/index.js';
import { AckPeer } from './ack-peer.js';
import { replyMessage as message, splitMessages } from './mnl-debug.js';

const NEWRULE = 0xa06;
const GETRULE = 0xa07;
const NLM_F_MULTI = 2;
const NLMSG_DONE = 3;
const NFTA_RULE_HANDLE = 3;

export class RuleDumpPeer implements NetlinkPeer {
  readonly #acks = new AckPeer();
  /** Payloads (nfgenmsg and attributes) the next dumps answer with; filled from acknowledged NEWRULE messages. */
  rules: Buffer[] = [];
  #handle = 1;

  exchange(request: Uint8Array): Uint8Array[] {
    const msgs = splitMessages(request);
    const first = msgs[0]!;
    if (first.readUInt16LE(4) === GETRULE) {
      const seq = first.readUInt32LE(8);
      const done = Buffer.alloc(4);
      return [Buffer.concat([...this.rules.map((p) => message(NEWRULE, NLM_F_MULTI, seq, p)), message(NLMSG_DONE, NLM_F_MULTI, seq, done)])];
    }
    for (const m of msgs) {
      if (m.readUInt16LE(4) !== NEWRULE) continue;
      const handle = Buffer.alloc(12);
      handle.writeUInt16LE(12, 0);
      handle.writeUInt16LE(NFTA_RULE_HANDLE, 2);
      handle.writeBigUInt64BE(BigInt(this.#handle++), 4);
      this.rules.push(Buffer.concat([m.subarray(16, m.readUInt32LE(0)), handle]));
    }
    return this.#acks.exchange(request);
  }
}
