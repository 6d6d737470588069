// The podnet-cni wire codec against docs/cni-protocol.md: byte layouts written out by hand, round trips, and every
// rule a message can break.
import { describe, expect, it } from 'vitest';

import {
  CniWireError,
  decodeAnswerHeader,
  decodeRequestHeader,
  encodeAnswer,
  encodeRequest,
  WIRE_LIMITS,
} from '../../lib/cni/wire.js';

function u16(n: number): number[] {
  return [n & 255, (n >> 8) & 255];
}
function u32(n: number): number[] {
  return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, (n >>> 24) & 255];
}
function ascii(text: string): number[] {
  return [...Buffer.from(text)];
}

/** requestBytes builds a request header field by field, so a test can break exactly one. */
function requestBytes(fields: {
  magic?: number[];
  version?: number;
  flags?: number;
  stdinLength?: number;
  netnsErrno?: number;
  envCount?: number;
  entries?: number[][];
  tail?: number[];
}): Uint8Array {
  const entries = fields.entries ?? [];
  return Uint8Array.from([
    ...(fields.magic ?? ascii('PNCQ')),
    ...u16(fields.version ?? 1),
    ...u16(fields.flags ?? 0),
    ...u32(fields.stdinLength ?? 0),
    ...u32(fields.netnsErrno ?? 0),
    ...u32(fields.envCount ?? entries.length),
    ...entries.flat(),
    ...(fields.tail ?? []),
  ]);
}

function entry(text: string, length = Buffer.byteLength(text)): number[] {
  return [...u32(length), ...ascii(text)];
}

function answerBytes(f: { magic?: number[]; version?: number; flags?: number; exit?: number; out?: number; err?: number; tail?: number[] }): Uint8Array {
  return Uint8Array.from([
    ...(f.magic ?? ascii('PNCA')),
    ...u16(f.version ?? 1),
    ...u16(f.flags ?? 0),
    ...u32(f.exit ?? 0),
    ...u32(f.out ?? 0),
    ...u32(f.err ?? 0),
    ...(f.tail ?? []),
  ]);
}

function wireError(fn: () => unknown): CniWireError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(CniWireError);
    expect((err as CniWireError).code).toBe('ERR_CNI_WIRE');
    return err as CniWireError;
  }
  throw new Error('expected a CniWireError');
}

describe('request header', () => {
  it('encodes the layout of docs/cni-protocol.md byte for byte', () => {
    const [header, ...rest] = encodeRequest({ hasNetnsFd: true, netnsErrno: 0, env: [['CNI_COMMAND', 'ADD'], ['CNI_IFNAME', 'eth0']] }, Buffer.from('{}'));
    expect([...header!]).toEqual([
      ...ascii('PNCQ'), 1, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
      15, 0, 0, 0, ...ascii('CNI_COMMAND=ADD'),
      15, 0, 0, 0, ...ascii('CNI_IFNAME=eth0'),
    ]);
    expect(rest.map((c) => Buffer.from(c).toString())).toEqual(['{}']);
  });

  it('round-trips env (values with = and UTF-8), flags, errno and length', () => {
    const env: [string, string][] = [['CNI_ARGS', 'A=1;B=2'], ['CNI_NETNS', '/run/netns/ü'], ['CNI_EMPTY', '']];
    const stdin = new Uint8Array(3 * WIRE_LIMITS.maxMessage + 5).fill(0x41);
    const [header, ...config] = encodeRequest({ hasNetnsFd: false, netnsErrno: 2, env }, stdin);
    expect(decodeRequestHeader(header!)).toEqual({ hasNetnsFd: false, stdinLength: stdin.byteLength, netnsErrno: 2, env });
    expect(config.map((c) => c.byteLength)).toEqual([65536, 65536, 65536, 5]);
  });

  it('sends no config message for an empty stdin', () => {
    expect(encodeRequest({ hasNetnsFd: false, netnsErrno: 0, env: [] }, new Uint8Array(0))).toHaveLength(1);
  });

  it('decodes the largest config length and entry the protocol allows', () => {
    const big = `CNI_X=${'v'.repeat(WIRE_LIMITS.maxEnvEntry - 6)}`;
    const h = decodeRequestHeader(requestBytes({ stdinLength: WIRE_LIMITS.maxConfig, entries: [entry(big)] }));
    expect(h.stdinLength).toBe(1048576);
    expect(h.env[0]![1]).toHaveLength(WIRE_LIMITS.maxEnvEntry - 6);
  });

  it('reads entry bytes that are not UTF-8 as U+FFFD (the protocol forbids only NUL)', () => {
    const h = decodeRequestHeader(requestBytes({ entries: [[...u32(7), ...ascii('CNI_A='), 0xff]] }));
    expect(h.env).toEqual([['CNI_A', '\ufffd']]);
  });

  const rejected: [string, Uint8Array, string][] = [
    ['empty message', new Uint8Array(0), 'header'],
    ['shorter than 20 bytes', requestBytes({}).subarray(0, 19), 'header'],
    ['bad magic', requestBytes({ magic: ascii('PNCA') }), 'magic'],
    ['version 2', requestBytes({ version: 2 }), 'version'],
    ['version 0', requestBytes({ version: 0 }), 'version'],
    ['unknown flag bit', requestBytes({ flags: 2 }), 'flags'],
    ['stdinLength over 1 MiB', requestBytes({ stdinLength: WIRE_LIMITS.maxConfig + 1 }), 'stdinLength'],
    ['negative netnsErrno', requestBytes({ netnsErrno: 0xffffffff }), 'netnsErrno'],
    ['netnsErrno with an fd', requestBytes({ flags: 1, netnsErrno: 2 }), 'netnsErrno'],
    ['65 entries', requestBytes({ envCount: 65 }), 'envCount'],
    ['entry count larger than the entries sent', requestBytes({ envCount: 2, entries: [entry('CNI_A=1')] }), 'env[1]'],
    ['entry length 0', requestBytes({ entries: [entry('', 0)] }), 'env[0].length'],
    ['entry length 16385', requestBytes({ entries: [entry('CNI_A=1', 16385)] }), 'env[0].length'],
    ['entry longer than the message', requestBytes({ entries: [entry('CNI_A=1', 9)] }), 'env[0]'],
    ['entry with NUL', requestBytes({ entries: [entry('CNI_A=\0')] }), 'env[0]'],
    ['entry without =', requestBytes({ entries: [entry('CNI_A')] }), 'env[0]'],
    ['entry with an empty name', requestBytes({ entries: [entry('=x')] }), 'env[0]'],
    ['entry not named CNI_*', requestBytes({ entries: [entry('PATH=/bin')] }), 'env[0]'],
    ['bytes after the last entry', requestBytes({ entries: [entry('CNI_A=1')], tail: [0] }), 'header'],
    ['message over 64 KiB', new Uint8Array(65537), 'header'],
  ];
  it.each(rejected)('rejects %s', (_, bytes, field) => {
    expect(wireError(() => decodeRequestHeader(bytes)).field).toBe(field);
  });

  it('refuses to encode what the protocol cannot carry', () => {
    const base = { hasNetnsFd: false, netnsErrno: 0, env: [] as [string, string][] };
    expect(wireError(() => encodeRequest(base, new Uint8Array(WIRE_LIMITS.maxConfig + 1))).field).toBe('stdinLength');
    expect(wireError(() => encodeRequest({ ...base, hasNetnsFd: true, netnsErrno: 13 }, new Uint8Array(0))).field).toBe('netnsErrno');
    const many = Array.from({ length: 65 }, (_, i): [string, string] => [`CNI_${i}`, '']);
    expect(wireError(() => encodeRequest({ ...base, env: many }, new Uint8Array(0))).field).toBe('envCount');
    expect(wireError(() => encodeRequest({ ...base, env: [['HOME', '/']] }, new Uint8Array(0))).field).toBe('env[0]');
    const long = Array.from({ length: 5 }, (_, i): [string, string] => [`CNI_${i}`, 'x'.repeat(16000)]);
    expect(wireError(() => encodeRequest({ ...base, env: long }, new Uint8Array(0))).field).toBe('header');
  });
});

describe('answer', () => {
  it('encodes the layout byte for byte, stdout then stderr each from a new message', () => {
    const messages = encodeAnswer({ exitStatus: 1, stdout: Buffer.from('out'), stderr: Buffer.from('err') });
    expect([...messages[0]!]).toEqual([...ascii('PNCA'), 1, 0, 0, 0, 1, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0]);
    expect(messages.slice(1).map((m) => Buffer.from(m).toString())).toEqual(['out', 'err']);
  });

  it('round-trips the largest streams in 64 KiB chunks', () => {
    const stdout = new Uint8Array(WIRE_LIMITS.maxStdout).fill(1);
    const stderr = new Uint8Array(WIRE_LIMITS.maxStderr).fill(2);
    const [header, ...rest] = encodeAnswer({ exitStatus: 255, stdout, stderr });
    expect(decodeAnswerHeader(header!)).toEqual({ exitStatus: 255, stdoutLength: stdout.byteLength, stderrLength: stderr.byteLength });
    expect(rest).toHaveLength(17);
    expect(rest.every((m) => m.byteLength === 65536)).toBe(true);
    expect(rest[16]![0]).toBe(2);
  });

  it('sends only the header for an empty answer', () => {
    expect(encodeAnswer({ exitStatus: 0, stdout: new Uint8Array(0), stderr: new Uint8Array(0) })).toHaveLength(1);
  });

  const rejected: [string, Uint8Array, string][] = [
    ['19 bytes', answerBytes({}).subarray(0, 19), 'answer'],
    ['21 bytes', answerBytes({ tail: [0] }), 'answer'],
    ['bad magic', answerBytes({ magic: ascii('PNCQ') }), 'magic'],
    ['version 2', answerBytes({ version: 2 }), 'version'],
    ['flags 1', answerBytes({ flags: 1 }), 'flags'],
    ['exit status 256', answerBytes({ exit: 256 }), 'exitStatus'],
    ['stdout over 1 MiB', answerBytes({ out: WIRE_LIMITS.maxStdout + 1 }), 'stdoutLength'],
    ['stderr over 64 KiB', answerBytes({ err: WIRE_LIMITS.maxStderr + 1 }), 'stderrLength'],
  ];
  it.each(rejected)('rejects %s', (_, bytes, field) => {
    expect(wireError(() => decodeAnswerHeader(bytes)).field).toBe(field);
  });

  it('refuses to encode an exit status or stream out of range', () => {
    const none = new Uint8Array(0);
    expect(wireError(() => encodeAnswer({ exitStatus: 256, stdout: none, stderr: none })).field).toBe('exitStatus');
    expect(wireError(() => encodeAnswer({ exitStatus: -1, stdout: none, stderr: none })).field).toBe('exitStatus');
    expect(wireError(() => encodeAnswer({ exitStatus: 0, stdout: new Uint8Array(WIRE_LIMITS.maxStdout + 1), stderr: none })).field).toBe('stdoutLength');
    expect(wireError(() => encodeAnswer({ exitStatus: 0, stdout: none, stderr: new Uint8Array(WIRE_LIMITS.maxStderr + 1) })).field).toBe('stderrLength');
  });
});
