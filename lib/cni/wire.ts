/**
 * podnet/cni-wire: the podnet-cni wire protocol (docs/cni-protocol.md) in TypeScript: the request header the plugin
 * sends and the answer the agent sends back, encoded and decoded byte-exactly, for code that speaks to a CniServer
 * without the plugin executable (a test client, another plugin). Decoders trust no length: a message that breaks any
 * rule is a CniWireError, and the exchange ends there.
 *
 * @module podnet/cni-wire
 */
import { PodnetError } from '../errors.js';

/** WIRE_LIMITS are the protocol's bounds: message size, config size, environment entries, answer streams. */
export const WIRE_LIMITS = {
  maxMessage: 65536,
  maxConfig: 1048576,
  maxEnvCount: 64,
  maxEnvEntry: 16384,
  maxStdout: 1048576,
  maxStderr: 65536,
} as const;

/** WIRE_VERSION is the protocol version both headers carry. */
export const WIRE_VERSION = 1;

const REQUEST_MAGIC = [0x50, 0x4e, 0x43, 0x51]; // PNCQ
const ANSWER_MAGIC = [0x50, 0x4e, 0x43, 0x41]; // PNCA
const REQUEST_FIXED = 20;
const ANSWER_SIZE = 20;
const FLAG_NETNS_FD = 1;

/**
 * CniWireError (`ERR_CNI_WIRE`) is a message that breaks the wire protocol (bad magic, version, flags, a length or
 * field out of range, bytes left over or missing). `field` names what was wrong.
 */
export class CniWireError extends PodnetError {
  declare readonly code: 'ERR_CNI_WIRE';
  /** The header field (or `message`) that broke the protocol. */
  readonly field: string;

  constructor(field: string, message: string) {
    super(`cni wire: ${field}: ${message}`, 'ERR_CNI_WIRE');
    this.field = field;
  }
}

/** WireRequestHeader is the first message of a request. */
export interface WireRequestHeader {
  /** Whether a netns fd is attached to the header message. */
  hasNetnsFd: boolean;
  /** Bytes of network config that follow in the next messages, 0..1048576. */
  stdinLength: number;
  /** 0, or the errno with which the plugin failed to open CNI_NETNS (then no fd is attached). */
  netnsErrno: number;
  /** The plugin's `CNI_*` environment entries, in the order of its environ. */
  env: [name: string, value: string][];
}

/** WireAnswer is a whole answer: the plugin's exit status and what it prints. */
export interface WireAnswer {
  /** The plugin's exit status, 0..255. */
  exitStatus: number;
  /** Bytes for the plugin's stdout, at most 1 MiB. */
  stdout: Uint8Array;
  /** Bytes for the plugin's stderr, at most 64 KiB. */
  stderr: Uint8Array;
}

/** WireAnswerHeader is the first message of an answer: the exit status and the lengths of the streams that follow. */
export interface WireAnswerHeader {
  exitStatus: number;
  stdoutLength: number;
  stderrLength: number;
}

// Lenient: the protocol forbids only NUL in an entry. Bytes that are not UTF-8 read as U+FFFD, which the request
// checks refuse (code 4) in every variable podnet reads.
const utf8 = new TextDecoder('utf-8');
const encoder = new TextEncoder();

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function checkMagic(bytes: Uint8Array, magic: number[]): void {
  for (let i = 0; i < 4; i++) {
    if (bytes[i] !== magic[i]) throw new CniWireError('magic', `expected ${String.fromCharCode(...magic)}`);
  }
}

function checkRange(field: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new CniWireError(field, `expected ${min}..${max} but got ${value}`);
  }
  return value;
}

function checkMessage(bytes: unknown, field: string): Uint8Array {
  if (!(bytes instanceof Uint8Array)) throw new CniWireError(field, 'expected a Uint8Array');
  if (bytes.byteLength < 1 || bytes.byteLength > WIRE_LIMITS.maxMessage) {
    throw new CniWireError(field, `a message is 1..${WIRE_LIMITS.maxMessage} bytes, got ${bytes.byteLength}`);
  }
  return bytes;
}

/**
 * parseEnvEntry throws CniWireError unless bytes are one `CNI_NAME=VALUE` entry the protocol allows; returns the pair
 * (bytes that are not UTF-8 as U+FFFD).
 */
function parseEnvEntry(bytes: Uint8Array, index: number): [string, string] {
  const field = `env[${index}]`;
  if (bytes.includes(0)) throw new CniWireError(field, 'contains NUL');
  const text = utf8.decode(bytes);
  const eq = text.indexOf('=');
  if (eq < 1) throw new CniWireError(field, 'is not NAME=VALUE');
  const name = text.slice(0, eq);
  if (!name.startsWith('CNI_')) throw new CniWireError(field, `name '${name}' does not start with CNI_`);
  return [name, text.slice(eq + 1)];
}

/**
 * decodeRequestHeader decodes the first message of a request. Throws CniWireError for any break of the protocol:
 * bad magic, version or flags, stdinLength over 1 MiB, a negative netnsErrno or one next to an attached fd, more
 * than 64 entries, an entry of 0 or over 16384 bytes, with NUL, not `CNI_NAME=VALUE`, or bytes missing or left over
 * after the last entry. Entry bytes that are not UTF-8 decode as U+FFFD.
 */
export function decodeRequestHeader(bytes: Uint8Array): WireRequestHeader {
  checkMessage(bytes, 'header');
  if (bytes.byteLength < REQUEST_FIXED) throw new CniWireError('header', `${bytes.byteLength} bytes is shorter than 20`);
  checkMagic(bytes, REQUEST_MAGIC);
  const v = view(bytes);
  checkRange('version', v.getUint16(4, true), WIRE_VERSION, WIRE_VERSION);
  const flags = v.getUint16(6, true);
  if ((flags & ~FLAG_NETNS_FD) !== 0) throw new CniWireError('flags', `unknown bits 0x${flags.toString(16)}`);
  const hasNetnsFd = (flags & FLAG_NETNS_FD) !== 0;
  const stdinLength = checkRange('stdinLength', v.getUint32(8, true), 0, WIRE_LIMITS.maxConfig);
  const netnsErrno = checkRange('netnsErrno', v.getInt32(12, true), 0, 0x7fffffff);
  if (hasNetnsFd && netnsErrno !== 0) throw new CniWireError('netnsErrno', 'is set while a netns fd is attached');
  const envCount = checkRange('envCount', v.getUint32(16, true), 0, WIRE_LIMITS.maxEnvCount);
  const env: [string, string][] = [];
  let at = REQUEST_FIXED;
  for (let i = 0; i < envCount; i++) {
    if (at + 4 > bytes.byteLength) throw new CniWireError(`env[${i}]`, 'length is missing');
    const length = checkRange(`env[${i}].length`, v.getUint32(at, true), 1, WIRE_LIMITS.maxEnvEntry);
    at += 4;
    if (at + length > bytes.byteLength) throw new CniWireError(`env[${i}]`, `${length} bytes announced, fewer sent`);
    env.push(parseEnvEntry(bytes.subarray(at, at + length), i));
    at += length;
  }
  if (at !== bytes.byteLength) throw new CniWireError('header', `${bytes.byteLength - at} bytes after the last entry`);
  return { hasNetnsFd, stdinLength, netnsErrno, env };
}

/** chunks splits bytes into messages of at most 64 KiB (none for empty bytes). */
function chunks(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.byteLength; at += WIRE_LIMITS.maxMessage) {
    out.push(bytes.subarray(at, Math.min(at + WIRE_LIMITS.maxMessage, bytes.byteLength)));
  }
  return out;
}

/**
 * encodeRequest encodes a request: the header message (stdinLength taken from stdin), then the config chunks.
 * Throws CniWireError for a request the protocol cannot carry (the same rules decodeRequestHeader checks, and a
 * header over 64 KiB).
 */
export function encodeRequest(header: Omit<WireRequestHeader, 'stdinLength'>, stdin: Uint8Array): Uint8Array[] {
  checkRange('stdinLength', stdin.byteLength, 0, WIRE_LIMITS.maxConfig);
  checkRange('netnsErrno', header.netnsErrno, 0, 0x7fffffff);
  if (header.hasNetnsFd && header.netnsErrno !== 0) throw new CniWireError('netnsErrno', 'is set while a netns fd is attached');
  checkRange('envCount', header.env.length, 0, WIRE_LIMITS.maxEnvCount);
  const entries: Uint8Array[] = [];
  for (let i = 0; i < header.env.length; i++) {
    const pair = header.env[i];
    if (pair === undefined) throw new CniWireError(`env[${i}]`, 'is missing');
    const entry = encoder.encode(`${pair[0]}=${pair[1]}`);
    checkRange(`env[${i}].length`, entry.byteLength, 1, WIRE_LIMITS.maxEnvEntry);
    parseEnvEntry(entry, i);
    entries.push(entry);
  }
  const size = entries.reduce((n, e) => n + 4 + e.byteLength, REQUEST_FIXED);
  if (size > WIRE_LIMITS.maxMessage) throw new CniWireError('header', `${size} bytes is over ${WIRE_LIMITS.maxMessage}`);
  const out = new Uint8Array(size);
  const v = view(out);
  out.set(REQUEST_MAGIC, 0);
  v.setUint16(4, WIRE_VERSION, true);
  v.setUint16(6, header.hasNetnsFd ? FLAG_NETNS_FD : 0, true);
  v.setUint32(8, stdin.byteLength, true);
  v.setInt32(12, header.netnsErrno, true);
  v.setUint32(16, entries.length, true);
  let at = REQUEST_FIXED;
  for (const entry of entries) {
    v.setUint32(at, entry.byteLength, true);
    out.set(entry, at + 4);
    at += 4 + entry.byteLength;
  }
  return [out, ...chunks(stdin)];
}

/**
 * encodeAnswer encodes an answer: the header message, then stdout in chunks, then stderr in chunks (each stream
 * starting in a new message). Throws CniWireError for an exit status outside 0..255 or a stream over its limit.
 */
export function encodeAnswer(answer: WireAnswer): Uint8Array[] {
  checkRange('exitStatus', answer.exitStatus, 0, 255);
  checkRange('stdoutLength', answer.stdout.byteLength, 0, WIRE_LIMITS.maxStdout);
  checkRange('stderrLength', answer.stderr.byteLength, 0, WIRE_LIMITS.maxStderr);
  const header = new Uint8Array(ANSWER_SIZE);
  const v = view(header);
  header.set(ANSWER_MAGIC, 0);
  v.setUint16(4, WIRE_VERSION, true);
  v.setUint16(6, 0, true);
  v.setUint32(8, answer.exitStatus, true);
  v.setUint32(12, answer.stdout.byteLength, true);
  v.setUint32(16, answer.stderr.byteLength, true);
  return [header, ...chunks(answer.stdout), ...chunks(answer.stderr)];
}

/**
 * decodeAnswerHeader decodes the first message of an answer. Throws CniWireError for a message that is not exactly
 * 20 bytes, bad magic, version or flags, or a field out of range.
 */
export function decodeAnswerHeader(bytes: Uint8Array): WireAnswerHeader {
  checkMessage(bytes, 'answer');
  if (bytes.byteLength !== ANSWER_SIZE) throw new CniWireError('answer', `expected 20 bytes but got ${bytes.byteLength}`);
  checkMagic(bytes, ANSWER_MAGIC);
  const v = view(bytes);
  checkRange('version', v.getUint16(4, true), WIRE_VERSION, WIRE_VERSION);
  checkRange('flags', v.getUint16(6, true), 0, 0);
  return {
    exitStatus: checkRange('exitStatus', v.getUint32(8, true), 0, 255),
    stdoutLength: checkRange('stdoutLength', v.getUint32(12, true), 0, WIRE_LIMITS.maxStdout),
    stderrLength: checkRange('stderrLength', v.getUint32(16, true), 0, WIRE_LIMITS.maxStderr),
  };
}
