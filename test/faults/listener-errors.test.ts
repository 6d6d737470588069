// Regression (issue 15, found by the concurrency tests): a listener that throws used to break the work that emitted
// its event. NodeNetwork's 'conflict' is emitted after a takeover is done: a throwing listener made addPod reject
// (AgentError 'probe-set', not retryable) although the entry had been taken over, a failure that changed state; a
// throwing 'ownerMismatch' listener made removePod reject before it removed the pod's in-pod rules. ZtunnelServer's
// 'connected' listener throwing stopped the proxy's snapshot (the proxy waited for it in vain) and left an unhandled
// rejection; a throwing 'disconnected' listener made close() stop half way. Now the throw is logged as an error.
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

import { INPOD, NodeNetwork, SeqpacketSocket, inpodRules, type LogFields } from '../../lib/index.js';
import { ZtunnelServer } from '../../lib/proxy/ztunnel-server.js';
import { decodeRequest, encodeAck, encodeHello } from '../../lib/proxy/zds-messages.js';
import { fakeWorld, started } from '../agent/world.js';
import { checkFdsPerTest, socketDir } from '../unix/helpers/fds.js';

const nextPath = socketDir();
const WAIT = { timeoutMs: 20_000 };

function recordingLogger(): { errors: [string, LogFields | undefined][]; logger: { error: (m: string, f?: LogFields) => void } } {
  const errors: [string, LogFields | undefined][] = [];
  return { errors, logger: { error: (message, fields) => void errors.push([message, fields]) } };
}

describe('NodeNetwork listeners that throw (fakes)', () => {
  it("a throwing 'conflict' listener: addPod still reports the takeover it did, the error is logged", async () => {
    const world = fakeWorld();
    const log = recordingLogger();
    const net: NodeNetwork = await started(world, { logger: log.logger });
    try {
      net.on('conflict', () => {
        throw new Error('listener bug');
      });
      const a = world.pod();
      const b = world.pod(a.ip);
      await net.addPod({ uid: a.uid, ips: [a.ip], netns: a.netns });
      await net.addPod({ uid: b.uid, ips: [b.ip], netns: b.netns });
      expect(net.probeSet!.owner(a.ip)).toBe(b.uid);
      const owners = (await (await world.hostIpset()).list('istio-inpod-probes-v4')).entries.map((e) => [e.ip, e.comment]);
      expect(owners).toEqual([[a.ip, b.uid]]);
      expect(log.errors).toEqual([["a 'conflict' listener threw: listener bug", expect.objectContaining({ ip: a.ip })]]);
    } finally {
      await net.stop({ keep: true });
      await world.cleanup();
    }
  });

  it("a throwing 'ownerMismatch' listener: removePod of the old owner still removes its in-pod rules", async () => {
    const world = fakeWorld();
    const log = recordingLogger();
    const net = await started(world, { logger: log.logger });
    try {
      net.on('ownerMismatch', () => {
        throw new Error('listener bug');
      });
      const a = world.pod();
      const b = world.pod(a.ip);
      await net.addPod({ uid: a.uid, ips: [a.ip], netns: a.netns });
      await net.addPod({ uid: b.uid, ips: [b.ip], netns: b.netns });
      await net.removePod({ uid: a.uid, ips: [a.ip], netns: a.netns });
      expect((await (await world.podIptables(a)).verify(inpodRules())).inSync).toBe(false);
      expect((await (await world.podIptables(a)).save()).tables.nat?.chains[INPOD.preroutingChain]).toBeUndefined();
      expect(net.probeSet!.owner(a.ip)).toBe(b.uid);
      expect(log.errors.map(([m]) => m)).toEqual(["a 'ownerMismatch' listener threw: listener bug"]);
    } finally {
      await net.stop({ keep: true });
      await world.cleanup();
    }
  });
});

describe('ZtunnelServer listeners that throw (any user)', () => {
  checkFdsPerTest();

  it("a throwing 'connected' listener: the proxy still gets its snapshot, 'snapshotSent' still fires", async () => {
    const log = recordingLogger();
    await using server = await ZtunnelServer.listen({ path: nextPath(), logger: log.logger });
    server.on('connected', () => {
      throw new Error('listener bug');
    });
    const sent = new Promise((resolve) => server.once('snapshotSent', (_peer, outcome) => resolve(outcome)));
    using socket = await SeqpacketSocket.connect(server.path, WAIT);
    await socket.send(encodeHello(), WAIT);
    const msg = await socket.receive(WAIT);
    expect(decodeRequest(msg!.data)).toEqual({ kind: 'snapshotSent' });
    await socket.send(encodeAck(), WAIT);
    expect(await sent).toEqual({ added: 0, kept: 0, failed: [] });
    expect(server.connected).toBe(1);
    expect(log.errors.map(([m]) => m)).toEqual(["a 'connected' listener threw: listener bug"]);
  });

  it("a throwing 'disconnected' listener: close() still ends every connection and removes the socket file", async () => {
    const log = recordingLogger();
    const server = await ZtunnelServer.listen({ path: nextPath(), logger: log.logger });
    server.on('disconnected', () => {
      throw new Error('listener bug');
    });
    const sockets: SeqpacketSocket[] = [];
    let snapshots = 0;
    server.on('snapshotSent', () => snapshots++);
    try {
      for (let i = 0; i < 3; i++) {
        const socket = await SeqpacketSocket.connect(server.path, WAIT);
        sockets.push(socket);
        await socket.send(encodeHello(), WAIT);
        expect(decodeRequest((await socket.receive(WAIT))!.data)).toEqual({ kind: 'snapshotSent' });
        await socket.send(encodeAck(), WAIT);
      }
      // Each ack read by the server (nothing left unread, which would reset the connection instead of ending it).
      while (snapshots < 3) await new Promise((resolve) => setImmediate(resolve));
      expect(server.connected).toBe(3);
      await server.close();
      for (const socket of sockets) expect(await socket.receive(WAIT)).toBeNull();
      expect(existsSync(server.path)).toBe(false);
      expect(log.errors.map(([m]) => m)).toEqual(Array(3).fill("a 'disconnected' listener threw: listener bug"));
    } finally {
      for (const socket of sockets) socket.close();
      await server.close();
    }
  });
});
