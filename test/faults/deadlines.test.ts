// A deadline expiring on each kind of call that has one (issue 15): the call rejects with its typed error, no promise
// is left pending, no child is left (zombie or running), and nothing changed beyond what the call itself did.
//
// Already covered elsewhere, and not repeated here:
// - unix sockets: accept, connect, send and receive deadlines, and close() while they wait (test/unix/deadlines.test.ts);
// - runInNetns / startInNetns in this process's namespace: the deadline kills the process group and reaps it, a
//   program waiting for input runs into it (test/spawn.test.ts);
// - iptables legacy: a held xtables lock ends in IptablesLockTimeoutError after lockWaitSeconds, and a restore that
//   waits past timeoutMs is killed (test/iptables/lock.test.ts);
// - ipset: a lost ACK of add() (test/ipset/faults.test.ts), a peer that never answers open (test/ipset/kernel.test.ts);
// - ZtunnelServer: an unanswered add (test/proxy/ztunnel-server.test.ts).
//
// The kernel answers netlink requests inside sendmsg(): a real socket's deadline cannot be made to expire, so the
// ipset and rtnetlink deadlines are driven by the fakes' dropNextReply (the request is applied, its answer lost, as a
// kernel reply lost to ENOBUFS would be). Timing bounds only say how late a deadline fires, with a margin (30 s) that
// no load reaches, never how fast anything is.
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';

import {
  Ipset,
  Iptables,
  Netns,
  PodnetSystemError,
  ProcessTimeoutError,
  RuleSet,
  Rtnetlink,
  SeqpacketSocket,
  runInNetns,
  type RouteSpec,
  type RoutingRuleSpec,
} from '../../lib/index.js';
import { ProxyError } from '../../lib/proxy/errors.js';
import { ZtunnelServer } from '../../lib/proxy/ztunnel-server.js';
import { decodeRequest, encodeAck, encodeHello } from '../../lib/proxy/zds-messages.js';
import { FakeIpsetKernel, FakeRtnetlink } from '../../lib/testing/index.js';
import type { FaultMatch } from '../../lib/testing/fake-ipset/faults.js';
import type { RtnetlinkFaultMatch } from '../../lib/testing/fake-rtnetlink/faults.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';
import { checkFdsPerTest, socketDir } from '../unix/helpers/fds.js';
import { InterceptingRunner, rawSave, withoutCommit } from './helpers/iptables.js';
import { children, zombies } from './helpers/process.js';

/** How late a deadline may fire: far past any deadline here, far below what a loaded machine reaches. */
const LATE_MS = 30_000;
const nextPath = socketDir();

/** outcome settles call (sync throw or async rejection alike) into what it threw, or undefined. */
async function outcome(call: () => unknown): Promise<unknown> {
  try {
    await call();
    return undefined;
  } catch (err) {
    return err;
  }
}

function expectTimedOut(err: unknown): void {
  expect(err).toBeInstanceOf(PodnetSystemError);
  expect(err).toMatchObject({ code: 'ETIMEDOUT', errno: -110 });
}

// --- ipset: every kind of call, its reply lost --------------------------------------------------------------------

type IpsetCase = [label: string, match: FaultMatch, call: (s: Ipset) => unknown];

const drain = async (it: AsyncIterable<unknown>) => {
  for await (const _ of it);
};

const IPSET_CASES: IpsetCase[] = [
  ['create', { command: 'create' }, (s) => s.create('n', { type: 'hash:net' })],
  ['destroy', { command: 'destroy' }, (s) => s.destroy('t')],
  ['flush', { command: 'flush' }, (s) => s.flush('s')],
  ['rename', { command: 'rename' }, (s) => s.rename('t', 'u')],
  ['swap', { command: 'swap' }, (s) => s.swap('s', 't')],
  ['del', { command: 'del' }, (s) => s.del('s', { ip: '10.0.0.1' })],
  ['addMany', { command: 'add' }, (s) => s.addMany('s', [{ ip: '10.0.1.1' }, { ip: '10.0.1.2' }])],
  ['addMany (streamed)', { command: 'add' }, (s) => s.addMany('s', new Set([{ ip: '10.0.2.1' }]))],
  ['delMany', { command: 'del' }, (s) => s.delMany('s', [{ ip: '10.0.0.1' }])],
  ['addSync', { command: 'add' }, (s) => s.addSync('s', { ip: '10.0.3.1' })],
  ['delSync', { command: 'del' }, (s) => s.delSync('s', { ip: '10.0.0.1' })],
  ['test', { command: 'test' }, (s) => s.test('s', { ip: '10.0.0.1' })],
  ['testSync', { command: 'test' }, (s) => s.testSync('s', { ip: '10.0.0.1' })],
  ['list', { command: 'list' }, (s) => s.list('s')],
  ['header', { command: 'list' }, (s) => s.header('s')],
  ['listNames', { command: 'list' }, (s) => s.listNames()],
  ['entries', { command: 'list' }, (s) => drain(s.entries('s'))],
];

/** The same fresh state for every case: sets s (one entry) and t, their shapes known to the client. */
async function ipsetWorld(): Promise<{ fake: FakeIpsetKernel; ipset: Ipset }> {
  const fake = new FakeIpsetKernel();
  const ipset = await Ipset.open({ netlink: fake, timeoutMs: 100 });
  await ipset.create('s', { type: 'hash:ip' });
  await ipset.create('t', { type: 'hash:ip' });
  await ipset.add('s', { ip: '10.0.0.1' });
  await ipset.header('t');
  return { fake, ipset };
}

describe('ipset deadlines: every kind of call with its reply lost (FakeIpsetKernel)', () => {
  it.each(IPSET_CASES)('%s rejects with ETIMEDOUT, settles, and the client answers the next call', async (label, match, call) => {
    // What the call does when it succeeds, on a world of its own.
    const reference = await ipsetWorld();
    expect(await outcome(() => call(reference.ipset))).toBeUndefined();
    const succeeded = reference.fake.dump();
    reference.ipset.close();

    const { fake, ipset } = await ipsetWorld();
    const before = fake.dump();
    fake.dropNextReply(match);
    expectTimedOut(await outcome(() => call(ipset)));
    // A lost reply is not a refusal: the request was applied (a read changed nothing) and the state is exactly what
    // the successful call leaves. ETIMEDOUT on a change means "outcome unknown": read the state to learn it.
    expect(fake.dump()).toEqual(succeeded);
    const changes = !isDeepStrictEqual(before, succeeded);
    expect(changes).toBe(!['test', 'testSync', 'list', 'header', 'listNames', 'entries'].includes(label));
    // The same client goes on (late replies would be told apart by sequence number).
    const names = await ipset.listNames();
    expect(names.sort()).toEqual(fake.dump().sets.map((s) => s.name).sort());
    ipset.close();
  });
});

// --- rtnetlink: every kind of call, its reply lost ----------------------------------------------------------------

const ROUTE: RouteSpec = { dst: '10.9.0.0', dstLength: 16, table: 100, oif: 1 };
const RULE: RoutingRuleSpec = { priority: 32764, mark: 0x111, mask: 0xfff, table: 100 };

type RtCase = [label: string, match: RtnetlinkFaultMatch, call: (rt: Rtnetlink) => Promise<unknown>, changes: boolean];

const RT_CASES: RtCase[] = [
  ['links', { type: 'getlink' }, (rt) => rt.links(), false],
  ['link', { type: 'getlink' }, (rt) => rt.link('lo'), false],
  ['addresses', { type: 'getaddr' }, (rt) => rt.addresses(), false],
  ['routes', { type: 'getroute' }, (rt) => rt.routes({ table: 100 }), false],
  ['rules', { type: 'getrule' }, (rt) => rt.rules(), false],
  ['addRoute', { type: 'newroute' }, (rt) => rt.addRoute({ ...ROUTE, dst: '10.8.0.0' }), true],
  ['delRoute', { type: 'delroute' }, (rt) => rt.delRoute(ROUTE), true],
  ['addRule', { type: 'newrule' }, (rt) => rt.addRule({ ...RULE, priority: 32000 }), true],
  ['delRule', { type: 'delrule' }, (rt) => rt.delRule(RULE), true],
];

async function rtWorld(): Promise<{ fake: FakeRtnetlink; rt: Rtnetlink }> {
  const fake = new FakeRtnetlink();
  const rt = await Rtnetlink.open({ netlink: fake, timeoutMs: 100 });
  await rt.addRoute(ROUTE);
  await rt.addRule(RULE);
  return { fake, rt };
}

describe('rtnetlink deadlines: every kind of call with its reply lost (FakeRtnetlink)', () => {
  it.each(RT_CASES)('%s rejects with ETIMEDOUT, settles, and the client answers the next call', async (_label, match, call, changes) => {
    const reference = await rtWorld();
    await call(reference.rt);
    const succeeded = reference.fake.dump();
    reference.rt.close();

    const { fake, rt } = await rtWorld();
    const before = fake.dump();
    fake.dropNextReply(match);
    expectTimedOut(await outcome(() => call(rt)));
    expect(fake.dump()).toEqual(succeeded);
    expect(!isDeepStrictEqual(before, succeeded)).toBe(changes);
    expect((await rt.links()).map((l) => l.name)).toEqual(['lo']);
    rt.close();
  });
});

// --- runInNetns and iptables-restore in a real namespace ----------------------------------------------------------

/** The pids inside the namespace (`ip netns pids`, run outside it): none of this test's may be left. */
function pidsIn(tns: TestNetns): string[] {
  return execFileSync('ip', ['netns', 'pids', tns.name], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

describePrivileged(
  'deadlines of programs run in a namespace (real kernel)',
  () => {
    it('runInNetns: a program and the child it started are killed at the deadline; nothing is left in the namespace', async () => {
      using tns = new TestNetns('deadline');
      // The program starts a sleep of its own (same process group) and sleeps too.
      // sh, not python3: its start takes a millisecond where python3's took past a 500 ms deadline on a loaded machine.
      const script = 'sleep 120 & echo started; exec sleep 120';
      const started = performance.now();
      const err = await rejection(runInNetns(tns.path, ['/bin/sh', '-c', script], { timeoutMs: 2000 }));
      const took = performance.now() - started;
      expect(err).toBeInstanceOf(ProcessTimeoutError);
      expect(err).toMatchObject({ code: 'ETIMEDOUT', timeoutMs: 2000, argv: ['/bin/sh', '-c', script], stdout: 'started\n' });
      expect(took).toBeGreaterThanOrEqual(1999);
      expect(took).toBeLessThan(LATE_MS);
      expect(zombies()).toEqual([]);
      expect(children().filter((c) => c.comm === 'sh' || c.comm === 'sleep')).toEqual([]);
      // The grandchild was reparented, not ours to reap: it is gone because the whole group was killed. SIGKILL is
      // delivered at once, but its exit may take a moment to show.
      for (let i = 0; i < 2000 && pidsIn(tns).length > 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(pidsIn(tns)).toEqual([]);
    });

    it('iptables (nft): a restore that never gets its COMMIT is killed at timeoutMs; apply rejects, the rules stay', async () => {
      using tns = new TestNetns('deadline-ipt');
      const runner = new InterceptingRunner(tns.path, { timeoutMs: 60_000, env: { LC_ALL: 'C' }, interceptTimeoutMs: 1000 });
      const ipt = await Iptables.open({ runner, backend: 'nft' });
      const v1 = new RuleSet().chain('filter', 'PODNET_D').append('filter', 'INPUT', ['-j', 'PODNET_D']);
      await ipt.apply(v1.append('filter', 'PODNET_D', ['-j', 'RETURN']));
      const before = await rawSave(runner, 'nft');

      runner.interceptNextRestore(async (input, program) => {
        program.write(withoutCommit(input));
        await program.result.catch(() => undefined); // the deadline ends it; end() only after
      });
      const v2 = new RuleSet()
        .chain('filter', 'PODNET_D')
        .append('filter', 'INPUT', ['-j', 'PODNET_D'])
        .append('filter', 'PODNET_D', ['-p', 'tcp', '-j', 'DROP']);
      const started = performance.now();
      const err = await rejection(ipt.apply(v2));
      const took = performance.now() - started;
      expect(runner.intercepted).toBe(1);
      expect(err).toBeInstanceOf(ProcessTimeoutError);
      expect(err).toMatchObject({ code: 'ETIMEDOUT', timeoutMs: 1000 });
      expect((err as ProcessTimeoutError).argv).toEqual(['iptables-nft-restore', '--noflush']);
      expect(took).toBeGreaterThanOrEqual(999);
      expect(took).toBeLessThan(LATE_MS);
      expect(zombies()).toEqual([]);
      expect(await rawSave(runner, 'nft')).toBe(before);
      await ipt.apply(v2);
      expect((await ipt.verify(v2)).inSync).toBe(true);
    });
  },
  missingBinary('python3', 'iptables-nft-restore', 'iptables-nft-save'),
);

// --- ZtunnelServer: hello, snapshot and del deadlines -------------------------------------------------------------

const W = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };
const WAIT = { timeoutMs: 20_000 };

async function nextRequest(socket: SeqpacketSocket): Promise<ReturnType<typeof decodeRequest> | null> {
  const msg = await socket.receive({ ...WAIT, maxFds: 4 });
  if (msg === null) return null;
  for (const fd of msg.fds) fd.close();
  return decodeRequest(msg.data);
}

describe('ZtunnelServer deadlines (any user)', () => {
  checkFdsPerTest();

  it('drops a proxy that never says hello at the deadline; it is never counted', async () => {
    await using server = await ZtunnelServer.listen({ path: nextPath(), timeoutMs: 300 });
    const disconnected = once(server, 'disconnected');
    let connected = 0;
    server.on('connected', () => connected++);
    using socket = await SeqpacketSocket.connect(server.path, WAIT);
    const started = performance.now();
    const [, why] = await disconnected;
    const took = performance.now() - started;
    expect(why).toMatchObject({ reason: 'timeout', error: { code: 'ETIMEDOUT' } });
    expect(took).toBeLessThan(LATE_MS);
    expect(await socket.receive(WAIT)).toBeNull();
    expect(connected).toBe(0);
    expect(server.connected).toBe(0);
  });

  it("drops a proxy that never acks its snapshot's add at the deadline: no snapshotSent, the table unchanged", async () => {
    await using server = await ZtunnelServer.listen({ path: nextPath(), timeoutMs: 300 });
    using ns = Netns.current();
    server.replaceWorkloads([{ uid: 'a', workload: W, netns: ns }]);
    let snapshots = 0;
    server.on('snapshotSent', () => snapshots++);
    const disconnected = once(server, 'disconnected');
    using socket = await SeqpacketSocket.connect(server.path, WAIT);
    await socket.send(encodeHello(), WAIT);
    expect(await nextRequest(socket)).toMatchObject({ kind: 'add', uid: 'a' });
    const started = performance.now();
    const [, why] = await disconnected;
    expect(performance.now() - started).toBeLessThan(LATE_MS);
    expect(why).toMatchObject({ reason: 'timeout', error: { code: 'ETIMEDOUT' } });
    expect(await nextRequest(socket)).toBeNull();
    expect(snapshots).toBe(0);
    expect(server.workloads.map((w) => w.uid)).toEqual(['a']);
  });

  it('fails an unanswered del with ETIMEDOUT at the deadline; the workload is out of the table all the same', async () => {
    await using server = await ZtunnelServer.listen({ path: nextPath(), timeoutMs: 300 });
    using socket = await SeqpacketSocket.connect(server.path, WAIT);
    await socket.send(encodeHello(), WAIT);
    expect(await nextRequest(socket)).toEqual({ kind: 'snapshotSent' });
    await socket.send(encodeAck(), WAIT);
    using ns = Netns.current();
    const added = server.addWorkload('d', W, ns);
    expect(await nextRequest(socket)).toMatchObject({ kind: 'add', uid: 'd' });
    await socket.send(encodeAck(), WAIT);
    await added;

    const started = performance.now();
    const deleted = server.delWorkload('d');
    expect(await nextRequest(socket)).toEqual({ kind: 'del', uid: 'd' });
    const err = await rejection(deleted);
    const took = performance.now() - started;
    expect(err).toBeInstanceOf(ProxyError);
    expect(err).toMatchObject({ code: 'ETIMEDOUT', request: 'del', uid: 'd' });
    expect(took).toBeGreaterThanOrEqual(299);
    expect(took).toBeLessThan(LATE_MS);
    // The table forgets the workload before telling the proxy: the next proxy's snapshot will not have it.
    expect(server.workloads).toEqual([]);
    expect(await nextRequest(socket)).toBeNull();
    expect(server.connected).toBe(0);
  });
});
