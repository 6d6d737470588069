// NftProbeSet behaviour, the cases of probe-set-contract.ts (ProbeSet on ipset) on nft sets, plus what only nft sets
// show: run against the kernel and against FakeNftables, the sets read back through the same Nftables client.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { ProbeOwnerConflictError } from '../../lib/agent/errors.js';
import { NftProbeSet } from '../../lib/agent/nft-probe-set.js';
import type { ProbeConflict, ProbeOwnerMismatch } from '../../lib/agent/probe-set.js';
import type { Nftables } from '../../lib/index.js';

/** NftBackend opens an Nftables client on a fresh world (kernel namespace or fake) and cleans it up. */
export interface NftBackend {
  open(): Promise<Nftables>;
  cleanup(): void;
}

const TABLE = { family: 'inet', name: 'istio-ambient-nat' } as const;

export function nftProbeSetContract(name: string, backend: () => NftBackend): void {
  describe(`NftProbeSet: ${name}`, () => {
    let world: NftBackend;
    let nft: Nftables;
    let conflicts: ProbeConflict[];
    let mismatches: ProbeOwnerMismatch[];
    let probes: NftProbeSet;
    const entries = async (set: string) =>
      (await nft.elements(TABLE, set)).map((e) => ({ ip: e.address, comment: e.comment })).sort((a, b) => a.ip.localeCompare(b.ip));

    beforeEach(async () => {
      world = backend();
      nft = await world.open();
      conflicts = [];
      mismatches = [];
      probes = new NftProbeSet({ nftables: nft, onConflictEvent: (c) => conflicts.push(c), onOwnerMismatch: (m) => mismatches.push(m) });
      await probes.ensure();
    });
    afterEach(() => {
      nft?.close();
      world?.cleanup();
    });

    it('creates both family sets with comments, and accepts them again', async () => {
      await probes.ensure();
      const sets = (await nft.sets(TABLE)).filter((s) => s.table === TABLE.name);
      expect(sets.map((s) => [s.name, s.type, s.comment])).toEqual([
        ['istio-inpod-probes-v4', 'ipv4_addr', 'UUID of the pods that are part of ambient mesh'],
        ['istio-inpod-probes-v6', 'ipv6_addr', 'UUID of the pods that are part of ambient mesh'],
      ]);
    });

    it('detects a duplicate in the kernel: an element added behind its back is read back as the owner', async () => {
      await nft.addElement(TABLE, 'istio-inpod-probes-v4', { address: '10.0.0.9', comment: 'uid-elsewhere' });
      expect(probes.owner('10.0.0.9')).toBeUndefined();
      expect(await probes.add('10.0.0.9', 'uid-b')).toBe('taken-over');
      expect(conflicts).toEqual([{ ip: '10.0.0.9', previousOwner: 'uid-elsewhere', newOwner: 'uid-b' }]);
      expect(await entries('istio-inpod-probes-v4')).toEqual([{ ip: '10.0.0.9', comment: 'uid-b' }]);
    });

    it('fails an add the kernel refuses with a typed error, the view unchanged', async () => {
      await nft.run(nft.transaction().deleteSet({ family: 'inet', table: TABLE.name, name: 'istio-inpod-probes-v4' }));
      await expect(probes.add('10.0.0.1', 'uid-a')).rejects.toMatchObject({ name: 'NftablesError', code: 'ENOENT' });
      expect(probes.owner('10.0.0.1')).toBeUndefined();
    });

    it('records the owner, unmaps IPv4-mapped addresses and routes by family', async () => {
      expect(await probes.add('::ffff:10.0.0.7', 'uid-a')).toBe('added');
      expect(await probes.add('fd00::7', 'uid-a')).toBe('added');
      expect(await entries('istio-inpod-probes-v4')).toEqual([{ ip: '10.0.0.7', comment: 'uid-a' }]);
      expect(await entries('istio-inpod-probes-v6')).toEqual([{ ip: 'fd00::7', comment: 'uid-a' }]);
      expect(probes.owner('10.0.0.7')).toBe('uid-a');
      expect(await probes.add('10.0.0.7', 'uid-a')).toBe('unchanged');
      expect(conflicts).toEqual([]);
    });

    it('takes over from another owner and reports it', async () => {
      await probes.add('10.0.0.7', 'uid-a');
      expect(await probes.add('10.0.0.7', 'uid-b')).toBe('taken-over');
      expect(conflicts).toEqual([{ ip: '10.0.0.7', previousOwner: 'uid-a', newOwner: 'uid-b' }]);
      expect(await entries('istio-inpod-probes-v4')).toEqual([{ ip: '10.0.0.7', comment: 'uid-b' }]);
    });

    it("with onConflict 'error' refuses, naming both owners, and changes nothing", async () => {
      const strict = new NftProbeSet({ nftables: nft, onConflict: 'error' });
      await strict.add('10.0.0.7', 'uid-a');
      const err = await strict.add('10.0.0.7', 'uid-b').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProbeOwnerConflictError);
      expect(err).toMatchObject({ ip: '10.0.0.7', previousOwner: 'uid-a', newOwner: 'uid-b', code: 'ERR_PROBE_OWNER_CONFLICT' });
      expect(await entries('istio-inpod-probes-v4')).toEqual([{ ip: '10.0.0.7', comment: 'uid-a' }]);
    });

    it("never removes another pod's entry", async () => {
      await probes.add('10.0.0.7', 'uid-a');
      await probes.add('10.0.0.7', 'uid-b');
      expect(await probes.remove('10.0.0.7', 'uid-a')).toBe('mismatch');
      expect(mismatches).toEqual([{ ip: '10.0.0.7', owner: 'uid-a', actualOwner: 'uid-b' }]);
      expect(await entries('istio-inpod-probes-v4')).toEqual([{ ip: '10.0.0.7', comment: 'uid-b' }]);
      expect(await probes.remove('10.0.0.7', 'uid-b')).toBe('removed');
      expect(await probes.remove('10.0.0.7', 'uid-b')).toBe('missing');
      expect(await entries('istio-inpod-probes-v4')).toEqual([]);
    });

    it('loads owners written by an earlier run and prunes unclaimed IPs', async () => {
      await probes.add('10.0.0.1', 'uid-a');
      await probes.add('10.0.0.2', 'uid-b');
      await probes.add('fd00::3', 'uid-c');
      const restarted = new NftProbeSet({ nftables: nft });
      await restarted.load();
      expect(restarted.entries().sort((x, y) => x.ip.localeCompare(y.ip))).toEqual([
        { ip: '10.0.0.1', owner: 'uid-a' },
        { ip: '10.0.0.2', owner: 'uid-b' },
        { ip: 'fd00::3', owner: 'uid-c' },
      ]);
      const removed = await restarted.prune(new Set(['10.0.0.2']));
      expect(removed.sort((x, y) => x.ip.localeCompare(y.ip))).toEqual([
        { ip: '10.0.0.1', owner: 'uid-a' },
        { ip: 'fd00::3', owner: 'uid-c' },
      ]);
      expect(await entries('istio-inpod-probes-v4')).toEqual([{ ip: '10.0.0.2', comment: 'uid-b' }]);
    });

    it('refuses bad addresses and owners', async () => {
      await expect(probes.add('10.1', 'uid')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      await expect(async () => probes.add('10.0.0.1', '')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      const v4only = new NftProbeSet({ nftables: nft, ipv6: false });
      await expect(async () => v4only.add('fd00::1', 'uid')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
    });

    it('keeps only live pods, each owned by its holder, over randomized reuse schedules', async () => {
      // Pods take IPs from a small pool; an IP goes to a new pod only after the previous holder's sandbox is gone,
      // but the old pod's remove event may be delivered late, concurrently with anything.
      let seed = 7;
      const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
      const pool = ['10.0.0.1', '10.0.0.2', 'fd00::1'];
      for (let schedule = 0; schedule < 40; schedule++) {
        const holders = new Map<string, string[]>();
        const events: { pod: string; ip: string; kind: 'add' | 'remove' }[] = [];
        for (let p = 0; p < 8; p++) {
          const ip = pool[Math.floor(rand() * pool.length)]!;
          const pod = `s${schedule}-p${p}`;
          holders.set(ip, [...(holders.get(ip) ?? []), pod]);
        }
        const live = new Map<string, string>();
        const pendingRemoves: { pod: string; ip: string; kind: 'remove' }[] = [];
        for (const [ip, pods] of holders) {
          pods.forEach((pod, i) => {
            events.push({ pod, ip, kind: 'add' });
            if (i < pods.length - 1 || rand() < 0.4) pendingRemoves.push({ pod, ip, kind: 'remove' });
            else live.set(ip, pod);
          });
        }
        // Interleave: removes land anywhere after their own add.
        for (const r of pendingRemoves) {
          const addAt = events.findIndex((e) => e.kind === 'add' && e.pod === r.pod);
          const at = addAt + 1 + Math.floor(rand() * (events.length - addAt));
          events.splice(at, 0, r);
        }
        await Promise.all(events.map((e) => (e.kind === 'add' ? probes.add(e.ip, e.pod) : probes.remove(e.ip, e.pod))));
        const actual = new Map<string, string>();
        for (const set of ['istio-inpod-probes-v4', 'istio-inpod-probes-v6']) {
          for (const e of await entries(set)) actual.set(e.ip, e.comment ?? '');
        }
        expect(actual).toEqual(live);
        for (const ip of live.keys()) await probes.remove(ip, live.get(ip)!);
      }
    });
  });
}
