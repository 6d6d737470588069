/**
 * The wire bytes of a WorkloadRequest, written directly: an agent encodes an add twice per pod (addPod checks it, the
 * proxy step sends it), and protobuf-es's reflective toBinary takes about 9 us for one where this takes about 1 us
 * (Node 20, warm, a 36-character uid). zds.proto's requests are fixed and small (strings and nested messages, no
 * numbers), so the bytes follow from the field numbers alone, in the order and with the defaults protobuf-es writes
 * (proto3: an empty string is left out, a set message or oneof case is written even when empty). The sizes are
 * summed and the fields written straight into one array, with no tree of fields in between (which took 2-3 us).
 * test/proxy/zds-messages.test.ts holds these bytes to protobuf-es's for random requests.
 *
 * The strings come checked (no lone surrogate), so their UTF-8 needs no replacement character; it is written here
 * too, as TextEncoder's calls into C++ cost more than these few bytes.
 */

/** LEN is protobuf's length-delimited wire type. */
const LEN = 2;

/** utf8Length is the UTF-8 bytes of a string without lone surrogates (a pair is one 4-byte character). */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

function varintSize(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x20_0000 ? 3 : n < 0x1000_0000 ? 4 : 5;
}

/**
 * fieldBytes is the bytes of a length-delimited field whose contents are size bytes. Every field number of
 * zds.proto's requests is below 16, so a field's tag is one byte.
 */
function fieldBytes(size: number): number {
  return 1 + varintSize(size) + size;
}

/** textBytes is the bytes of a string field of length UTF-8 bytes: none when empty, as proto3 leaves it out. */
function textBytes(length: number): number {
  return length === 0 ? 0 : fieldBytes(length);
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[at++] = n;
  return at;
}

/** writeField writes the tag and length of field no, whose size bytes of contents follow. */
function writeField(out: Uint8Array, at: number, no: number, size: number): number {
  out[at++] = (no << 3) | LEN;
  return writeVarint(out, at, size);
}

function writeUtf8(out: Uint8Array, at: number, s: string): number {
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) out[at++] = c;
    else if (c < 0x800) {
      out[at++] = 0xc0 | (c >> 6);
      out[at++] = 0x80 | (c & 0x3f);
    } else if (c >= 0xd800 && c <= 0xdbff) {
      c = 0x10000 + ((c - 0xd800) << 10) + (s.charCodeAt(++i) - 0xdc00);
      out[at++] = 0xf0 | (c >> 18);
      out[at++] = 0x80 | ((c >> 12) & 0x3f);
      out[at++] = 0x80 | ((c >> 6) & 0x3f);
      out[at++] = 0x80 | (c & 0x3f);
    } else {
      out[at++] = 0xe0 | (c >> 12);
      out[at++] = 0x80 | ((c >> 6) & 0x3f);
      out[at++] = 0x80 | (c & 0x3f);
    }
  }
  return at;
}

/** writeText writes string field no of length UTF-8 bytes, or nothing when it is empty. */
function writeText(out: Uint8Array, at: number, no: number, s: string, length: number): number {
  return length === 0 ? at : writeUtf8(out, writeField(out, at, no, length), s);
}

/** addWorkloadBytes is WorkloadRequest{add: AddWorkload{uid, workload_info: WorkloadInfo{...}}}. */
export function addWorkloadBytes(uid: string, name: string, namespace: string, serviceAccount: string): Uint8Array {
  const u = utf8Length(uid);
  const n = utf8Length(name);
  const ns = utf8Length(namespace);
  const sa = utf8Length(serviceAccount);
  const info = textBytes(n) + textBytes(ns) + textBytes(sa);
  const add = textBytes(u) + fieldBytes(info); // workload_info is written even when empty
  const out = new Uint8Array(fieldBytes(add));
  let at = writeField(out, 0, 1, add);
  at = writeText(out, at, 1, uid, u);
  at = writeField(out, at, 2, info);
  at = writeText(out, at, 1, name, n);
  at = writeText(out, at, 2, namespace, ns);
  writeText(out, at, 3, serviceAccount, sa);
  return out;
}

/** uidOnlyBytes is WorkloadRequest{<message field>: {<uid field>: uid}}, the shape of keep and del. */
function uidOnlyBytes(messageField: number, uidField: number, uid: string): Uint8Array {
  const u = utf8Length(uid);
  const inner = textBytes(u);
  const out = new Uint8Array(fieldBytes(inner));
  writeText(out, writeField(out, 0, messageField, inner), uidField, uid, u);
  return out;
}

/** keepWorkloadBytes is WorkloadRequest{keep: KeepWorkload{uid}} (keep is field 5, its uid field 1). */
export function keepWorkloadBytes(uid: string): Uint8Array {
  return uidOnlyBytes(5, 1, uid);
}

/** delWorkloadBytes is WorkloadRequest{del: DelWorkload{uid}} (del is field 2, its uid field 2). */
export function delWorkloadBytes(uid: string): Uint8Array {
  return uidOnlyBytes(2, 2, uid);
}

/** snapshotSentBytes is WorkloadRequest{snapshot_sent: SnapshotSent{}} (field 3, empty). */
export function snapshotSentBytes(): Uint8Array {
  const out = new Uint8Array(fieldBytes(0));
  writeField(out, 0, 3, 0);
  return out;
}
