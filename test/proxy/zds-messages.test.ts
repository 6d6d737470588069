// ZDS messages: golden bytes written by hand from the field numbers of Istio's zds.proto (tag = field << 3 | wire
// type; 0x0a = field 1 length-delimited, 0x12 = field 2, 0x1a = field 3, 0x2a = field 5, 0x08 = field 1 varint),
// round trips, the 1023-byte limit at its boundary, malformed input refused by code, and protoc's own reading of
// podnet's bytes (and podnet's of protoc's).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../lib/errors.js';
import { isZdsProtocolError, ZdsError } from '../../lib/proxy/errors.js';
import {
  decodeHello,
  decodeRequest,
  decodeResponse,
  encodeAck,
  encodeHello,
  encodeRequest,
  ZDS_MAX_MESSAGE_BYTES,
  ZdsVersion,
  type ZdsRequest,
} from '../../lib/proxy/zds-messages.js';
import { missingBinary } from '../helpers/privileged.js';
import { mulberry32 } from '../helpers/random.js';
import { create, toBinary } from '@bufbuild/protobuf';
import { WorkloadRequestSchema } from '../../lib/proxy/gen/zds_pb.js';
import { thrown } from '../helpers/rejection.js';

const root = join(import.meta.dirname, '..', '..');

function hex(text: string): Uint8Array {
  const clean = text.replace(/\s+/g, '');
  return Uint8Array.from(clean.match(/../g) ?? [], (b) => parseInt(b, 16));
}

function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex').replace(/(..)(?!$)/g, '$1 ');
}

const requestGoldens: { name: string; req: ZdsRequest; bytes: string }[] = [
  {
    name: 'add: AddWorkload (field 1) with uid (1) and workload_info (2) name (1), namespace (2)',
    req: { kind: 'add', uid: 'a', workload: { name: 'n', namespace: 's', serviceAccount: '' } },
    bytes: '0a 0b  0a 01 61  12 06 0a 01 6e 12 01 73',
  },
  {
    name: 'add with service_account (3)',
    req: { kind: 'add', uid: 'a', workload: { name: 'n', namespace: 's', serviceAccount: 'x' } },
    bytes: '0a 0e  0a 01 61  12 09 0a 01 6e 12 01 73 1a 01 78',
  },
  { name: 'keep: KeepWorkload is field 5, its uid field 1', req: { kind: 'keep', uid: 'a' }, bytes: '2a 03 0a 01 61' },
  { name: 'del: DelWorkload is field 2, its uid field 2', req: { kind: 'del', uid: 'a' }, bytes: '12 03 12 01 61' },
  { name: 'snapshotSent: SnapshotSent is field 3, empty', req: { kind: 'snapshotSent' }, bytes: '1a 00' },
];

describe('encodeRequest and decodeRequest: golden bytes', () => {
  it.each(requestGoldens)('$name', ({ req, bytes }) => {
    expect(toHex(encodeRequest(req))).toBe(toHex(hex(bytes)));
    expect(decodeRequest(hex(bytes))).toEqual(req);
  });

  it('decodes an add whose workload_info has only a name (absent strings are empty)', () => {
    expect(decodeRequest(hex('0a 08 0a 01 61 12 03 0a 01 6e'))).toEqual({
      kind: 'add',
      uid: 'a',
      workload: { name: 'n', namespace: '', serviceAccount: '' },
    });
  });
});

describe('hello and ack: golden bytes', () => {
  const hellos = [
    { name: 'V1', version: ZdsVersion.V1, bytes: '08 01' },
    { name: 'NOT_USED is the zero value, written as nothing', version: ZdsVersion.NOT_USED, bytes: '' },
    { name: 'an unknown version 7 (proto3 enums are open)', version: 7, bytes: '08 07' },
    { name: 'a negative int32, a 10-byte varint', version: -1, bytes: '08 ff ff ff ff ff ff ff ff ff 01' },
  ];
  it.each(hellos)('hello $name', ({ version, bytes }) => {
    expect(toHex(encodeHello(version))).toBe(toHex(hex(bytes)));
    expect(decodeHello(hex(bytes))).toEqual({ version });
  });

  it('encodeHello defaults to V1', () => {
    expect(toHex(encodeHello())).toBe('08 01');
  });

  const acks = [
    { name: 'success: an Ack (field 1) with no error', error: '', bytes: '0a 00' },
    { name: 'error "x" (Ack.error is field 1)', error: 'x', bytes: '0a 03 0a 01 78' },
  ];
  it.each(acks)('ack $name', ({ error, bytes }) => {
    expect(toHex(encodeAck(error))).toBe(toHex(hex(bytes)));
    expect(decodeResponse(hex(bytes))).toEqual({ ack: { error } });
  });

  it('encodeAck defaults to success', () => {
    expect(toHex(encodeAck())).toBe('0a 00');
  });
});

describe('encodeRequest writes what protobuf-es writes', () => {
  // encodeRequest writes the bytes itself (lib/proxy/zds-request-bytes.ts); protobuf-es's reflective encoder is the
  // reference: random requests, strings from empty to past 128 bytes (two-byte lengths), ASCII to astral-plane text.
  const alphabet = ['a', 'Z', '0', '-', '.', 'é', 'ß', '名', '🙂', ' ', '\u007f'];
  function randomText(next: () => number, allowEmpty: boolean): string {
    const length = Math.floor(next() * next() * 200) + (allowEmpty ? 0 : 1);
    let out = '';
    for (let i = 0; i < length; i++) out += alphabet[Math.floor(next() * alphabet.length)];
    return out;
  }
  function reference(req: ZdsRequest): Uint8Array {
    switch (req.kind) {
      case 'add': {
        const { name, namespace, serviceAccount } = req.workload;
        const value = { uid: req.uid, workloadInfo: { name, namespace, serviceAccount } };
        return toBinary(WorkloadRequestSchema, create(WorkloadRequestSchema, { payload: { case: 'add', value } }));
      }
      case 'keep':
      case 'del':
        return toBinary(WorkloadRequestSchema, create(WorkloadRequestSchema, { payload: { case: req.kind, value: { uid: req.uid } } }));
      default:
        return toBinary(WorkloadRequestSchema, create(WorkloadRequestSchema, { payload: { case: 'snapshotSent', value: {} } }));
    }
  }

  it('500 random requests of each kind, byte for byte', () => {
    const next = mulberry32(0x2d5);
    let twoByteLengths = 0;
    for (let i = 0; i < 500; i++) {
      const uid = randomText(next, false);
      const workload = { name: randomText(next, false), namespace: randomText(next, false), serviceAccount: randomText(next, true) };
      const requests: ZdsRequest[] = [{ kind: 'add', uid, workload }, { kind: 'keep', uid }, { kind: 'del', uid }];
      for (const req of requests) {
        const want = reference(req);
        if (want.length > ZDS_MAX_MESSAGE_BYTES) {
          expect(() => encodeRequest(req)).toThrow(ZdsError);
          continue;
        }
        if (want[1]! >= 0x80) twoByteLengths++;
        expect(toHex(encodeRequest(req)), JSON.stringify(req)).toBe(toHex(want));
      }
    }
    expect(toHex(encodeRequest({ kind: 'snapshotSent' }))).toBe(toHex(reference({ kind: 'snapshotSent' })));
    // The lengths of two bytes were reached, not only the one-byte ones.
    expect(twoByteLengths).toBeGreaterThan(50);
  });
});

describe('round trips', () => {
  const requests: { name: string; req: ZdsRequest }[] = [
    {
      name: 'a real-looking add',
      req: {
        kind: 'add',
        uid: '0f9c1d52-6a57-4b8e-9d3a-8f0e2f3b7c11',
        workload: { name: 'reviews-v2-5b8c9f7d6-x2k9p', namespace: 'bookinfo', serviceAccount: 'bookinfo-reviews' },
      },
    },
    { name: 'non-ASCII text', req: { kind: 'add', uid: 'é', workload: { name: '名前', namespace: '🙂', serviceAccount: 'ß' } } },
    { name: 'keep', req: { kind: 'keep', uid: 'uid-1' } },
    { name: 'del', req: { kind: 'del', uid: 'uid-1' } },
    { name: 'snapshotSent', req: { kind: 'snapshotSent' } },
  ];
  it.each(requests)('request $name', ({ req }) => {
    expect(decodeRequest(encodeRequest(req))).toEqual(req);
  });

  it('an ack error with NUL and non-ASCII text', () => {
    expect(decodeResponse(encodeAck('failed: \0 é 🙂'))).toEqual({ ack: { error: 'failed: \0 é 🙂' } });
  });

  it('decodes a Buffer slice at an offset', () => {
    const backing = Buffer.from(hex('ff ff 08 01 ff'));
    expect(decodeHello(backing.subarray(2, 4))).toEqual({ version: 1 });
  });
});

describe('protobuf rules on decode', () => {
  const cases = [
    { name: 'an unknown varint field in a hello', bytes: '08 01 10 05', decode: decodeHello, want: { version: 1 } },
    { name: 'an unknown field in a request', bytes: '22 02 08 01 1a 00', decode: decodeRequest, want: { kind: 'snapshotSent' } },
    {
      name: 'the reserved trust_domain (4) in a workload_info',
      bytes: '0a 0a 0a 01 61 12 05 0a 01 6e 22 00',
      decode: decodeRequest,
      want: { kind: 'add', uid: 'a', workload: { name: 'n', namespace: '', serviceAccount: '' } },
    },
    { name: 'a fixed32 unknown field in an ack', bytes: '0a 08 0a 01 78 15 00 00 00 00', decode: decodeResponse, want: { ack: { error: 'x' } } },
    { name: 'a oneof given twice: the last member wins', bytes: '12 03 12 01 61 1a 00', decode: decodeRequest, want: { kind: 'snapshotSent' } },
    { name: 'a string given twice: the last wins', bytes: '2a 06 0a 01 61 0a 01 62', decode: decodeRequest, want: { kind: 'keep', uid: 'b' } },
  ] as const;
  it.each(cases)('$name', ({ bytes, decode, want }) => {
    expect(decode(hex(bytes))).toEqual(want);
  });
});

describe('malformed input is ERR_ZDS_PROTOCOL', () => {
  const hello = 'istio.workload.zds.ZdsHello';
  const request = 'istio.workload.zds.WorkloadRequest';
  const response = 'istio.workload.zds.WorkloadResponse';
  const cases = [
    { name: 'hello: trailing 0xff (a tag cut short)', bytes: '08 01 ff', decode: decodeHello, type: hello },
    { name: 'hello: a trailing zero byte (field number 0)', bytes: '08 01 00', decode: decodeHello, type: hello },
    { name: 'hello: a varint cut short', bytes: '08 81', decode: decodeHello, type: hello },
    { name: 'hello: version with wire type 2', bytes: '0a 01 01', decode: decodeHello, type: hello },
    { name: 'hello: version with wire type 5 and one byte (protobuf-es alone reads it as a varint)', bytes: '0d 01', decode: decodeHello, type: hello },
    { name: 'hello: wire type 7', bytes: '0f', decode: decodeHello, type: hello },
    { name: 'hello: an end-group tag with no start', bytes: '0c', decode: decodeHello, type: hello },
    { name: 'hello: an unknown group never closed', bytes: '13 08 01', decode: decodeHello, type: hello },
    { name: 'response: empty (no ack)', bytes: '', decode: decodeResponse, type: response },
    { name: 'response: only an unknown field (no ack)', bytes: '10 01', decode: decodeResponse, type: response },
    { name: 'response: ack length past the end', bytes: '0a 05 0a 01 78', decode: decodeResponse, type: response },
    { name: 'response: a string running past its ack into the rest', bytes: '0a 02 0a 02 78 79', decode: decodeResponse, type: response },
    { name: 'response: invalid UTF-8 in the error', bytes: '0a 03 0a 01 ff', decode: decodeResponse, type: response },
    { name: 'response: ack with wire type 0', bytes: '08 01', decode: decodeResponse, type: response },
    { name: 'response: a hello', bytes: '08 01 00', decode: decodeResponse, type: response },
    { name: 'request: empty (no payload)', bytes: '', decode: decodeRequest, type: request },
    { name: 'request: only an unknown field (no payload)', bytes: '22 00', decode: decodeRequest, type: request },
    // Lengths one short (7 for the 8-byte AddWorkload, 2 for the 3-byte WorkloadInfo): protoc refuses it too.
    { name: 'request: add with lengths one short', bytes: '0a 07 0a 01 61 12 02 0a 01 6e', decode: decodeRequest, type: request },
    { name: 'request: add without workload_info', bytes: '0a 03 0a 01 61', decode: decodeRequest, type: request },
    { name: 'request: keep cut short', bytes: '2a 03 0a 01', decode: decodeRequest, type: request },
    { name: 'request: del uid with wire type 0', bytes: '12 02 10 01', decode: decodeRequest, type: request },
    { name: 'request: workload_info with wire type 0', bytes: '0a 05 0a 01 61 10 01', decode: decodeRequest, type: request },
    { name: 'request: an unknown field longer than the message', bytes: '22 05 00', decode: decodeRequest, type: request },
    { name: 'request: trailing garbage after snapshotSent', bytes: '1a 00 ff ff', decode: decodeRequest, type: request },
  ];
  it.each(cases)('$name', ({ bytes, decode, type }) => {
    const err = thrown(() => decode(hex(bytes)));
    expect(err).toBeInstanceOf(ZdsError);
    expect((err as ZdsError).code).toBe('ERR_ZDS_PROTOCOL');
    expect((err as ZdsError).messageType).toBe(type);
    expect(isZdsProtocolError(err)).toBe(true);
  });

  it('keeps the decoder error as the cause and says what the bytes are not', () => {
    const err = thrown(() => decodeHello(hex('08 01 ff'))) as ZdsError;
    expect(err.message).toMatch(/^3 bytes are not a ZDS ZdsHello: /);
    expect(err.cause).toBeInstanceOf(Error);
  });

  it.each([
    { name: 'decodeHello', decode: decodeHello },
    { name: 'decodeRequest', decode: decodeRequest },
    { name: 'decodeResponse', decode: decodeResponse },
  ])('$name refuses a non-Uint8Array with ERR_INVALID_ARG_TYPE', ({ decode }) => {
    const err = thrown(() => decode('08 01' as unknown as Uint8Array));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).code).toBe('ERR_INVALID_ARG_TYPE');
    expect((err as InvalidArgumentError).argument).toBe('bytes');
  });
});

describe('the 1023-byte limit', () => {
  function tooLarge(fn: () => unknown): ZdsError {
    const err = thrown(fn);
    expect(err).toBeInstanceOf(ZdsError);
    expect((err as ZdsError).code).toBe('ERR_ZDS_MESSAGE_TOO_LARGE');
    expect(isZdsProtocolError(err)).toBe(false);
    return err as ZdsError;
  }

  it('is one byte under the 1024-byte read buffer', () => {
    expect(ZDS_MAX_MESSAGE_BYTES).toBe(1023);
  });

  // add, uid 'u', namespace 'ns', serviceAccount 'sa', name of n >= 128 bytes: name field 1+2+n, workload_info
  // n+3+4+4, AddWorkload 3 + (1+2+n+11), WorkloadRequest 1+2+(n+17) = n+20 bytes.
  const add = (n: number): ZdsRequest => ({
    kind: 'add',
    uid: 'u',
    workload: { name: 'n'.repeat(n), namespace: 'ns', serviceAccount: 'sa' },
  });

  it('an add of 1023 bytes is sent, one of 1024 refused naming its longest field', () => {
    const bytes = encodeRequest(add(1003));
    expect(bytes.length).toBe(1023);
    expect(decodeRequest(bytes)).toEqual(add(1003));
    const err = tooLarge(() => encodeRequest(add(1004)));
    expect(err).toMatchObject({ size: 1024, limit: 1023, field: 'workload.name', messageType: 'istio.workload.zds.WorkloadRequest' });
    expect(err.message).toBe(
      "ZDS add message for uid 'u' is 1024 bytes, over the limit of 1023 (its longest field is 'workload.name', 1004 bytes)",
    );
  });

  it('the sum of fields counts, not each one', () => {
    const req: ZdsRequest = { kind: 'add', uid: 'u'.repeat(400), workload: { name: 'n'.repeat(320), namespace: 'ns'.repeat(150), serviceAccount: 'sa' } };
    expect(tooLarge(() => encodeRequest(req))).toMatchObject({ field: 'uid' });
  });

  // del, uid of n >= 128 bytes: DelWorkload 1+2+n, WorkloadRequest 1+2+(n+3) = n+6 bytes.
  it('a del of 1023 bytes is sent, one of 1024 refused', () => {
    expect(encodeRequest({ kind: 'del', uid: 'd'.repeat(1017) }).length).toBe(1023);
    expect(tooLarge(() => encodeRequest({ kind: 'del', uid: 'd'.repeat(1018) }))).toMatchObject({ size: 1024, field: 'uid' });
  });

  it('counts UTF-8 bytes, not characters (keep with 2-byte characters)', () => {
    expect(encodeRequest({ kind: 'keep', uid: 'é'.repeat(508) }).length).toBe(1022);
    expect(tooLarge(() => encodeRequest({ kind: 'keep', uid: 'é'.repeat(509) }))).toMatchObject({ size: 1024 });
  });

  // ack, error of n >= 128 bytes: Ack 1+2+n, WorkloadResponse 1+2+(n+3) = n+6 bytes.
  it('holds for an ack from the fake proxy too', () => {
    expect(encodeAck('e'.repeat(1017)).length).toBe(1023);
    expect(tooLarge(() => encodeAck('e'.repeat(1018)))).toMatchObject({ size: 1024, field: 'ack.error', messageType: 'istio.workload.zds.WorkloadResponse' });
  });

  it('refuses a huge field without trouble', () => {
    expect(tooLarge(() => encodeRequest({ kind: 'del', uid: 'x'.repeat(1 << 20) }))).toMatchObject({ size: (1 << 20) + 8 });
  });
});

describe('argument checks', () => {
  const wl = { name: 'n', namespace: 's', serviceAccount: 'a' };
  const cases: { name: string; call: () => unknown; code: string; argument: string }[] = [
    { name: 'a request that is not an object', call: () => encodeRequest(null as unknown as ZdsRequest), code: 'ERR_INVALID_ARG_TYPE', argument: 'req' },
    { name: 'an unknown kind', call: () => encodeRequest({ kind: 'update' } as unknown as ZdsRequest), code: 'ERR_INVALID_ARG_VALUE', argument: 'req.kind' },
    { name: 'an empty uid', call: () => encodeRequest({ kind: 'del', uid: '' }), code: 'ERR_INVALID_ARG_VALUE', argument: 'req.uid' },
    { name: 'a uid with NUL', call: () => encodeRequest({ kind: 'keep', uid: 'a\0b' }), code: 'ERR_INVALID_ARG_VALUE', argument: 'req.uid' },
    { name: 'a uid with a lone surrogate', call: () => encodeRequest({ kind: 'del', uid: 'a\ud800' }), code: 'ERR_INVALID_ARG_VALUE', argument: 'req.uid' },
    { name: 'a uid that is a number', call: () => encodeRequest({ kind: 'add', uid: 5 as unknown as string, workload: wl }), code: 'ERR_INVALID_ARG_TYPE', argument: 'req.uid' },
    { name: 'an add without workload', call: () => encodeRequest({ kind: 'add', uid: 'a' } as unknown as ZdsRequest), code: 'ERR_INVALID_ARG_TYPE', argument: 'req.workload' },
    { name: 'an empty name', call: () => encodeRequest({ kind: 'add', uid: 'a', workload: { ...wl, name: '' } }), code: 'ERR_INVALID_ARG_VALUE', argument: 'req.workload.name' },
    { name: 'a namespace with NUL', call: () => encodeRequest({ kind: 'add', uid: 'a', workload: { ...wl, namespace: 'x\0' } }), code: 'ERR_INVALID_ARG_VALUE', argument: 'req.workload.namespace' },
    { name: 'a missing serviceAccount', call: () => encodeRequest({ kind: 'add', uid: 'a', workload: { name: 'n', namespace: 's' } as never }), code: 'ERR_INVALID_ARG_TYPE', argument: 'req.workload.serviceAccount' },
    { name: 'a serviceAccount with NUL', call: () => encodeRequest({ kind: 'add', uid: 'a', workload: { ...wl, serviceAccount: '\0' } }), code: 'ERR_INVALID_ARG_VALUE', argument: 'req.workload.serviceAccount' },
    { name: 'a serviceAccount with a lone surrogate', call: () => encodeRequest({ kind: 'add', uid: 'a', workload: { ...wl, serviceAccount: '\udc00' } }), code: 'ERR_INVALID_ARG_VALUE', argument: 'req.workload.serviceAccount' },
    { name: 'a fractional version', call: () => encodeHello(1.5), code: 'ERR_INVALID_ARG_VALUE', argument: 'version' },
    { name: 'a version past int32', call: () => encodeHello(2 ** 31), code: 'ERR_INVALID_ARG_VALUE', argument: 'version' },
    { name: 'an ack error that is not a string', call: () => encodeAck(5 as unknown as string), code: 'ERR_INVALID_ARG_TYPE', argument: 'error' },
    { name: 'an ack error with a lone surrogate', call: () => encodeAck('\udc00'), code: 'ERR_INVALID_ARG_VALUE', argument: 'error' },
  ];
  it.each(cases)('$name', ({ call, code, argument }) => {
    const err = thrown(call);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ code, argument });
  });

  it('names what was expected and what came', () => {
    expect((thrown(() => encodeRequest({ kind: 'del', uid: '' })) as Error).message).toBe(
      'expected a non-empty string without NUL for req.uid but received "" of type string',
    );
  });
});

// protoc reads podnet's bytes with lib/proxy/zds.proto, and podnet reads protoc's. CI installs protoc
// (.ci/run); elsewhere the suite is skipped with the reason in its name.
const protocGap = missingBinary('protoc');
const describeProtoc =
  protocGap === undefined
    ? describe
    : process.env.PODNET_REQUIRE_PRIVILEGED === '1'
      ? (name: string) => describe(name, () => it('has protoc', () => { throw new Error(`PODNET_REQUIRE_PRIVILEGED=1 but this suite ${protocGap}`); }))
      : (name: string, fn: () => void) => describe.skip(`${name} [skipped: ${protocGap}]`, fn);

function protoc(mode: '--decode' | '--encode', type: string, input: Uint8Array | string): Buffer {
  const run = spawnSync('protoc', [`${mode}=istio.workload.zds.${type}`, '-I', 'lib/proxy', 'zds.proto'], { cwd: root, input });
  if (run.status !== 0) throw new Error(`protoc ${mode} ${type} failed: ${run.stderr.toString()}`);
  return run.stdout;
}

describeProtoc('protoc and lib/proxy/zds.proto', () => {
  const texts: { name: string; req: ZdsRequest; text: string }[] = [
    {
      name: 'add',
      req: { kind: 'add', uid: 'u-1', workload: { name: 'pod', namespace: 'ns', serviceAccount: 'sa' } },
      text: 'add {\n  uid: "u-1"\n  workload_info {\n    name: "pod"\n    namespace: "ns"\n    service_account: "sa"\n  }\n}\n',
    },
    { name: 'keep', req: { kind: 'keep', uid: 'u-2' }, text: 'keep {\n  uid: "u-2"\n}\n' },
    { name: 'del', req: { kind: 'del', uid: 'u-3' }, text: 'del {\n  uid: "u-3"\n}\n' },
    { name: 'snapshotSent', req: { kind: 'snapshotSent' }, text: 'snapshot_sent {\n}\n' },
  ];

  it.each(texts)('protoc decodes podnet\'s $name as WorkloadRequest text', ({ req, text }) => {
    expect(protoc('--decode', 'WorkloadRequest', encodeRequest(req)).toString()).toBe(text);
  });

  it.each(texts)('podnet decodes protoc\'s $name', ({ req, text }) => {
    expect(decodeRequest(protoc('--encode', 'WorkloadRequest', text))).toEqual(req);
  });

  it('hello and ack agree both ways', () => {
    expect(protoc('--decode', 'ZdsHello', encodeHello()).toString()).toBe('version: V1\n');
    expect(protoc('--decode', 'WorkloadResponse', encodeAck('no netns')).toString()).toBe('ack {\n  error: "no netns"\n}\n');
    expect(decodeHello(protoc('--encode', 'ZdsHello', 'version: V1'))).toEqual({ version: 1 });
    expect(decodeResponse(protoc('--encode', 'WorkloadResponse', 'ack { error: "bad" }'))).toEqual({ ack: { error: 'bad' } });
  });

  it('the committed lib/proxy/gen/zds_pb.ts is what the generator writes today', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const command = pkg.scripts['gen:zds'];
    expect(command).toBeDefined();
    const out = mkdtempSync(join(tmpdir(), 'podnet-zds-gen-'));
    try {
      const argv = command!.split(' ').map((arg) => arg.replace('--es_out=lib/proxy/gen', `--es_out=${out}`));
      expect(argv.some((arg) => arg === `--es_out=${out}`)).toBe(true);
      execFileSync(argv[0]!, argv.slice(1), { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
      expect(readFileSync(join(out, 'zds_pb.ts'), 'utf8')).toBe(readFileSync(join(root, 'lib/proxy/gen/zds_pb.ts'), 'utf8'));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
