// A NetlinkPeer that keeps every request and acknowledges each message that asks for it, as the kernel does for a
// batch it applies: what a test needs to see the exact bytes podnet sends, without root.
import type { NetlinkPeer } from '../../../lib/index.js';
import { splitMessages } from './mnl-debug.js';

const NLM_F_ACK = 4;
const NLMSG_ERROR = 2;

export class AckPeer implements NetlinkPeer {
  readonly requests: Buffer[] = [];
  /** Answer the message at this position of the next request with this errno (then forget it); 0: the batch header. */
  failAt: { index: number; errno: number } | undefined;

  exchange(request: Uint8Array): Uint8Array[] {
    this.requests.push(Buffer.from(request));
    const replies: Buffer[] = [];
    splitMessages(request).forEach((msg, i) => {
      const flags = msg.readUInt16LE(6);
      const error = this.failAt?.index === i ? -this.failAt.errno : 0;
      if (!(flags & NLM_F_ACK) && error === 0) return;
      const reply = Buffer.alloc(36);
      reply.writeUInt32LE(36, 0);
      reply.writeUInt16LE(NLMSG_ERROR, 4);
      reply.writeUInt16LE(0x100, 6); // NLM_F_CAPPED: the echo is the header alone
      reply.writeUInt32LE(msg.readUInt32LE(8), 8);
      reply.writeInt32LE(error, 16);
      msg.copy(reply, 20, 0, 16);
      replies.push(reply);
    });
    // The kernel answers a batch it refuses whole with the header's error alone.
    if (this.failAt?.index === 0) replies.splice(1);
    this.failAt = undefined;
    return [Buffer.concat(replies)];
  }
}
