/**
 * ZDS messages (Istio's `istio.workload.zds`, lib/proxy/zds.proto) as small typed values: what the node agent sends
 * (WorkloadRequest) and reads (ZdsHello, WorkloadResponse), and the other direction for a fake proxy and tests.
 *
 * Encoding validates first: uids and workload fields are strings without NUL or lone surrogates, and a message must
 * stay under the 1024-byte buffer both sides read into (ZDS_MAX_MESSAGE_BYTES), refused as a whole message with
 * ERR_ZDS_MESSAGE_TOO_LARGE (no field has a limit of its own: their sum counts).
 *
 * Decoding follows protobuf (unknown fields ignored, the last value of a repeated scalar or oneof wins) but refuses
 * what protobuf-es would read past silently: every known field must have its wire type and every length must end
 * inside its message, so trailing garbage, a truncated or overlong length, an illegal tag or invalid UTF-8 is an
 * ERR_ZDS_PROTOCOL ZdsError.
 */
import { create, fromBinary, ScalarType, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { invalidType, invalidValue, checkInteger, checkString } from '../validate.js';
import { InvalidArgumentError } from '../errors.js';
import { ZdsError } from './errors.js';
import {
  Version,
  WorkloadRequestSchema,
  WorkloadResponseSchema,
  ZdsHelloSchema,
  type WorkloadRequest,
} from './gen/zds_pb.js';
import { addWorkloadBytes, delWorkloadBytes, keepWorkloadBytes, snapshotSentBytes } from './zds-request-bytes.js';

/** ZDS_READ_BUFFER_BYTES is the buffer both the node agent and ztunnel read one ZDS message into. */
export const ZDS_READ_BUFFER_BYTES = 1024;

/** ZDS_MAX_MESSAGE_BYTES is the largest encoded message podnet sends: under the read buffer, as the reference says. */
export const ZDS_MAX_MESSAGE_BYTES = ZDS_READ_BUFFER_BYTES - 1;

/** ZdsVersion is the protocol version a proxy announces in its hello (`V1` today; `NOT_USED` is the zero value). */
export const ZdsVersion = { NOT_USED: Version.NOT_USED, V1: Version.V1 } as const;

/** ZdsWorkloadInfo is the pod a workload is, as ztunnel is told in an add (its WorkloadInfo message). */
export interface ZdsWorkloadInfo {
  /** The pod's name; non-empty. */
  name: string;
  /** The pod's namespace; non-empty. */
  namespace: string;
  /** The pod's service account; may be empty, as the reference passes the pod spec's field on as it is. */
  serviceAccount: string;
}

/**
 * ZdsRequest is one message from the node agent to the proxy: `add` (sent with the pod's netns fd), `keep` (snapshot
 * only: a pod whose netns is gone), `del`, or `snapshotSent` (the snapshot is complete).
 */
export type ZdsRequest =
  | { kind: 'add'; uid: string; workload: ZdsWorkloadInfo }
  | { kind: 'keep'; uid: string }
  | { kind: 'del'; uid: string }
  | { kind: 'snapshotSent' };

/** ZdsHelloMessage is the proxy's first message; `version` is any int32, compared against ZdsVersion by the caller. */
export interface ZdsHelloMessage {
  version: number;
}

/** ZdsResponse is the proxy's answer to every request; an empty `ack.error` means success. */
export interface ZdsResponse {
  ack: { error: string };
}

const INT32_MIN = -0x8000_0000;
const INT32_MAX = 0x7fff_ffff;
const LONE_SURROGATE = /\p{Cs}/u;

/** checkText throws unless value is a string without NUL (non-empty unless allowEmpty) that UTF-8 can carry. */
function checkText(name: string, value: unknown, allowEmpty = false): string {
  if (!allowEmpty) checkString(name, value);
  else if (typeof value !== 'string') throw invalidType(name, 'a string', value);
  else if (value.includes('\0')) throw invalidValue(name, 'a string without NUL', value);
  const text = value as string;
  // TextEncoder would write a lone surrogate as U+FFFD: the peer would see another uid than the one given.
  if (LONE_SURROGATE.test(text)) throw invalidValue(name, 'a string without lone surrogates', value);
  return text;
}

function checkRecord(name: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalidType(name, 'an object', value);
  return value as Record<string, unknown>;
}

function shortUid(uid: string): string {
  return `'${uid.length > 64 ? `${uid.slice(0, 64)}...` : uid}'`;
}

/**
 * tooLarge is the error for bytes over ZDS_MAX_MESSAGE_BYTES, naming the longest of the given string fields (made
 * only then: an add is encoded twice per pod, and its message text and fields would be made for nothing).
 */
function tooLarge(bytes: Uint8Array, what: string, messageType: string, fields: Record<string, string>): ZdsError {
  let field: string | undefined;
  let fieldBytes = -1;
  for (const [name, text] of Object.entries(fields)) {
    const n = Buffer.byteLength(text);
    if (n > fieldBytes) [field, fieldBytes] = [name, n];
  }
  const longest = field === undefined ? '' : ` (its longest field is '${field}', ${fieldBytes} bytes)`;
  return new ZdsError(
    `ZDS ${what} is ${bytes.length} bytes, over the limit of ${ZDS_MAX_MESSAGE_BYTES}${longest}`,
    'ERR_ZDS_MESSAGE_TOO_LARGE',
    { messageType, size: bytes.length, limit: ZDS_MAX_MESSAGE_BYTES, field },
  );
}

/**
 * encodeRequest validates req and encodes it as a WorkloadRequest. Throws InvalidArgumentError for a bad kind, a uid
 * or workload field that is not a string, contains NUL or a lone surrogate, or is empty (but serviceAccount), and
 * ZdsError `ERR_ZDS_MESSAGE_TOO_LARGE` when the message would exceed ZDS_MAX_MESSAGE_BYTES.
 */
export function encodeRequest(req: ZdsRequest): Uint8Array {
  const r = checkRecord('req', req);
  const type = WorkloadRequestSchema.typeName;
  switch (r.kind) {
    case 'add': {
      const uid = checkText('req.uid', r.uid);
      const w = checkRecord('req.workload', r.workload);
      const name = checkText('req.workload.name', w.name);
      const namespace = checkText('req.workload.namespace', w.namespace);
      const serviceAccount = checkText('req.workload.serviceAccount', w.serviceAccount, true);
      const bytes = addWorkloadBytes(uid, name, namespace, serviceAccount);
      if (bytes.length <= ZDS_MAX_MESSAGE_BYTES) return bytes;
      const fields = { uid, 'workload.name': name, 'workload.namespace': namespace, 'workload.serviceAccount': serviceAccount };
      throw tooLarge(bytes, `add message for uid ${shortUid(uid)}`, type, fields);
    }
    case 'keep':
    case 'del': {
      const uid = checkText('req.uid', r.uid);
      const bytes = r.kind === 'keep' ? keepWorkloadBytes(uid) : delWorkloadBytes(uid);
      if (bytes.length <= ZDS_MAX_MESSAGE_BYTES) return bytes;
      throw tooLarge(bytes, `${r.kind} message for uid ${shortUid(uid)}`, type, { uid });
    }
    case 'snapshotSent':
      return snapshotSentBytes();
    default:
      throw invalidValue('req.kind', "one of 'add', 'keep', 'del', 'snapshotSent'", r.kind);
  }
}

/** encodeHello encodes a ZdsHello, as a proxy sends first. Throws InvalidArgumentError unless version is an int32. */
export function encodeHello(version: number = ZdsVersion.V1): Uint8Array {
  checkInteger('version', version, INT32_MIN, INT32_MAX);
  return toBinary(ZdsHelloSchema, create(ZdsHelloSchema, { version }));
}

/**
 * encodeAck encodes a WorkloadResponse with an Ack, as a proxy answers; an empty error (the default) means success.
 * Throws InvalidArgumentError unless error is a string without lone surrogates, and ZdsError
 * `ERR_ZDS_MESSAGE_TOO_LARGE` when the message would exceed ZDS_MAX_MESSAGE_BYTES.
 */
export function encodeAck(error = ''): Uint8Array {
  if (typeof error !== 'string') throw invalidType('error', 'a string', error);
  if (LONE_SURROGATE.test(error)) throw invalidValue('error', 'a string without lone surrogates', error);
  const msg = create(WorkloadResponseSchema, { payload: { case: 'ack', value: { error } } });
  const bytes = toBinary(WorkloadResponseSchema, msg);
  if (bytes.length <= ZDS_MAX_MESSAGE_BYTES) return bytes;
  throw tooLarge(bytes, 'ack message', WorkloadResponseSchema.typeName, { 'ack.error': error });
}

function wireTypeOf(field: DescMessage['fields'][number]): WireType | undefined {
  switch (field.fieldKind) {
    case 'message':
      return WireType.LengthDelimited;
    case 'enum':
      return WireType.Varint;
    case 'scalar':
      // zds.proto has only string scalars; any other would need its own wire type here.
      return field.scalar === ScalarType.STRING || field.scalar === ScalarType.BYTES ? WireType.LengthDelimited : undefined;
    default:
      return undefined; // no repeated or map fields in zds.proto
  }
}

/**
 * checkWire walks bytes as desc: each known field with its own wire type, every length inside the bytes, nested
 * messages checked the same way to their exact end. Unknown fields are skipped (the reader refuses bad lengths).
 */
function checkWire(desc: DescMessage, bytes: Uint8Array, path: string): void {
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    const field = desc.fields.find((f) => f.number === no);
    if (!field) {
      reader.skip(wireType, no);
      continue;
    }
    const expected = wireTypeOf(field);
    if (expected === undefined) throw new Error(`field '${path}${field.name}' has a kind podnet does not check`);
    if (wireType !== expected) {
      throw new Error(`field '${path}${field.name}' (${no}) has wire type ${wireType}, expected ${expected}`);
    }
    if (field.fieldKind === 'message') checkWire(field.message, reader.bytes(), `${path}${field.name}.`);
    else reader.skip(wireType, no);
  }
}

/** decode checks bytes, then decodes them as schema; every failure is an ERR_ZDS_PROTOCOL ZdsError. */
function decode<Desc extends DescMessage>(schema: Desc, bytes: Uint8Array): MessageShape<Desc> {
  if (!(bytes instanceof Uint8Array)) throw invalidType('bytes', 'a Uint8Array', bytes);
  try {
    checkWire(schema, bytes, '');
    return fromBinary(schema, bytes, { readUnknownFields: false });
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw protocolError(`${bytes.length} bytes are not a ZDS ${schema.name}: ${reason}`, schema, err);
  }
}

function protocolError(message: string, schema: DescMessage, cause?: unknown): ZdsError {
  return new ZdsError(message, 'ERR_ZDS_PROTOCOL', { messageType: schema.typeName }, cause === undefined ? undefined : { cause });
}

/**
 * decodeHello decodes a proxy's ZdsHello. Empty bytes are a hello with version 0 (NOT_USED), as in protobuf: the
 * caller checks the version. Throws ZdsError `ERR_ZDS_PROTOCOL` for bytes that are not a ZdsHello.
 */
export function decodeHello(bytes: Uint8Array): ZdsHelloMessage {
  return { version: decode(ZdsHelloSchema, bytes).version };
}

/** The canonical encoding of a success ack, what a proxy answers nearly always: decoded without the reflection. */
const SUCCESS_ACK = toBinary(WorkloadResponseSchema, create(WorkloadResponseSchema, { payload: { case: 'ack', value: {} } }));

function isSuccessAck(bytes: Uint8Array): boolean {
  return bytes.length === SUCCESS_ACK.length && bytes.every((b, i) => b === SUCCESS_ACK[i]);
}

/**
 * decodeResponse decodes a proxy's WorkloadResponse. Throws ZdsError `ERR_ZDS_PROTOCOL` for bytes that are not a
 * WorkloadResponse, or one without an ack.
 */
export function decodeResponse(bytes: Uint8Array): ZdsResponse {
  if (bytes instanceof Uint8Array && isSuccessAck(bytes)) return { ack: { error: '' } };
  const msg = decode(WorkloadResponseSchema, bytes);
  if (msg.payload.case !== 'ack') {
    throw protocolError('ZDS WorkloadResponse has no ack', WorkloadResponseSchema);
  }
  return { ack: { error: msg.payload.value.error } };
}

/**
 * decodeRequest decodes a WorkloadRequest into the ZdsRequest encodeRequest takes (its field checks are not
 * repeated: what a peer sent is returned as it is). Throws ZdsError `ERR_ZDS_PROTOCOL` for bytes that are not a
 * WorkloadRequest, one without a payload, or an add without workload_info (ztunnel refuses that too).
 */
export function decodeRequest(bytes: Uint8Array): ZdsRequest {
  const msg: WorkloadRequest = decode(WorkloadRequestSchema, bytes);
  const { payload } = msg;
  switch (payload.case) {
    case 'add': {
      const info = payload.value.workloadInfo;
      if (!info) throw protocolError('ZDS AddWorkload has no workload_info', WorkloadRequestSchema);
      const workload = { name: info.name, namespace: info.namespace, serviceAccount: info.serviceAccount };
      return { kind: 'add', uid: payload.value.uid, workload };
    }
    case 'keep':
    case 'del':
      return { kind: payload.case, uid: payload.value.uid };
    case 'snapshotSent':
      return { kind: 'snapshotSent' };
    default:
      throw protocolError('ZDS WorkloadRequest has no payload', WorkloadRequestSchema);
  }
}

/**
 * encodeAs runs encodeRequest with req's fields named as the caller's arguments: encodeRequest names them
 * `req.uid`, `req.workload.name`, ...; prefix replaces `req.` (`''` for addWorkload's own arguments).
 */
export function encodeAs(prefix: string, req: ZdsRequest): Uint8Array {
  try {
    return encodeRequest(req);
  } catch (err) {
    if (!(err instanceof InvalidArgumentError) || !err.argument.startsWith('req.')) throw err;
    const name = prefix + err.argument.slice('req.'.length);
    throw new InvalidArgumentError(err.message.replace(err.argument, name), err.code as 'ERR_INVALID_ARG_VALUE', name);
  }
}
