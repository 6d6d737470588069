// Test-only decoding of what FakeRtnetlink (or the kernel) answers, and the canonical form the differential tests
// compare: nlmsg_pid masked (the kernel uses the socket's port id), IFA_CACHEINFO time stamps masked, and only the
// link attributes the fake emits kept from the kernel's RTM_NEWLINK (it sends stats, queues, AF_SPEC and more).
import { type RawAttr, type Reply, allMessages, attrs, codes, messages } from '../../fake-netlink/helpers/replies.js';

export { allMessages, attrs, codes, messages, type RawAttr, type Reply };

/** LINK_ATTRS are the IFLA_* types FakeRtnetlink emits, in the kernel's order. */
export const LINK_ATTRS: ReadonlySet<number> = new Set([3, 13, 16, 17, 4, 27, 30, 61, 31, 32, 33, 1, 2, 18]);

/** ErrorInfo is an NLMSG_ERROR decoded: the errno, the echoed bytes and the extended ACK. */
export interface ErrorInfo {
  error: number;
  flags: number;
  echo: string;
  msg?: string;
  offset?: number;
  policy?: string;
}

export function errorInfo(m: Reply): ErrorInfo {
  const b = Buffer.from(m.bytes);
  const error = b.readInt32LE(16);
  const echoLen = m.flags & 0x100 ? 16 : b.readUInt32LE(20);
  const out: ErrorInfo = { error, flags: m.flags, echo: b.subarray(20, 20 + echoLen).toString('hex') };
  if (m.flags & 0x200) {
    for (const a of attrs(m.bytes, 20 + ((echoLen + 3) & ~3))) {
      if (a.type === 1) out.msg = Buffer.from(a.value).toString('utf8').replace(/\0$/, '');
      if (a.type === 2) out.offset = Buffer.from(a.value).readUInt32LE(0);
      if (a.type === 4) out.policy = Buffer.from(a.value).toString('hex');
    }
  }
  return out;
}

/** firstError is the first NLMSG_ERROR of a reply, decoded. */
export function firstError(datagrams: Uint8Array[]): ErrorInfo {
  const m = allMessages(datagrams).find((x) => x.type === 2);
  if (!m) throw new Error('no NLMSG_ERROR in the reply');
  return errorInfo(m);
}

const FIXED: Record<number, number> = { 16: 16, 20: 8, 24: 12, 32: 12 };

/** Canon is one message in comparable form. */
export interface Canon {
  type: number;
  flags: number;
  seq: number;
  len?: number;
  error?: ErrorInfo;
  done?: number;
  header?: string;
  attrs?: [number, string][];
}

/** canon turns one datagram into comparable messages (see the file comment for what is masked). */
export function canon(datagram: Uint8Array): Canon[] {
  return messages(datagram).map((m) => {
    const c: Canon = { type: m.type, flags: m.flags, seq: m.seq };
    if (m.type === 2) return { ...c, error: errorInfo(m) };
    if (m.type === 3) return { ...c, done: m.error ?? 0 };
    const fixed = FIXED[m.type];
    if (fixed === undefined) return { ...c, header: Buffer.from(m.bytes.subarray(16)).toString('hex') };
    let list = attrs(m.bytes, 16 + fixed);
    if (m.type === 16) list = list.filter((a) => LINK_ATTRS.has(a.type));
    const hex = list.map((a): [number, string] => {
      const v = Buffer.from(a.value);
      // IFA_CACHEINFO: prefered and valid lifetimes stay, cstamp and tstamp are boot-clock times.
      if (m.type === 20 && a.type === 6) v.fill(0, 8);
      return [a.type | a.flags, v.toString('hex')];
    });
    const out: Canon = { ...c, header: Buffer.from(m.bytes.subarray(16, 16 + fixed)).toString('hex'), attrs: hex };
    if (m.type !== 16) out.len = m.bytes.length;
    return out;
  });
}

/** canonAll is canon over a whole answer, keeping datagram boundaries. */
export function canonAll(datagrams: Uint8Array[]): Canon[][] {
  return datagrams.map(canon);
}

/** RouteView is a dumped route decoded for readable assertions. */
export interface RouteView {
  family: number;
  table: number;
  dst: string;
  type: number;
  scope: number;
  protocol: number;
  oif?: number;
  gateway?: string;
  priority?: number;
}

function ipText(v: Uint8Array): string {
  if (v.length === 4) return [...v].join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((v[i]! << 8) | v[i + 1]!).toString(16));
  return groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::');
}

/** routesOf decodes every RTM_NEWROUTE of a dump. */
export function routesOf(datagrams: Uint8Array[]): RouteView[] {
  return allMessages(datagrams)
    .filter((m) => m.type === 24)
    .map((m) => {
      const b = Buffer.from(m.bytes);
      const v: RouteView = { family: b[16]!, table: b[20]!, dst: `/${b[17]}`, type: b[23]!, scope: b[22]!, protocol: b[21]! };
      for (const a of attrs(m.bytes, 28)) {
        const val = Buffer.from(a.value);
        if (a.type === 15) v.table = val.readUInt32LE(0);
        if (a.type === 1) v.dst = `${ipText(val)}/${b[17]}`;
        if (a.type === 4) v.oif = val.readUInt32LE(0);
        if (a.type === 5) v.gateway = ipText(val);
        if (a.type === 6) v.priority = val.readUInt32LE(0);
      }
      if (v.dst.startsWith('/')) v.dst = `${b[16] === 2 ? '0.0.0.0' : '::'}${v.dst}`;
      return v;
    });
}
