/**
 * The wire bytes of a WorkloadRequest, written directly: an agent encodes an add twice per pod (addPod checks it, the
 * proxy step sends it), and protobuf-es's reflective toBinary takes about 9 us for one where this takes about 1 us
 * (Node 20, warm). zds.proto's requests are fixed and small
 * (strings and nested messages, no numbers), so the bytes follow from the field numbers alone, in the order and with
 * the defaults protobuf-es writes (proto3: an empty string is left out, a set message or oneof case is written even
 * when empty). test/proxy/zds-messages.test.ts holds these bytes to protobuf-es's for random requests.
 *
 * The strings come checked (no lone surrogate), so their UTF-8 needs no replacement character; it is written here
 * too, as TextEncoder's calls into C++ cost more than these few bytes.
 */

/** LEN is protobuf's length-delimited wire type. */
const LEN = 2;

/**
 * A length-delimited field: a string, or a nested message of fields. size is its contents' bytes, filled in by
 * measure before write.
 */
type Field = { no: number; text: string; size: number } | { no: number; fields: Field[]; size: number };

/** text is the string field no, left out when empty as proto3 does. */
function text(no: number, value: string): Field[] {
  return value === '' ? [] : [{ no, text: value, size: 0 }];
}

function message(no: number, ...fields: Field[][]): Field {
  return { no, fields: fields.flat(), size: 0 };
}

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

/** measure fills in the size of field and of everything in it, and returns the bytes of the whole field. */
function measure(field: Field): number {
  field.size = 'text' in field ? utf8Length(field.text) : field.fields.reduce((sum, f) => sum + measure(f), 0);
  return varintSize((field.no << 3) | LEN) + varintSize(field.size) + field.size;
}

function writeVarint(out: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  out[at++] = n;
  return at;
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

function write(out: Uint8Array, at: number, field: Field): number {
  at = writeVarint(out, at, (field.no << 3) | LEN);
  at = writeVarint(out, at, field.size);
  if ('text' in field) return writeUtf8(out, at, field.text);
  for (const f of field.fields) at = write(out, at, f);
  return at;
}

function encode(top: Field): Uint8Array {
  const out = new Uint8Array(measure(top));
  write(out, 0, top);
  return out;
}

/** addWorkloadBytes is WorkloadRequest{add: AddWorkload{uid, workload_info: WorkloadInfo{...}}}. */
export function addWorkloadBytes(uid: string, name: string, namespace: string, serviceAccount: string): Uint8Array {
  return encode(message(1, text(1, uid), [message(2, text(1, name), text(2, namespace), text(3, serviceAccount))]));
}

/** keepWorkloadBytes is WorkloadRequest{keep: KeepWorkload{uid}} (keep is field 5, its uid field 1). */
export function keepWorkloadBytes(uid: string): Uint8Array {
  return encode(message(5, text(1, uid)));
}

/** delWorkloadBytes is WorkloadRequest{del: DelWorkload{uid}} (del is field 2, its uid field 2). */
export function delWorkloadBytes(uid: string): Uint8Array {
  return encode(message(2, text(2, uid)));
}

/** snapshotSentBytes is WorkloadRequest{snapshot_sent: SnapshotSent{}} (field 3, empty). */
export function snapshotSentBytes(): Uint8Array {
  return encode(message(3));
}
