import { describe, expect, it } from 'vitest';

import { Ipset, IpsetError, Netns } from '../../lib/index.js';
import { TestNetns, withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { ipsetContract } from './contract.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** collector returns V8's full garbage collection, exposed for this process (vitest's workers do not pass --expose-gc). */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describePrivileged(
  'ipset against the kernel',
  () => {
    ipsetContract('kernel', () => {
      const ns = new TestNetns('ips');
      return {
        open: () => Ipset.open({ netns: ns.path }),
        cleanup: () => ns.delete(),
      };
    });

    it('interoperates with the ipset CLI both ways', async () => {
      await withNetns(async (ns) => {
        using ipset = await Ipset.open({ netns: ns.path });
        await ipset.create('probes-v4', { type: 'hash:ip', comment: true });
        await ipset.add('probes-v4', { ip: '10.0.0.1', comment: 'uid-a' });
        const saved = ns.exec(['ipset', 'save', 'probes-v4']);
        expect(saved).toContain('create probes-v4 hash:ip family inet');
        expect(saved).toContain('comment');
        expect(saved).toContain('add probes-v4 10.0.0.1 comment "uid-a"');
        ns.exec(['ipset', 'add', 'probes-v4', '10.0.0.2', 'comment', 'from-cli']);
        ns.exec(['ipset', 'create', 'cli-net6', 'hash:net', 'family', 'inet6', 'timeout', '300']);
        ns.exec(['ipset', 'add', 'cli-net6', 'fd00:1::/64', 'timeout', '120']);
        const entries = (await ipset.list('probes-v4')).entries.sort((a, b) => a.ip.localeCompare(b.ip));
        expect(entries).toEqual([{ ip: '10.0.0.1', comment: 'uid-a' }, { ip: '10.0.0.2', comment: 'from-cli' }]);
        const net6 = await ipset.list('cli-net6');
        expect(net6).toMatchObject({ type: 'hash:net', family: 'inet6', timeout: 300 });
        expect(net6.entries).toHaveLength(1);
        expect(net6.entries[0]).toMatchObject({ ip: 'fd00:1::', cidr: 64 });
      });
    });

    it("lists other programs' sets of types it does not decode without throwing", async () => {
      await withNetns(async (ns) => {
        // (hash:mac is not built into this kernel; these two are.)
        ns.exec(['ipset', 'create', 'ifaces', 'hash:net,iface']);
        ns.exec(['ipset', 'add', 'ifaces', '10.0.0.0/8,eth0']);
        ns.exec(['ipset', 'create', 'ports', 'bitmap:port', 'range', '1-1024']);
        ns.exec(['ipset', 'add', 'ports', '80']);
        using ipset = await Ipset.open({ netns: ns.path });
        expect((await ipset.listNames()).sort()).toEqual(['ifaces', 'ports']);
        const ifaces = await ipset.list('ifaces');
        expect(ifaces).toMatchObject({ name: 'ifaces', type: 'hash:net,iface', family: 'inet', decoded: false, elements: 1, entries: [] });
        expect(await ipset.header('ports')).toMatchObject({ type: 'bitmap:port', decoded: false, elements: 1 });
        const streamed = [];
        for await (const e of ipset.entries('ports')) streamed.push(e);
        expect(streamed).toEqual([]);
        const err = await ipset.add('ifaces', { ip: '10.0.0.1' }).catch((e: unknown) => e);
        expect(err).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      });
    });

    it('keeps a set inside the namespace it was created in', async () => {
      await withNetns(async (a, b) => {
        using inA = await Ipset.open({ netns: Netns.named(a.name) });
        using inB = await Ipset.open({ netns: b.path });
        await inA.create('only-in-a', { type: 'hash:ip' });
        expect(await inA.listNames()).toEqual(['only-in-a']);
        expect(await inB.listNames()).toEqual([]);
        expect(a.exec(['ipset', 'list', '-n']).trim()).toBe('only-in-a');
        expect(b.exec(['ipset', 'list', '-n']).trim()).toBe('');
      }, 2);
    });

    it('streams a million-entry set with bounded memory and reads its header alone', async () => {
      await withNetns(async (ns) => {
        using ipset = await Ipset.open({ netns: ns.path });
        await ipset.create('million', { type: 'hash:ip', maxelem: 2_000_000, hashsize: 1 << 20 });
        function* gen() {
          for (let i = 0; i < 1_000_000; i++) yield { ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` };
        }
        expect(await ipset.addMany('million', gen())).toEqual({ applied: 1_000_000, failed: [] });
        expect(await ipset.header('million')).toMatchObject({ elements: 1_000_000, decoded: true });
        // What the listing holds, not the garbage it left: each sample is taken after a full collection (garbage
        // waiting for the collector differs between Node versions: Node 24 let 75 MiB of it stand).
        const gc = collector();
        gc();
        const before = process.memoryUsage().heapUsed;
        let count = 0;
        let peak = 0;
        for await (const e of ipset.entries('million', { chunk: 2048 })) {
          if (!e.ip.startsWith('10.')) throw new Error(`odd entry ${e.ip}`);
          if (++count % 100_000 === 0) {
            gc();
            peak = Math.max(peak, process.memoryUsage().heapUsed - before);
          }
        }
        expect(count).toBe(1_000_000);
        // A materialised million-entry listing takes well over 100 MiB of heap; streaming stays far below.
        expect(peak).toBeLessThan(64 * 1024 * 1024);
      });
    });

    it('lists a 100k-entry set completely, with comments and timeouts, and streams it', async () => {
      await withNetns(async (ns) => {
        using ipset = await Ipset.open({ netns: ns.path });
        await ipset.create('big', { type: 'hash:ip', comment: true, timeout: 3600, maxelem: 200000 });
        const n = 100_000;
        const dupAt = new Set([3, 4242, 50_000, 99_999]);
        function* gen() {
          for (let i = 0; i < n; i++) yield { ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${dupAt.has(i) ? 7 : i & 255}`, comment: `pod-${i}` };
        }
        const result = await ipset.addMany('big', gen());
        // Replay the exclusive adds in order to know which ones must fail.
        const seen = new Set<string>();
        const expectedFailures: number[] = [];
        for (const [i, e] of [...gen()].entries()) {
          if (seen.has(e.ip)) expectedFailures.push(i);
          seen.add(e.ip);
        }
        expect(expectedFailures.length).toBe(4);
        expect(result.failed.map((f) => f.index)).toEqual(expectedFailures);
        expect(result.applied).toBe(n - expectedFailures.length);
        const listed = await ipset.list('big');
        expect(listed.entries).toHaveLength(result.applied);
        expect(listed.elements).toBe(result.applied);
        expect(listed.entries.every((e) => e.comment?.startsWith('pod-') && e.timeout! > 3500)).toBe(true);
        expect(ns.exec(['ipset', 'list', 'big', '-t'])).toContain(`Number of entries: ${result.applied}`);
        let streamed = 0;
        for await (const _ of ipset.entries('big')) streamed++;
        expect(streamed).toBe(result.applied);
      });
    });
  },
  missingBinary('ipset'),
);

describe('ipset engine deadlines', () => {
  it('ends in ETIMEDOUT when the peer never answers', async () => {
    let calls = 0;
    const silent = { exchange: () => (calls++, []) };
    const err = await Ipset.open({ netlink: silent, timeoutMs: 50 }).catch((e: unknown) => e);
    expect(calls).toBe(1);
    expect(err).toMatchObject({ code: 'ETIMEDOUT', errno: -110 });
    expect(err).not.toBeInstanceOf(IpsetError);
  });
});
