// Concurrency (issue 15): close() during in-flight async calls of every kind, calls made from inside event handlers,
// and many clients on one namespace. Every promise must settle (a result or a typed error), nothing may hang, and
// what the kernel holds must match what the calls reported. Bounds are on counts, never on time.
//
// Covered elsewhere, not repeated: SeqpacketSocket and SeqpacketServer close() with accepts, sends and receives
// pending (test/unix/deadlines.test.ts); Rtnetlink close() finishing what was queued before it, on the fake and the
// kernel (test/rtnetlink/contract.ts); ZtunnelServer close() with an add waiting for its ack
// (test/proxy/ztunnel-server.test.ts). Iptables has no close(): each call is program runs that end on their own
// (at the latest at their deadline, test/faults/deadlines.test.ts).
//
// Found here and fixed: a snapshot undid an add sent to its connection meanwhile (test/faults/snapshot-race.test.ts),
// and a throwing listener broke the work that emitted its event (test/faults/listener-errors.test.ts).
//
// Found here, not podnet's to fix: the kernel loses an IPv4 hash:ip entry now and then when clients on different
// sockets add to one set while it resizes, and ACKs it as added. call_ad() (ip_set_core.c) drops the nfnl mutex
// between a resize and the retry of the entry that triggered it, and hash_ip4_uadt() retries from the set-wide
// h->next, which another writer's resize may have overwritten meanwhile: the retry adds the other writer's entry, its
// own is never added. Measured here: 32 clients adding 300 entries each to one fresh set lost one entry in about
// half the runs; none with the set created large enough not to resize, none with one client (its requests go one at
// a time), none with the clients taking turns. A set written from one socket, as NodeNetwork's probe sets are, is not
// exposed; several writers of one set should create it with a hashsize that fits its size.
import { describe, expect, it } from 'vitest';

import {
  Ipset,
  Netns,
  PodnetError,
  Rtnetlink,
  SeqpacketSocket,
  runInNetns,
  type ProbeConflict,
} from '../../lib/index.js';
import { ZtunnelServer } from '../../lib/proxy/ztunnel-server.js';
import { decodeRequest, encodeAck, encodeHello, type ZdsRequest } from '../../lib/proxy/zds-messages.js';
import { closesDone, openFds } from '../helpers/fds.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { fakeWorld, kernelWorld, started, type World } from '../agent/world.js';
import { checkFdsPerTest, socketDir } from '../unix/helpers/fds.js';
import { zombies } from './helpers/process.js';

const nextPath = socketDir();
const WAIT = { timeoutMs: 20_000 };
const ip = (base: number, n: number) => `${base}.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** How each call ended: 'ok' or its error code; anything that is not a PodnetError is kept whole, to fail on. */
async function settle(calls: Record<string, Promise<unknown>>): Promise<Record<string, { status: string; value?: unknown }>> {
  const names = Object.keys(calls);
  const results = await Promise.allSettled(Object.values(calls));
  return Object.fromEntries(
    results.map((r, i) => [
      names[i]!,
      r.status === 'fulfilled'
        ? { status: 'ok', value: r.value }
        : { status: r.reason instanceof PodnetError ? String(r.reason.code) : `untyped: ${String(r.reason)}` },
    ]),
  );
}

// --- close() during in-flight calls -------------------------------------------------------------------------------

describePrivileged(
  'close() during in-flight calls (real kernel)',
  () => {
    it('Ipset: every call settles, ok or ERR_IPSET_CLOSED, the kernel holds what the ok ones did, no fd is left', async () => {
      using tns = new TestNetns('close-ipset');
      using setup = await Ipset.open({ netns: tns.path });
      await setup.create('big', { type: 'hash:ip', maxelem: 1 << 20, comment: true });
      await setup.addMany('big', Array.from({ length: 30_000 }, (_, n) => ({ ip: ip(10, n), comment: `c${n}` })));
      expect((await setup.list('big')).entries).toHaveLength(30_000); // opens setup's own dump socket, kept from now on
      const seen = new Set<string>();
      // close() after 0, 1, 2, ... turns of the event loop: before anything ran, and at points inside the calls.
      for (let k = 0; k < 12; k++) {
        const fdsBefore = openFds().size;
        const s = await Ipset.open({ netns: tns.path });
        const set = `t${k}`;
        await s.create(set, { type: 'hash:ip', maxelem: 1 << 20 });
        let streamed = 0;
        const calls = {
          addMany: s.addMany(set, Array.from({ length: 20_000 }, (_, n) => ({ ip: ip(11, n) }))),
          adds: Promise.all(Array.from({ length: 50 }, (_, n) => s.add(set, { ip: ip(12, n) }))),
          list: s.list('big').then((l) => l.entries.length),
          header: s.header('big').then((h) => h.elements),
          test: s.test('big', { ip: ip(10, 7) }),
          listNames: s.listNames().then((names) => names.length),
          // entries() streams over a socket of its own, which close() does not reach: it runs to its end.
          entries: (async () => {
            for await (const _ of s.entries('big', { chunk: 1000 })) streamed++;
            return streamed;
          })(),
        };
        await turns(k * 3);
        s.close();
        const got = await settle(calls);
        for (const [name, r] of Object.entries(got)) {
          seen.add(`${name}:${r.status}`);
          expect(['ok', 'ERR_IPSET_CLOSED'], `${name} after ${k * 3} turns`).toContain(r.status);
        }
        if (got.list!.status === 'ok') expect(got.list!.value).toBe(30_000);
        if (got.header!.status === 'ok') expect(got.header!.value).toBe(30_000);
        if (got.test!.status === 'ok') expect(got.test!.value).toBe(true);
        expect(got.entries).toEqual({ status: 'ok', value: 30_000 });
        // An array batch is one native call: all of it or nothing.
        const held = (await setup.list(set)).entries.map((e) => e.ip);
        const fromMany = held.filter((a) => a.startsWith('11.')).length;
        const fromAdds = held.filter((a) => a.startsWith('12.')).length;
        expect(fromMany).toBe(got.addMany!.status === 'ok' ? 20_000 : 0);
        expect(fromAdds).toBe(got.adds!.status === 'ok' ? 50 : 0);
        // The client's sockets and namespace handle are closed once its calls settled.
        await turns(1);
        await closesDone();
        expect(openFds().size).toBe(fdsBefore);
      }
      // Which calls finished depends on how far each got when close() came: printed, not asserted.
      console.log(`Ipset close() in flight, outcomes seen: ${[...seen].sort().join(' ')}`);
    });

    it('Ipset: a streamed addMany cut by close() rejects after whole chunks were applied (what it did stays)', async () => {
      using tns = new TestNetns('close-stream');
      using check = await Ipset.open({ netns: tns.path });
      const outcomes: string[] = [];
      for (const k of [0, 3, 10, 30]) {
        const s = await Ipset.open({ netns: tns.path });
        const set = `s${k}`;
        await s.create(set, { type: 'hash:ip', maxelem: 1 << 20 });
        function* source() {
          for (let n = 0; n < 40_000; n++) yield { ip: ip(11, n) };
        }
        const pending = s.addMany(set, source());
        await turns(k);
        s.close();
        const r = await pending.then(
          (v) => `ok ${v.applied}`,
          (e: unknown) => (e as PodnetError).code,
        );
        const held = (await check.header(set)).elements;
        outcomes.push(`${k} turns: ${r}, ${held} held`);
        if (r === 'ERR_IPSET_CLOSED') {
          // The truth: streamed chunks (4096 entries each) already sent stay applied, in stream order.
          expect(held % 4096).toBe(0);
          const entries = (await check.list(set)).entries.map((e) => e.ip).sort();
          expect(entries).toEqual(Array.from({ length: held }, (_, n) => ip(11, n)).sort());
        } else {
          expect(r).toBe('ok 40000');
          expect(held).toBe(40_000);
        }
      }
      console.log(`streamed addMany cut by close(): ${outcomes.join('; ')}`);
    });

    it('Rtnetlink: every call settles; the ones queued before close() finish, later ones are refused', async () => {
      using tns = new TestNetns('close-rt');
      const rt = await Rtnetlink.open({ netns: tns.path });
      const before = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`add${i}`, rt.addRoute({ dst: `10.${i}.0.0`, dstLength: 16, table: 100, type: 'blackhole' })]));
      const reads = { links: rt.links(), routes: rt.routes({ table: 100 }) };
      rt.close();
      const after = await settle({ late: (async () => rt.links())() });
      const got = await settle({ ...before, ...reads });
      for (const r of Object.values(got)) expect(r.status).toBe('ok');
      expect(got.routes!.value).toHaveLength(40);
      expect(after.late!.status).toBe('ERR_RTNETLINK_CLOSED');
      using check = await Rtnetlink.open({ netns: tns.path });
      expect(await check.routes({ table: 100 })).toHaveLength(40);
    });
  },
  missingBinary('ipset'),
);

// --- ZtunnelServer close() with everything in flight ----------------------------------------------------------------

const W = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };

async function nextRequest(socket: SeqpacketSocket): Promise<ZdsRequest | null> {
  const msg = await socket.receive({ ...WAIT, maxFds: 4 });
  if (msg === null) return null;
  for (const fd of msg.fds) fd.close();
  return decodeRequest(msg.data);
}

describe('ZtunnelServer close() with everything in flight (any user)', () => {
  checkFdsPerTest();

  it('settles every call, ends every connection (hello pending, mid-snapshot, busy) and closes its netns handles', async () => {
    const server = await ZtunnelServer.listen({ path: nextPath() });
    using ns = Netns.current();
    const fdsOfNs = () => [...openFds().values()].filter((t) => t === `net:[${ns.inode}]`).length;
    const mine = fdsOfNs();
    server.replaceWorkloads(['a', 'b'].map((uid) => ({ uid, workload: W, netns: ns })));
    // 1: connected, never says hello. 2: said hello, its snapshot's first add unacked. 3: done with its snapshot,
    // an add and a del waiting for acks.
    using silent = await SeqpacketSocket.connect(server.path, WAIT);
    using midSnapshot = await SeqpacketSocket.connect(server.path, WAIT);
    await midSnapshot.send(encodeHello(), WAIT);
    expect(await nextRequest(midSnapshot)).toMatchObject({ kind: 'add', uid: 'a' });
    using busy = await SeqpacketSocket.connect(server.path, WAIT);
    await busy.send(encodeHello(), WAIT);
    for (;;) {
      const req = await nextRequest(busy);
      await busy.send(encodeAck(), WAIT);
      if (req?.kind === 'snapshotSent') break;
    }
    const calls = {
      add: server.addWorkload('c', W, ns),
      addQueued: server.addWorkload('d', W, ns),
      del: server.delWorkload('a'),
    };
    expect(await nextRequest(busy)).toMatchObject({ kind: 'add', uid: 'c' });
    const closed = server.close();
    const got = await settle({ ...calls, close: closed });
    expect(got.close!.status).toBe('ok');
    expect(got.add!.status).toBe('ERR_PROXY_DISCONNECTED');
    expect(got.addQueued!.status).toBe('ERR_PROXY_DISCONNECTED');
    // A del needs no ack from a proxy that is gone (its next snapshot will not have the workload).
    expect(got.del!.status).toBe('ok');
    for (const socket of [silent, midSnapshot, busy]) expect(await nextRequest(socket)).toBeNull();
    expect(server.connected).toBe(0);
    expect(server.workloads).toEqual([]);
    expect(fdsOfNs()).toBe(mine);
    expect((await settle({ late: server.addWorkload('e', W, ns) })).late!.status).toBe('ERR_PROXY_CLOSED');
  });
});

// --- calls from inside event handlers ------------------------------------------------------------------------------

function handlerSuite(name: string, makeWorld: () => World): void {
  describe(`calls from a NodeNetwork 'conflict' handler (${name})`, () => {
    it('the handler removes the old pod and asks the probe set; nothing deadlocks, the new owner keeps the IP', async () => {
      const world = makeWorld();
      const net = await started(world);
      try {
        const a = world.pod();
        const b = world.pod(a.ip);
        const inHandler: Promise<unknown>[] = [];
        const seen: { conflict: ProbeConflict; owner: string | undefined }[] = [];
        net.on('conflict', (conflict) => {
          // Called with the IP's lock held: its calls queue behind the add that reported it.
          seen.push({ conflict, owner: net.probeSet!.owner(conflict.ip) });
          inHandler.push(net.probeSet!.remove(conflict.ip, conflict.previousOwner));
          inHandler.push(net.removePod({ uid: a.uid, ips: [a.ip], netns: a.netns }));
          inHandler.push(net.probeSet!.add(conflict.ip, conflict.newOwner));
        });
        await net.addPod({ uid: a.uid, ips: [a.ip], netns: a.netns });
        await net.addPod({ uid: b.uid, ips: [b.ip], netns: b.netns });
        expect(seen).toEqual([{ conflict: { ip: a.ip, previousOwner: a.uid, newOwner: b.uid }, owner: b.uid }]);
        expect(await Promise.all(inHandler)).toEqual(['mismatch', undefined, 'unchanged']);
        const owners = (await (await world.hostIpset()).list('istio-inpod-probes-v4')).entries.map((e) => [e.ip, e.comment]);
        expect(owners).toEqual([[a.ip, b.uid]]);
        // removePod of a removed a's in-pod rules, not the entry b owns now.
        expect((await (await world.podIptables(a)).save()).tables.nat?.chains.ISTIO_PRERT).toBeUndefined();
        expect((await (await world.podIptables(b)).save()).tables.nat?.chains.ISTIO_PRERT).toBeDefined();
      } finally {
        await net.stop({ keep: true });
        await world.cleanup();
      }
    });
  });
}

handlerSuite('fakes', fakeWorld);
describePrivileged('calls from event handlers (real kernel)', () => handlerSuite('kernel', kernelWorld), missingBinary('ipset', 'iptables-nft-restore'));

describe('calls from ZtunnelServer event handlers (any user)', () => {
  checkFdsPerTest();

  it("'connected' adds and deletes, 'snapshotSent' adds, 'disconnected' adds: every call settles, the views agree", async () => {
    await using server = await ZtunnelServer.listen({ path: nextPath() });
    using ns = Netns.current();
    server.replaceWorkloads(['a', 'b'].map((uid) => ({ uid, workload: W, netns: ns })));
    const inHandlers: Record<string, Promise<unknown>> = {};
    server.once('connected', () => {
      inHandlers.addOnConnect = server.addWorkload('c', W, ns);
      inHandlers.delOnConnect = server.delWorkload('b');
    });
    server.once('snapshotSent', () => {
      inHandlers.addOnSnapshot = server.addWorkload('d', W, ns);
    });
    const gone = new Promise<void>((resolve) =>
      server.once('disconnected', () => {
        // The only proxy just went away: nothing to add to, a typed refusal, not a hang.
        inHandlers.addOnDisconnect = server.addWorkload('e', W, ns);
        resolve();
      }),
    );
    const socket = await SeqpacketSocket.connect(server.path, WAIT);
    await socket.send(encodeHello(), WAIT);
    const view = new Map<string, string>();
    const seen: string[] = [];
    while (!view.has('d')) {
      const req = (await nextRequest(socket))!;
      seen.push(req.kind === 'add' || req.kind === 'del' ? `${req.kind} ${req.uid}` : req.kind);
      if (req.kind === 'add') view.set(req.uid, req.workload.name);
      if (req.kind === 'del') view.delete(req.uid);
      await socket.send(encodeAck(), WAIT);
    }
    expect(seen).toEqual(['add c', 'del b', 'add a', 'snapshotSent', 'add d']);
    await inHandlers.addOnSnapshot;
    expect([...view.keys()].sort()).toEqual(server.workloads.map((w) => w.uid).sort());
    socket.close();
    await gone;
    const got = await settle(inHandlers);
    expect(got).toMatchObject({
      addOnConnect: { status: 'ok' },
      delOnConnect: { status: 'ok' },
      addOnSnapshot: { status: 'ok' },
      addOnDisconnect: { status: 'ERR_PROXY_NOT_CONNECTED' },
    });
    expect(server.workloads.map((w) => w.uid)).toEqual(['a', 'c', 'd']);
  });
});

// --- many clients on one namespace ---------------------------------------------------------------------------------

describePrivileged(
  'many clients on one namespace (real kernel)',
  () => {
    it('32 Ipset clients working at once: every entry lands once, in the right set, every answer right', async () => {
      using tns = new TestNetns('many');
      const CLIENTS = 32;
      const PER = 300;
      using setup = await Ipset.open({ netns: tns.path });
      // Sized so that the kernel never resizes it: a resize while other sockets add to the same set loses an entry
      // now and then, ACKed as added (a kernel race, see the note at the top). Each client's own set resizes freely:
      // one socket writes it, and one socket's requests go one at a time.
      await setup.create('shared', { type: 'hash:ip', maxelem: 1 << 20, comment: true, hashsize: 16384 });
      const clients = await Promise.all(Array.from({ length: CLIENTS }, () => Ipset.open({ netns: tns.path })));
      try {
        const wrong: string[] = [];
        await Promise.all(
          clients.map(async (c, i) => {
            const own = `own${i}`;
            await c.create(own, { type: 'hash:ip', maxelem: 1 << 20 });
            // Coalesced adds, an array batch, a streamed batch and sync adds, all at once, to its own set and the shared one.
            const singles = Promise.all(Array.from({ length: PER }, (_, n) => c.add(own, { ip: ip(10 + (i >> 3), (i << 16) + n) })));
            const batch = c.addMany('shared', Array.from({ length: PER }, (_, n) => ({ ip: ip(100 + (i >> 3), (i << 16) + n), comment: `client ${i}` })));
            const streamed = c.addMany(own, new Set(Array.from({ length: PER }, (_, n) => ({ ip: ip(10 + (i >> 3), (i << 16) + PER + n) }))));
            for (let n = 0; n < 10; n++) c.addSync(own, { ip: ip(10 + (i >> 3), (i << 16) + 2 * PER + n) });
            await singles;
            if ((await batch).applied !== PER) wrong.push(`client ${i}: batch`);
            if ((await streamed).applied !== PER) wrong.push(`client ${i}: streamed`);
            // Reads while the others still write: its own set is exactly its own.
            const listed = (await c.list(own)).entries.map((e) => e.ip).sort();
            const expected = Array.from({ length: 2 * PER + 10 }, (_, n) => ip(10 + (i >> 3), (i << 16) + n)).sort();
            if (JSON.stringify(listed) !== JSON.stringify(expected)) wrong.push(`client ${i}: own set holds ${listed.length}`);
            if (!(await c.test('shared', { ip: ip(100 + (i >> 3), i << 16) }))) wrong.push(`client ${i}: test`);
            if (c.testSync(own, { ip: ip(99, 1) })) wrong.push(`client ${i}: testSync of an absent entry`);
          }),
        );
        expect(wrong).toEqual([]);
        const shared = (await setup.list('shared')).entries;
        expect(shared).toHaveLength(CLIENTS * PER);
        for (let i = 0; i < CLIENTS; i++) expect(shared.filter((e) => e.comment === `client ${i}`)).toHaveLength(PER);
        expect((await setup.listNames()).sort()).toEqual(['shared', ...clients.map((_, i) => `own${i}`)].sort());
        // The CLI agrees.
        const saved = await runInNetns(tns.path, ['ipset', 'save']);
        expect(saved.stdout.split('\n').filter((l) => l.startsWith('add shared '))).toHaveLength(CLIENTS * PER);
        expect(saved.stdout.split('\n').filter((l) => l.startsWith('add own'))).toHaveLength(CLIENTS * (2 * PER + 10));
        expect(zombies()).toEqual([]);
      } finally {
        for (const c of clients) c.close();
      }
    });
  },
  missingBinary('ipset'),
);
