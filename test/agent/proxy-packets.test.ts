// NodeNetwork handing pods to a node proxy, proven with real packets: a SimulatedNode (host and pod namespaces
// joined by veths), podnet's ZtunnelServer on a temporary socket, and the ztunnel player
// (test/fixtures/ztunnel-player.py, another implementation of the proxy's side of ZDS) as the proxy. A connection
// from one pod to another pod's app port must land on the player's listener inside the target pod (REDIRECT to
// 15006, original destination from conntrack); nothing podnet runs listens on the app port. The player process runs
// in the test's own namespace, but only opens sockets inside the pod namespaces it is sent (it refuses its own).
import { execFile } from 'node:child_process';
import type { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

import { Netns, NodeNetwork, ZtunnelServer, type SnapshotOutcome, type ZtunnelServerEvents } from '../../lib/index.js';
import { SimulatedNode, echoWho, startEchoWho, type SimPod } from '../../lib/testing/index.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { startZtunnelPlayer, type PlayerEvent, type ZtunnelPlayer } from '../helpers/ztunnel-player.js';

const run = promisify(execFile);
const DEADLINE_MS = 20_000;
const APP_PORT = 8080;

const isEvent =
  (event: string, fields: Record<string, unknown> = {}) =>
  (e: PlayerEvent): boolean =>
    e.event === event && Object.entries(fields).every(([k, v]) => e[k] === v);

const workloadOf = (name: string) => ({ name, namespace: 'default', serviceAccount: `sa-${name}` });

/** inodeOf is the inode of the pod's network namespace, as the player reports the fd it got. */
function inodeOf(pod: SimPod): number {
  const ns = Netns.open(pod.path);
  try {
    return ns.inode;
  } finally {
    ns.close();
  }
}

/** The names `ip netns list` shows (the first word of each line; "NAME (id: N)" once a peer refers to it). */
async function netnsList(): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'list'], { timeout: DEADLINE_MS });
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter((n) => n !== '');
}

/** Resolves the server's next event of that name (after the call) with its arguments, or rejects at the deadline. */
function nextServerEvent(server: ZtunnelServer, event: keyof ZtunnelServerEvents): Promise<unknown[]> {
  const emitter = server as unknown as EventEmitter;
  return new Promise((resolve, reject) => {
    const on = (...args: unknown[]): void => {
      clearTimeout(timer);
      resolve(args);
    };
    const timer = setTimeout(() => {
      emitter.off(event, on);
      reject(new Error(`ZtunnelServer: no '${event}' within ${DEADLINE_MS} ms`));
    }, DEADLINE_MS);
    emitter.once(event, on);
  });
}

interface ProxyNode {
  sim: SimulatedNode;
  /** The node's pods (as many as asked for). */
  pods: SimPod[];
  server: ZtunnelServer;
  network: NodeNetwork;
  /** startPlayer starts a player on the server's socket (stopped and reaped after the test) and waits until its snapshot is done. */
  startPlayer(): Promise<ZtunnelPlayer>;
  /** defer runs fn first in the cleanup (last deferred first), while the namespaces still exist. */
  defer(fn: () => unknown): void;
}

/**
 * onProxyNode builds a SimulatedNode with `pods` pods, a ZtunnelServer on a socket in a fresh temp folder and a started
 * NodeNetwork with that server as its proxy, runs fn, and then undoes everything whatever happened: the network
 * stopped, every player stopped and reaped, the server closed, the node's namespaces deleted, the folder removed.
 * Afterwards it checks that `ip netns list` shows none of the node's namespaces and that the folder is gone.
 */
async function onProxyNode(pods: number, fn: (node: ProxyNode) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'podnet-proxy-packets-'));
  const players: ZtunnelPlayer[] = [];
  const deferred: (() => unknown)[] = [];
  const problems: unknown[] = [];
  const attempt = async (what: string, step: () => unknown): Promise<void> => {
    try {
      await step();
    } catch (err) {
      problems.push(new Error(`cleanup: ${what} failed: ${(err as Error)?.message ?? err}`, { cause: err }));
    }
  };
  let sim: SimulatedNode | undefined;
  let server: ZtunnelServer | undefined;
  let network: NodeNetwork | undefined;
  let names: string[] = [];
  try {
    sim = await SimulatedNode.create({ tag: `t-${process.env.PODNET_TEST_RUN ?? 'x'}`, pods });
    names = sim.namespaces.map((ns) => ns.name);
    const srv = await ZtunnelServer.listen({ path: join(dir, 'ztunnel.sock') });
    server = srv;
    network = new NodeNetwork({ hostNetns: sim.host.path, proxy: srv });
    await network.start();
    const startPlayer = async (): Promise<ZtunnelPlayer> => {
      const player = startZtunnelPlayer({ socketPath: srv.path });
      players.push(player);
      // The ack of SnapshotSent is the last thing the player prints for its snapshot.
      await player.waitFor(isEvent('ack', { request: 'snapshotSent' }), DEADLINE_MS);
      return player;
    };
    await fn({ sim, pods: [...sim.pods], server: srv, network, startPlayer, defer: (f) => deferred.push(f) });
  } finally {
    while (deferred.length > 0) await attempt('a deferred cleanup', deferred.pop()!);
    if (network) await attempt('network.stop()', () => network!.stop());
    for (const player of players) await attempt(`stopping player ${player.pid}`, () => player.stop());
    if (server) await attempt('server.close()', () => server!.close());
    if (sim) await attempt('deleting the simulated node', () => sim!.destroy());
    await attempt(`removing ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  }
  if (problems.length > 0) throw new AggregateError(problems, problems.map((p) => (p as Error).message).join('; '));
  // Checked only when all went well (a failure above is the one to report).
  const left = await netnsList();
  expect(names.filter((n) => left.includes(n))).toEqual([]);
  expect(names).toHaveLength(pods + 1);
  expect(existsSync(dir)).toBe(false);
  // Each was reaped: SIGTERM from stop() (exit 0), or the SIGKILL a test sent.
  for (const player of players) expect([{ code: 0, signal: null }, { code: null, signal: 'SIGKILL' }]).toContainEqual(await player.exited);
}

describePrivileged(
  'NodeNetwork hands pods to a node proxy (ZtunnelServer + the ztunnel player) with real packets',
  () => {
    it("hands pod A's netns to the player, whose listener inside A gets B's redirected connection; removePod takes it back", async () => {
      await onProxyNode(2, async ({ pods: [a, b], server, network, startPlayer }) => {
        if (!a || !b) throw new Error('two pods were asked for');
        const player = await startPlayer();
        expect(server.connected).toBe(1);
        const inodeA = inodeOf(a);
        const fromB = () => echoWho(b.path, a.ip, APP_PORT);

        // Nothing listens on A's app port: whatever answers below is the proxy.
        expect(await fromB()).toBe('refused');

        const podA = { uid: a.uid, ips: [a.ip], netns: a.path, workload: workloadOf('pod-a') };
        const from = player.events.length;
        await network.addPod(podA);
        expect(await player.waitFor(isEvent('add', { uid: a.uid }), DEADLINE_MS, from)).toEqual({
          event: 'add',
          uid: a.uid,
          name: 'pod-a',
          namespace: 'default',
          serviceAccount: 'sa-pod-a',
          netnsInode: inodeA,
          fds: 1,
        });
        expect(await player.waitFor(isEvent('listening', { uid: a.uid }), DEADLINE_MS, from)).toEqual({
          event: 'listening',
          uid: a.uid,
          port: 15006,
          netnsInode: inodeA,
        });
        await player.waitFor(isEvent('ack', { request: 'add', uid: a.uid, error: '' }), DEADLINE_MS, from);
        expect(server.workloads.map((w) => w.uid)).toEqual([a.uid]);

        // B -> A:8080 is REDIRECTed to 15006 inside A, where the player listens; the original destination is kept.
        const beforeConn = player.events.length;
        expect(await fromB()).toBe(`ztunnel-player ${a.uid} ${a.ip}:${APP_PORT}`);
        expect(await player.waitFor(isEvent('conn'), DEADLINE_MS, beforeConn)).toEqual({
          event: 'conn',
          uid: a.uid,
          origDst: `${a.ip}:${APP_PORT}`,
          origDstSource: 'SO_ORIGINAL_DST',
          peer: expect.stringMatching(new RegExp(`^${b.ip.replaceAll('.', '\\.')}:\\d+$`)),
        });

        const beforeDel = player.events.length;
        await network.removePod(podA);
        expect(await player.waitFor(isEvent('del', { uid: a.uid }), DEADLINE_MS, beforeDel)).toEqual({ event: 'del', uid: a.uid, known: true });
        expect(server.workloads).toEqual([]);
        // The player closed its listener before acking the del, and A's REDIRECT is gone: nobody answers now.
        const afterDel = player.events.length;
        expect(await fromB()).toBe('refused');
        expect(player.events.slice(afterDel).filter(isEvent('conn'))).toEqual([]);
        expect(player.events.filter(isEvent('error'))).toEqual([]);
      });
    });

    it('a player killed with SIGKILL and started again gets a snapshot of exactly the enrolled pods, and serves them', async () => {
      // Pod C stays out of the mesh as the client: a connection from an enrolled pod is captured by that pod's own
      // outbound REDIRECT (to its 15001, where the player does not listen), so it would never reach B's inbound.
      await onProxyNode(3, async ({ pods: [a, b, c], server, network, startPlayer, defer }) => {
        if (!a || !b || !c) throw new Error('three pods were asked for');
        // B runs an app on 8080: an answer from it (instead of the player) would mean traffic bypassed the proxy.
        const app = await startEchoWho(b.path, { ports: [APP_PORT], lifetimeMs: 50_000 });
        defer(() => app.stop());
        const toB = () => echoWho(c.path, b.ip, APP_PORT);
        expect(await toB()).toBe(`${APP_PORT} ${c.ip}`);

        const first = await startPlayer();
        const [inodeA, inodeB] = [inodeOf(a), inodeOf(b)];
        const podA = { uid: a.uid, ips: [a.ip], netns: a.path, workload: workloadOf('pod-a') };
        const podB = { uid: b.uid, ips: [b.ip], netns: b.path, workload: workloadOf('pod-b') };
        await network.addPod(podA);
        await network.addPod(podB);
        await first.waitFor(isEvent('listening', { uid: b.uid }));
        expect(await toB()).toBe(`ztunnel-player ${b.uid} ${b.ip}:${APP_PORT}`);

        // A proxy crash: the server sees the connection end at once (a read is always pending).
        const gone = nextServerEvent(server, 'disconnected');
        first.kill('SIGKILL');
        expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
        await gone;
        expect(server.connected).toBe(0);
        // B stays redirected with no proxy: refused, never let through to the app on 8080.
        expect(await toB()).toBe('refused');

        const snapshot = nextServerEvent(server, 'snapshotSent');
        const second = await startPlayer();
        const [, outcome] = (await snapshot) as [unknown, SnapshotOutcome];
        expect(outcome).toEqual({ added: 2, kept: 0, failed: [] });
        expect(server.connected).toBe(1);
        // Exactly A and B, each with its own netns, in enrolment order, then SnapshotSent dropping nothing.
        const protocol = second.events.filter((e) => ['add', 'keep', 'del', 'snapshotSent'].includes(e.event));
        expect(protocol).toEqual([
          { event: 'add', uid: a.uid, name: 'pod-a', namespace: 'default', serviceAccount: 'sa-pod-a', netnsInode: inodeA, fds: 1 },
          { event: 'add', uid: b.uid, name: 'pod-b', namespace: 'default', serviceAccount: 'sa-pod-b', netnsInode: inodeB, fds: 1 },
          { event: 'snapshotSent', workloads: [a.uid, b.uid].sort(), dropped: [] },
        ]);
        expect(second.events.filter(isEvent('listening')).map((e) => [e.uid, e.port, e.netnsInode])).toEqual([
          [a.uid, 15006, inodeA],
          [b.uid, 15006, inodeB],
        ]);
        expect(second.events.filter(isEvent('ack')).map((e) => [e.request, e.error])).toEqual([
          ['add', ''],
          ['add', ''],
          ['snapshotSent', ''],
        ]);

        // The new player's listener inside B takes C's redirected connection.
        const before = second.events.length;
        expect(await toB()).toBe(`ztunnel-player ${b.uid} ${b.ip}:${APP_PORT}`);
        expect(await second.waitFor(isEvent('conn'), DEADLINE_MS, before)).toEqual({
          event: 'conn',
          uid: b.uid,
          origDst: `${b.ip}:${APP_PORT}`,
          origDstSource: 'SO_ORIGINAL_DST',
          peer: expect.stringMatching(new RegExp(`^${c.ip.replaceAll('.', '\\.')}:\\d+$`)),
        });

        await network.removePod(podA);
        await network.removePod(podB);
        await second.waitFor(isEvent('ack', { request: 'del', uid: b.uid }));
        expect(second.events.filter(isEvent('del'))).toEqual([
          { event: 'del', uid: a.uid, known: true },
          { event: 'del', uid: b.uid, known: true },
        ]);
        expect(second.events.filter(isEvent('error'))).toEqual([]);
        // Out of the mesh again: the app answers.
        expect(await toB()).toBe(`${APP_PORT} ${c.ip}`);
        const served = await app.stop();
        expect(served.exitCode).toBe(0);
        // The app saw only the two connections made while B was not enrolled.
        expect(served.stdout.split('\n').filter((l) => l.startsWith('conn '))).toEqual([`conn ${APP_PORT} ${c.ip}`, `conn ${APP_PORT} ${c.ip}`]);
      });
    });
  },
  missingBinary('ipset', 'iptables-nft-restore', 'python3'),
);
