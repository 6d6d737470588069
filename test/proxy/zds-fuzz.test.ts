// Seeded mutation fuzzing of what a peer sends over ZDS: the decoders, then a ZtunnelServer fed mutated acks and a
// FakeZtunnel fed mutated requests. Anything thrown that is not podnet's own typed error is a finding; each case
// names its seed so it can be replayed. ZDS is decoded in JS (protobuf-es), so this is its fuzzer, as libFuzzer is
// the native decoders'.
import { describe, expect, it } from 'vitest';

import { PodnetError } from '../../lib/errors.js';
import { Netns } from '../../lib/netns.js';
import { ZdsError } from '../../lib/proxy/errors.js';
import { ZtunnelServer } from '../../lib/proxy/ztunnel-server.js';
import {
  decodeHello,
  decodeRequest,
  decodeResponse,
  encodeAck,
  encodeHello,
  encodeRequest,
} from '../../lib/proxy/zds-messages.js';
import { FakeZtunnel } from '../../lib/testing/index.js';
import { SeqpacketServer, SeqpacketSocket } from '../../lib/unix/index.js';
import { mulberry32 } from '../helpers/random.js';
import { checkFdsPerTest, socketDir } from '../unix/helpers/fds.js';

const nextPath = socketDir();
const W = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };
const WAIT = { timeoutMs: 20_000 };

const SEEDS: Uint8Array[] = [
  encodeRequest({ kind: 'add', uid: 'uid-1', workload: W }),
  encodeRequest({ kind: 'keep', uid: 'uid-2' }),
  encodeRequest({ kind: 'del', uid: 'uid-3' }),
  encodeRequest({ kind: 'snapshotSent' }),
  encodeAck(''),
  encodeAck('failed to start listener'),
  encodeHello(1),
  encodeHello(7),
];

/** mutate applies 1..4 random edits: bit flips, byte sets, truncation, insertion, duplication, splices of seeds. */
function mutate(rand: () => number, input: Uint8Array): Uint8Array {
  let bytes = [...input];
  const edits = 1 + Math.floor(rand() * 4);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(rand() * (bytes.length + 1));
    switch (Math.floor(rand() * 7)) {
      case 0:
        if (bytes.length) bytes[at % bytes.length]! ^= 1 << Math.floor(rand() * 8);
        break;
      case 1:
        if (bytes.length) bytes[at % bytes.length] = [0x00, 0xff, 0x7f, 0x80, 0x0a, 0x12][Math.floor(rand() * 6)]!;
        break;
      case 2:
        bytes = bytes.slice(0, at);
        break;
      case 3:
        bytes.splice(at, 0, Math.floor(rand() * 256));
        break;
      case 4:
        bytes = bytes.concat(bytes.slice(at));
        break;
      case 5:
        bytes.splice(at, 0, ...SEEDS[Math.floor(rand() * SEEDS.length)]!);
        break;
      default:
        bytes.splice(at, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f); // an overlong varint
    }
  }
  return Uint8Array.from(bytes.slice(0, 1023));
}

function mutants(seed: number, n: number): Uint8Array[] {
  const rand = mulberry32(seed);
  return Array.from({ length: n }, () => mutate(rand, SEEDS[Math.floor(rand() * SEEDS.length)]!));
}

describe('ZDS decoders under mutated input', () => {
  it('return a value or throw ZdsError for 30,000 mutants, never anything else', () => {
    const findings: string[] = [];
    let decoded = 0;
    const seed = 0x2d5;
    for (const bytes of mutants(seed, 30_000)) {
      for (const decode of [decodeRequest, decodeResponse, decodeHello]) {
        try {
          decode(bytes);
          decoded++;
        } catch (err) {
          if (!(err instanceof ZdsError) || err.code !== 'ERR_ZDS_PROTOCOL') {
            findings.push(`${decode.name}(${Buffer.from(bytes).toString('hex')}): ${String(err)}`);
          }
        }
      }
    }
    expect(findings.slice(0, 5), `seed ${seed}`).toEqual([]);
    // The mutants are not all garbage: a good share still decodes, so the decoders' deeper paths were reached.
    expect(decoded).toBeGreaterThan(3_000);
  });

  it('decode what they accept to something that re-encodes (no half-read values)', () => {
    for (const bytes of mutants(0x77, 5_000)) {
      let req;
      try {
        req = decodeRequest(bytes);
      } catch {
        continue;
      }
      if (req.kind === 'add' || req.kind === 'keep' || req.kind === 'del') expect(typeof req.uid).toBe('string');
      if (req.kind === 'add') expect(Object.keys(req.workload).sort()).toEqual(['name', 'namespace', 'serviceAccount']);
    }
  });
});

describe('ZDS peers under mutated messages', () => {
  checkFdsPerTest();

  it('ZtunnelServer: a mutated answer fails only that request with a typed error and drops only that connection', async () => {
    const server = await ZtunnelServer.listen({ path: nextPath(), timeoutMs: 10_000 });
    const ns = Netns.current();
    try {
      const seed = 0x51;
      let proxy: SeqpacketSocket | undefined;
      const outcomes = new Map<string, number>();
      for (const bytes of mutants(seed, 150)) {
        if (!proxy || server.connected === 0) {
          proxy?.close();
          const connected = new Promise((resolve) => server.once('snapshotSent', resolve));
          proxy = await SeqpacketSocket.connect(server.path, WAIT);
          await proxy.send(encodeHello(), WAIT);
          // The snapshot: the workload added before, then SnapshotSent, each acked.
          for (;;) {
            const msg = await proxy.receive({ ...WAIT, maxFds: 1 });
            for (const fd of msg!.fds) fd.close();
            await proxy.send(encodeAck(), WAIT);
            if (decodeRequest(msg!.data).kind === 'snapshotSent') break;
          }
          await connected;
        }
        const added = server.addWorkload('u', W, ns);
        const got = await proxy.receive({ ...WAIT, maxFds: 1 });
        for (const fd of got?.fds ?? []) fd.close();
        await proxy.send(bytes.length ? bytes : Uint8Array.of(0), WAIT).catch(() => undefined);
        const result = await added.then(
          () => 'ok',
          (err: unknown) => (err instanceof PodnetError ? err.code : `untyped: ${String(err)}`),
        );
        outcomes.set(result, (outcomes.get(result) ?? 0) + 1);
      }
      proxy?.close();
      expect([...outcomes.keys()].filter((k) => k.startsWith('untyped')), `seed ${seed}`).toEqual([]);
      expect([...outcomes.keys()].every((k) => ['ok', 'ERR_PROXY_ACK', 'ERR_PROXY_PROTOCOL'].includes(k))).toBe(true);
      expect(outcomes.get('ERR_PROXY_PROTOCOL')).toBeGreaterThan(0);
    } finally {
      ns.close();
      await server.close();
    }
  });

  it('FakeZtunnel: a mutated request is answered (an ack or an ack error), never a crash or a silent drop', async () => {
    const server = SeqpacketServer.listen({ path: nextPath() });
    const zt = FakeZtunnel.connect(server.path);
    const conn = await server.accept(WAIT);
    const fake = await zt;
    try {
      await conn.receive(WAIT); // hello
      for (const bytes of mutants(0x99, 300)) {
        await conn.send(bytes.length ? bytes : Uint8Array.of(0), WAIT);
        const answer = await conn.receive(WAIT);
        expect(answer).not.toBeNull();
        expect(typeof decodeResponse(answer!.data).ack.error).toBe('string');
      }
      expect(fake.connected).toBe(true);
    } finally {
      fake.close();
      conn.close();
      server.close();
    }
  });
});
