// The pod-IP reuse race: pods take each other's IPs, and add/remove events
// arrive late, out of order and concurrently. After every schedule the probe
// sets must hold exactly the live pods' IPs, each owned by the pod holding it
// now, and no removal may ever have deleted an entry another pod owned.
import { describe, expect, it } from 'vitest';

import { Ipset, NodeNetwork, type NodeNetworkOptions } from '../../lib/index.js';
import { FakeNode } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

const SET = 'istio-inpod-probes-v4';
const SCHEDULES = 1000;

interface DelRecord {
  ip: string;
  ownerInKernel: string | undefined;
}

/** Wraps an Ipset so every probe-entry delete records who owned the entry in the kernel at that moment. */
function watchDeletes(ipset: Ipset, dels: DelRecord[]): Ipset {
  return new Proxy(ipset, {
    get(target, prop) {
      if (prop === 'del') {
        return async (set: string, entry: { ip: string }, options?: { ignoreMissing?: boolean }) => {
          const owner = (await target.list(set)).entries.find((e) => e.ip === entry.ip)?.comment;
          dels.push({ ip: entry.ip, ownerInKernel: owner });
          return target.del(set, entry, options);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

const ticks = (n: number) => new Promise<void>((resolve) => {
  const step = (left: number) => (left <= 0 ? resolve() : setImmediate(() => step(left - 1)));
  step(n);
});

async function runRace(ipset: Ipset, fakes: FakeNode, seed: number): Promise<{ conflicts: number; mismatches: number }> {
  const dels: DelRecord[] = [];
  const removedBy: { ip: string; pod: string }[] = [];
  const logger = {
    debug: (message: string, fields?: Record<string, unknown>) => {
      if (message === 'probe entry removed') removedBy.push({ ip: fields!.ip as string, pod: fields!.pod as string });
    },
  };
  const options: NodeNetworkOptions = { ipset: watchDeletes(ipset, dels), iptables: fakes.iptables, netns: fakes.netns, rtnetlink: fakes.rtnetlink, logger };
  const node = new NodeNetwork(options);
  await node.start();
  let conflicts = 0;
  let mismatches = 0;
  node.on('conflict', () => conflicts++);
  node.on('ownerMismatch', () => mismatches++);
  const rand = prng(seed);
  const pool = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];
  for (let schedule = 0; schedule < SCHEDULES; schedule++) {
    // Who holds each IP, in allocation order; every holder but the last is gone, the last maybe too.
    const holders = new Map<string, string[]>();
    for (let p = 0; p < 6; p++) {
      const ip = pool[Math.floor(rand() * pool.length)]!;
      holders.set(ip, [...(holders.get(ip) ?? []), `s${seed}-${schedule}-p${p}`]);
    }
    const live = new Map<string, string>();
    const events: { kind: 'add' | 'remove'; uid: string; ip: string; at: number }[] = [];
    for (const [ip, pods] of holders) {
      pods.forEach((uid, i) => {
        // An IP is handed to the next pod only after the previous sandbox is gone: adds per IP in order.
        events.push({ kind: 'add', uid, ip, at: i * 2 });
        const dies = i < pods.length - 1 || rand() < 0.4;
        // ...but the remove event of the previous holder may be delivered arbitrarily late.
        if (dies) events.push({ kind: 'remove', uid, ip, at: i * 2 + 1 + Math.floor(rand() * 6) });
        else live.set(ip, uid);
      });
    }
    await Promise.all(
      events.map(async (e) => {
        await ticks(e.at + Math.floor(rand() * 2));
        const pod = { uid: e.uid, ips: [e.ip], netns: `/run/netns/fake-${e.uid}` };
        fakes.netns.add(pod.netns);
        if (e.kind === 'add') await node.addPod(pod);
        else await node.removePod(pod, { deleted: true });
      }),
    );
    const actual = new Map((await ipset.list(SET)).entries.map((e) => [e.ip, e.comment]));
    expect({ schedule, entries: actual }).toEqual({ schedule, entries: live });
    for (const [ip, uid] of live) await node.removePod({ uid, ips: [ip] }, { deleted: true });
  }
  // Every kernel delete was made by the pod that owned the entry at that moment.
  expect(dels.length).toBe(removedBy.length);
  const byIp = new Map<string, string[]>();
  for (const r of removedBy) byIp.set(r.ip, [...(byIp.get(r.ip) ?? []), r.pod]);
  const seen = new Map<string, number>();
  for (const d of dels) {
    const i = seen.get(d.ip) ?? 0;
    seen.set(d.ip, i + 1);
    expect({ ip: d.ip, deletedFrom: d.ownerInKernel }).toEqual({ ip: d.ip, deletedFrom: byIp.get(d.ip)![i] });
  }
  await node.stop({ keep: true });
  return { conflicts, mismatches };
}

describe('pod IP reuse race (fakes)', () => {
  it(`holds over ${SCHEDULES} randomized schedules`, async () => {
    const fakes = new FakeNode();
    const ipset = await Ipset.open({ netlink: fakes.netlink });
    const { conflicts, mismatches } = await runRace(ipset, fakes, 1);
    // The schedules must actually produce the race, or they prove nothing.
    expect(conflicts).toBeGreaterThan(100);
    expect(mismatches).toBeGreaterThan(100);
    ipset.close();
  });
});

describePrivileged(
  'pod IP reuse race (kernel probe sets)',
  () => {
    it(`holds over ${SCHEDULES} randomized schedules`, async () => {
      const host = new TestNetns('race');
      try {
        using ipset = await Ipset.open({ netns: host.path });
        const { conflicts, mismatches } = await runRace(ipset, new FakeNode(), 2);
        expect(conflicts).toBeGreaterThan(100);
        expect(mismatches).toBeGreaterThan(100);
      } finally {
        host.delete();
      }
    });
  },
  missingBinary('ipset'),
);
