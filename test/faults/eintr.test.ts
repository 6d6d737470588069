// EINTR on the real kernel (issue 15): a storm of SIGUSR2, sent with tgkill to every thread of this process (the JS
// thread in its sync netlink calls, the libuv pool threads in poll/recv/waitpid, the short-lived setns threads),
// while ipset, rtnetlink, runInNetns, Netns and seqpacket calls are in flight. libuv installs its handlers with
// SA_RESTART, so most blocking calls restart by themselves; poll() never does, and every poll in podnet's native
// code must retry on EINTR. Found: every call completes with the right result, none rejects. (Checked that it can
// fail: without the EINTR retry of spawn_run.cc's poll, runInNetns rejects with EINTR within the first rounds.)
// The storm runs for a number of rounds and signals (counts), never for a time.
import { afterEach, beforeEach, expect, it } from 'vitest';

import { Ipset, Netns, Rtnetlink, runInNetns } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { pair } from '../unix/helpers/pair.js';
import { socketDir } from '../unix/helpers/fds.js';
import { signalStorm, zombies, type StormReport } from './helpers/process.js';

const nextPath = socketDir();
/** The storm goes on until both are reached (and at most MAX_ROUNDS rounds, which fails the test). */
const MIN_ROUNDS = 100;
const MIN_HANDLED = 1000;
const MAX_ROUNDS = 3000;
const BATCH = 200;

const ip = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

let handled = 0;
const onSignal = () => void handled++;
beforeEach(() => {
  handled = 0;
  process.on('SIGUSR2', onSignal);
});
afterEach(() => {
  process.off('SIGUSR2', onSignal);
});

describePrivileged(
  'EINTR: a signal storm during blocking calls (real kernel)',
  () => {
    it('completes every ipset, rtnetlink, runInNetns, Netns and seqpacket call correctly; none rejects', async () => {
      using tns = new TestNetns('eintr');
      using ipset = await Ipset.open({ netns: tns.path });
      using rt = await Rtnetlink.open({ netns: tns.path });
      using p = await pair(nextPath());
      await ipset.create('async', { type: 'hash:ip', maxelem: 1 << 20 });
      await ipset.create('sync', { type: 'hash:ip', maxelem: 1 << 20 });
      const payload = Buffer.alloc(256 << 10, 'podnet\n').toString();
      const failures: unknown[] = [];
      const wrong: string[] = [];
      const check = (what: string, ok: boolean) => void (ok || wrong.push(what));

      const storm = await signalStorm('SIGUSR2');
      let rounds = 0;
      let report: StormReport;
      try {
        while ((rounds < MIN_ROUNDS || handled < MIN_HANDLED) && rounds < MAX_ROUNDS) {
          const r = rounds++;
          const base = r * (BATCH + 1);
          const batch = Array.from({ length: BATCH }, (_, i) => ({ ip: ip(base + i) }));
          // The JS thread's own blocking calls: a round trip each, in recv()/poll() on this thread.
          ipset.addSync('sync', { ip: ip(r) });
          check(`testSync ${r}`, ipset.testSync('sync', { ip: ip(r) }));
          Netns.open(tns.path).close();
          const calls: Promise<void>[] = [
            ipset.addMany('async', batch).then((res) => check(`addMany ${r}`, res.applied === BATCH && res.failed.length === 0)),
            ipset.add('async', { ip: ip(base + BATCH) }),
            ipset.test('async', { ip: ip(base) }).then((yes) => check(`test ${r}`, yes)),
            ipset.list('sync').then((l) => check(`list ${r}`, l.entries.length === r + 1)),
            rt
              .addRoute({ dst: `10.${(r >> 8) & 255}.${r & 255}.0`, dstLength: 24, table: 100, type: 'blackhole' })
              .then(() => rt.routes({ table: 100 }))
              .then((routes) => check(`routes ${r}`, routes.length === r + 1)),
            rt.links().then((links) => check(`links ${r}`, links.length === 1 && links[0]!.name === 'lo')),
            runInNetns(tns.path, ['cat'], { stdin: payload }).then((res) =>
              check(`cat ${r}`, res.exitCode === 0 && res.stdout === payload && res.stderr === ''),
            ),
            // waitpid and the poll on a program that sleeps.
            runInNetns(tns.path, ['sleep', '0.01']).then((res) => check(`sleep ${r}`, res.exitCode === 0)),
            p.client.send(Buffer.from(`m${r}`)).then(async () => {
              const got = await p.conn.receive();
              check(`seqpacket ${r}`, got?.data.toString() === `m${r}`);
            }),
          ];
          for (const result of await Promise.allSettled(calls)) if (result.status === 'rejected') failures.push(result.reason);
        }
      } finally {
        report = await storm.stop();
      }
      console.log(`EINTR storm: ${rounds} rounds, ${report.sent} signals sent to ${report.threads} threads, ${handled} handled in JS`);

      expect(failures).toEqual([]);
      expect(wrong).toEqual([]);
      expect(rounds).toBeLessThan(MAX_ROUNDS);
      // The storm reached the pool threads too, not only the JS thread: libuv's 4 and V8's platform threads.
      expect(report.threads).toBeGreaterThan(4);
      expect(handled).toBeGreaterThanOrEqual(MIN_HANDLED);
      // What the calls did is all there, once each.
      expect((await ipset.header('async')).elements).toBe(rounds * (BATCH + 1));
      expect((await ipset.header('sync')).elements).toBe(rounds);
      expect(await rt.routes({ table: 100 })).toHaveLength(rounds);
      expect(zombies()).toEqual([]);
    });
  },
  missingBinary('python3'),
);
