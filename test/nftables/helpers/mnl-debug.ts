// Reads the batch `nft --debug=mnl` prints back into netlink bytes. nft prints every message of what it sends:
// header fields, the 4-byte nfgenmsg, then each attribute's header (length, N/B flags, type) and its payload in
// rows of 4 bytes, padding included. It does not print the flags that decide semantics (it shows R/M/A/E only, never
// NLM_F_CREATE or NLM_F_EXCL) and its seqs start at 0, so the bytes come back with nlmsg_flags and nlmsg_seq zeroed.
// Its cache requests (GET*, before BATCH_BEGIN) are left out.

const ANSI = /\x1b\[[0-9;]*m/g;

/** One message nft sent: type and bytes (flags and seq zeroed). */
export interface DebugMessage {
  type: number;
  bytes: Buffer;
}

export function parseMnlDebug(text: string): DebugMessage[] {
  const lines = text.replace(ANSI, '').split('\n');
  const out: DebugMessage[] = [];
  let cur: number[] | undefined;
  let type = 0;
  let attrStart: number | undefined;
  const flush = (): void => {
    if (cur) out.push({ type, bytes: Buffer.from(cur) });
    cur = undefined;
  };
  const u16 = (v: number): number[] => [v & 0xff, (v >> 8) & 0xff];
  const u32 = (v: number): number[] => [...u16(v & 0xffff), ...u16(v >>> 16)];
  for (const line of lines) {
    let m: RegExpExecArray | null;
    if ((m = /^\|\s+(\d{10})\s+\|\s+\| message length \|/.exec(line))) {
      flush();
      cur = [...u32(Number(m[1])), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
      attrStart = undefined;
    } else if (cur && (m = /^\|\s+(\d{5}) \| [RMAE-]{4} \|\s+\|\s+type \| flags/.exec(line))) {
      type = Number(m[1]);
      cur.splice(4, 2, ...u16(type));
    } else if (cur && (m = /^\|\s*(\d{10})\s*\|\s+\|\s+port ID/.exec(line))) {
      cur.splice(12, 4, ...u32(Number(m[1])));
    } else if (cur && (m = /^\|\s*((?:[0-9a-f]{2} ){4})\s*\|\s+\|\s+(extra header|data)\s+\|/.exec(line))) {
      cur.push(...m[1]!.trim().split(' ').map((h) => parseInt(h, 16)));
    } else if (cur && (m = /^\|(\d{5})\|([N-])([B-])\|(\d{5})\|\s+\|len \|flags\| type\|/.exec(line))) {
      attrStart = cur.length;
      const flags = (m[2] === 'N' ? 0x8000 : 0) | (m[3] === 'B' ? 0x4000 : 0);
      cur.push(...u16(Number(m[1])), ...u16(Number(m[4]) | flags));
    }
  }
  void attrStart;
  flush();
  // From BATCH_BEGIN (type 16) on: the batch, not the cache requests before it.
  const begin = out.findIndex((msg) => msg.type === 16);
  return begin < 0 ? [] : out.slice(begin);
}

/** A message's bytes with nlmsg_flags and nlmsg_seq zeroed, as parseMnlDebug returns them. */
export function withoutFlagsAndSeq(bytes: Uint8Array): Buffer {
  const b = Buffer.from(bytes);
  b.fill(0, 6, 12);
  return b;
}

/** One netlink message of a peer's answer (type, flags, seq and payload; pid 0), padded to 4 bytes. */
export function replyMessage(type: number, flags: number, seq: number, payload: Buffer): Buffer {
  const len = 16 + payload.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt32LE(len, 0);
  out.writeUInt16LE(type, 4);
  out.writeUInt16LE(flags, 6);
  out.writeUInt32LE(seq, 8);
  payload.copy(out, 16);
  return out;
}

/** Splits one sendmsg's bytes into its netlink messages. */
export function splitMessages(bytes: Uint8Array): Buffer[] {
  const b = Buffer.from(bytes);
  const out: Buffer[] = [];
  let off = 0;
  while (off + 16 <= b.length) {
    const len = b.readUInt32LE(off);
    out.push(b.subarray(off, off + len));
    off += (len + 3) & ~3;
  }
  return out;
}
