// The ownership cases every probe set must pass, whatever kernel set holds its entries: ProbeSet on ipset
// (probe-set-contract.ts) and NftProbeSet on nft sets (nft-probe-set-contract.ts) each bring a ProbeKind and the cases
// only their kind shows.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { ProbeOwnerConflictError } from '../../lib/agent/errors.js';
import type { NftProbeSet } from '../../lib/agent/nft-probe-set.js';
import { normalizeIp, type ConflictPolicy, type ProbeConflict, type ProbeOwnerMismatch, type ProbeSet } from '../../lib/agent/probe-set.js';

/** ProbeWorld opens a client on a fresh world (kernel namespace or fake) and cleans it up. */
export interface ProbeWorld<C> {
  open(): Promise<C>;
  cleanup(): void;
}

/** ProbeSetOptionsUnderTest are the options the cases set, the same for both classes. */
export interface ProbeSetOptionsUnderTest {
  ipv6?: boolean;
  onConflict?: ConflictPolicy;
  onConflictEvent?: (conflict: ProbeConflict) => void;
  onOwnerMismatch?: (mismatch: ProbeOwnerMismatch) => void;
}

/** ProbeKind is one probe set class over its client: how to build one, and how to read a set back behind its back. */
export interface ProbeKind<C extends { close(): void }> {
  /** The class name the suite is titled with. */
  title: string;
  make(client: C, options: ProbeSetOptionsUnderTest): ProbeSet | NftProbeSet;
  /** The entries of a set as the client lists them, each with its ip and comment. */
  entries(client: C, set: string): Promise<readonly { ip: string; comment?: string | undefined }[]>;
}

/** ProbeCase is what a kind's own cases get: the client, the probe set under test and what it reported. */
export interface ProbeCase<C> {
  client: C;
  probes: ProbeSet | NftProbeSet;
  conflicts: ProbeConflict[];
  mismatches: ProbeOwnerMismatch[];
}

/**
 * probeOwnershipContract runs the shared cases of kind against backend, under `<title>: <name>`, with the kind's own
 * cases (given a getter of the current test's ProbeCase) first.
 */
export function probeOwnershipContract<C extends { close(): void }>(
  name: string,
  kind: ProbeKind<C>,
  backend: () => ProbeWorld<C>,
  ownCases: (current: () => ProbeCase<C>) => void,
): void {
  describe(`${kind.title}: ${name}`, () => {
    let world: ProbeWorld<C>;
    let client: C;
    let conflicts: ProbeConflict[];
    let mismatches: ProbeOwnerMismatch[];
    let probes: ProbeSet | NftProbeSet;
    const entries = (set: string) => kind.entries(client, set);

    beforeEach(async () => {
      world = backend();
      client = await world.open();
      conflicts = [];
      mismatches = [];
      probes = kind.make(client, { onConflictEvent: (c) => conflicts.push(c), onOwnerMismatch: (m) => mismatches.push(m) });
      await probes.ensure();
    });
    afterEach(() => {
      client?.close();
      world?.cleanup();
    });

    ownCases(() => ({ client, probes, conflicts, mismatches }));

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
      const strict = kind.make(client, { onConflict: 'error' });
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
      const restarted = kind.make(client, {});
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

    it('prunes from what the sets hold: an entry it never saw goes, a claimed IP in any spelling stays', async () => {
      await probes.add('fd00::7', 'uid-a');
      // Written by an earlier add whose answer was lost: in the set, not in the view.
      const behind = kind.make(client, {});
      await behind.add('10.0.0.9', 'uid-lost');
      expect(probes.owner('10.0.0.9')).toBeUndefined();
      const removed = await probes.prune(new Set([normalizeIp('FD00:0:0::7').ip]));
      expect(removed).toEqual([{ ip: '10.0.0.9', owner: 'uid-lost' }]);
      expect(await entries('istio-inpod-probes-v4')).toEqual([]);
      expect(await entries('istio-inpod-probes-v6')).toEqual([{ ip: 'fd00::7', comment: 'uid-a' }]);
      expect(await probes.held()).toEqual([{ ip: 'fd00::7', owner: 'uid-a' }]);
    });

    it('refuses bad addresses and owners', async () => {
      await expect(probes.add('10.1', 'uid')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      await expect(async () => probes.add('10.0.0.1', '')).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      const v4only = kind.make(client, { ipv6: false });
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
