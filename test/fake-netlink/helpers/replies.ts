// Test-only decoding of what FakeIpsetKernel (or the kernel) answers: messages, error codes and dumped entries.

export interface Reply {
  type: number;
  flags: number;
  seq: number;
  pid: number;
  bytes: Uint8Array;
  /** For NLMSG_ERROR and NLMSG_DONE: the int that follows the header. */
  error?: number;
}

export function messages(datagram: Uint8Array): Reply[] {
  const b = Buffer.from(datagram.buffer, datagram.byteOffset, datagram.byteLength);
  const out: Reply[] = [];
  let off = 0;
  while (off + 16 <= b.length) {
    const len = b.readUInt32LE(off);
    if (len < 16 || off + len > b.length) throw new Error(`bad nlmsg_len ${len} at ${off} of ${b.length}`);
    const type = b.readUInt16LE(off + 4);
    const r: Reply = { type, flags: b.readUInt16LE(off + 6), seq: b.readUInt32LE(off + 8), pid: b.readUInt32LE(off + 12), bytes: datagram.subarray(off, off + len) };
    if (type === 2 || type === 3) r.error = b.readInt32LE(off + 16);
    out.push(r);
    off += (len + 3) & ~3;
  }
  return out;
}

export function allMessages(datagrams: Uint8Array[]): Reply[] {
  return datagrams.flatMap(messages);
}

/** codes lists the error field of every NLMSG_ERROR reply (0 for ACKs). */
export function codes(datagrams: Uint8Array[]): number[] {
  return allMessages(datagrams)
    .filter((m) => m.type === 2)
    .map((m) => m.error ?? NaN);
}

export interface RawAttr {
  type: number;
  flags: number;
  value: Uint8Array;
  start: number;
}

export function attrs(buf: Uint8Array, start = 0, end = buf.length): RawAttr[] {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const out: RawAttr[] = [];
  let off = start;
  while (off + 4 <= end) {
    const len = b.readUInt16LE(off);
    if (len < 4 || off + len > end) throw new Error(`bad nla_len ${len} at ${off}`);
    const raw = b.readUInt16LE(off + 2);
    out.push({ type: raw & 0x3fff, flags: raw & 0xc000, value: buf.subarray(off + 4, off + len), start: off });
    off += (len + 3) & ~3;
  }
  return out;
}

/** topAttrs are the attributes of an ipset message after nlmsghdr and nfgenmsg. */
export function topAttrs(m: Reply): RawAttr[] {
  return attrs(m.bytes, 20, m.bytes.length);
}

/** dumpedEntries returns every DATA nest of every ADT in a dump, as hex of its payload, grouped by set name. */
export function dumpedEntries(datagrams: Uint8Array[]): Map<string, string[]> {
  const sets = new Map<string, string[]>();
  for (const m of allMessages(datagrams)) {
    if (m.type !== ((6 << 8) | 7)) continue;
    const top = topAttrs(m);
    const nameAttr = top.find((a) => a.type === 2);
    const name = nameAttr ? Buffer.from(nameAttr.value).toString('utf8').replace(/\0.*$/s, '') : '';
    const list = sets.get(name) ?? [];
    sets.set(name, list);
    for (const a of top.filter((x) => x.type === 8)) for (const d of attrs(a.value)) list.push(Buffer.from(d.value).toString('hex'));
  }
  return sets;
}
