// The NodeNetwork cases whose outcome does not depend on the backend (what a pod's probe entries become on a lost
// namespace, a reused IP, a snapshot): one suite per backend and world, each backend bringing how it reads its probe
// sets and the cases only it shows (node-network-contract.ts for iptables and ipset, nft-node-network-contract.ts for
// nftables).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { AgentError, ProbeOwnerConflictError, type NodeNetwork, type NodeNetworkOptions, type ProbeConflict } from '../../lib/index.js';
import { started, type PodRef } from './world.js';

/** NodeWorld is what the shared cases need of a world: node options, pods, and a teardown. */
export interface NodeWorld {
  options(): Promise<NodeNetworkOptions>;
  pod(ip?: string): PodRef;
  dropNetns(pod: PodRef): void;
  cleanup(): Promise<void>;
}

/** Owners maps each IP of a host probe set (default the IPv4 one) to its owner, as the backend's kernel lists it. */
export type Owners = (set?: string) => Promise<Record<string, string | undefined>>;

/**
 * SetEntry writes the host's IPv4 probe set behind the agent's back: ip owned by owner (replacing any entry), or no
 * entry for ip (undefined), as an add whose answer was lost or someone else's write leaves it.
 */
export type SetEntry = (ip: string, owner: string | undefined) => Promise<void>;

/** NodeCase is what a test gets: its world, a starter of nodes stopped after it, and the host's probe set owners. */
export interface NodeCase<W extends NodeWorld> {
  world: W;
  node(extra?: Partial<NodeNetworkOptions>): Promise<NodeNetwork>;
  owners: Owners;
}

/** NodeBackend is one backend of NodeNetwork as the suite checks it. */
export interface NodeBackend<W extends NodeWorld, S extends { owners: Owners; setEntry: SetEntry }> {
  /** The suite's title before `: <name>`. */
  title: string;
  /** checks opens what the backend's assertions read the host through, once per test, after its world is made. */
  checks(world: W): Promise<S>;
  /** ownCases registers the backend's own cases, given a getter of the current test's case. */
  ownCases(current: () => NodeCase<W> & S): void;
}

/** nodeBackendContract runs backend's own cases and then the shared ones in worlds from makeWorld. */
export function nodeBackendContract<W extends NodeWorld, S extends { owners: Owners; setEntry: SetEntry }>(
  name: string,
  makeWorld: () => W,
  backend: NodeBackend<W, S>,
): void {
  describe(`${backend.title}: ${name}`, () => {
    let world: W;
    let checks: S;
    const nodes: NodeNetwork[] = [];
    const node = async (extra: Partial<NodeNetworkOptions> = {}) => {
      const n = await started(world, extra);
      nodes.push(n);
      return n;
    };
    const owners: Owners = (set) => checks.owners(set);
    const info = (pod: PodRef) => ({ uid: pod.uid, ips: [pod.ip], netns: pod.netns });

    beforeEach(async () => {
      world = makeWorld();
      checks = await backend.checks(world);
    });
    afterEach(async () => {
      for (const n of nodes.splice(0)) await n.stop({ keep: true }).catch(() => undefined);
      await world.cleanup();
    });

    backend.ownCases(() => ({ ...checks, world, node, owners }));

    it('fails at the netns step, adding nothing, when the pod namespace is gone', async () => {
      const net = await node();
      const pod = world.pod();
      world.dropNetns(pod);
      const err = await net.addPod(info(pod)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentError);
      expect(err).toMatchObject({ step: 'netns', code: 'ERR_AGENT_NETNS', retryable: false, pod: pod.uid });
      expect((err as AgentError).cause).toMatchObject({ code: 'ENOENT' });
      expect(await owners()).toEqual({});
    });

    it('refuses a pod whose virtualInterfaces are not interface names, before doing anything', async () => {
      const net = await node();
      const pod = world.pod();
      const bad: [unknown, string, string][] = [
        ['eth0', 'ERR_INVALID_ARG_TYPE', 'pod.virtualInterfaces'],
        [[42], 'ERR_INVALID_ARG_TYPE', 'pod.virtualInterfaces[0]'],
        [['eth0', ''], 'ERR_INVALID_ARG_VALUE', 'pod.virtualInterfaces[1]'],
        [['a-name-too-long-x'], 'ERR_INVALID_ARG_VALUE', 'pod.virtualInterfaces[0]'],
        [['eth 0'], 'ERR_INVALID_ARG_VALUE', 'pod.virtualInterfaces[0]'],
        [['a/b'], 'ERR_INVALID_ARG_VALUE', 'pod.virtualInterfaces[0]'],
        [['eth0:1'], 'ERR_INVALID_ARG_VALUE', 'pod.virtualInterfaces[0]'],
        [['..'], 'ERR_INVALID_ARG_VALUE', 'pod.virtualInterfaces[0]'],
      ];
      for (const [virtualInterfaces, code, argument] of bad) {
        const p = { ...info(pod), virtualInterfaces: virtualInterfaces as string[] };
        await expect(net.addPod(p)).rejects.toMatchObject({ code, argument });
      }
      await expect(net.syncSnapshot([{ ...info(pod), virtualInterfaces: ['a/b'] }])).rejects.toMatchObject({
        code: 'ERR_INVALID_ARG_VALUE',
        argument: 'pods[0].virtualInterfaces[0]',
      });
      expect(await owners()).toEqual({});
    });

    it('applies calls for one pod in call order: a remove called after an add wins, and no entry outlives its rules', async () => {
      const net = await node();
      const pod = world.pod();
      for (let round = 0; round < 5; round++) {
        const results = await Promise.allSettled([net.addPod(info(pod)), net.removePod(info(pod))]);
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
        expect(await owners()).toEqual({});
        const [after] = (await net.verify({ pods: [info(pod)] })).pods;
        expect(after).toMatchObject({ inSync: false, netns: 'ok' });
        expect(after!.routes.every((r) => !r.rule && !r.route)).toBe(true);
      }
      // The other order: the add, called last, wins.
      await Promise.all([net.removePod(info(pod)), net.addPod(info(pod))]);
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
      expect((await net.verify({ pods: [info(pod)] })).pods[0]).toMatchObject({ inSync: true, netns: 'ok' });
    });

    it('refuses a pod with a hole in its ips or virtualInterfaces by index, before doing anything', async () => {
      const net = await node();
      const pod = world.pod();
      // eslint-disable-next-line no-sparse-arrays
      const holeFirst = [, pod.ip] as string[];
      await expect(net.addPod({ ...info(pod), ips: holeFirst })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument: 'pod.ips[0]' });
      // eslint-disable-next-line no-sparse-arrays
      const vifHole = ['eth0', , 'eth1'] as string[];
      await expect(net.addPod({ ...info(pod), virtualInterfaces: vifHole })).rejects.toMatchObject({ argument: 'pod.virtualInterfaces[1]' });
      // eslint-disable-next-line no-sparse-arrays
      await expect(net.syncSnapshot([info(pod), , info(pod)] as never)).rejects.toMatchObject({ argument: 'pods[1]' });
      await expect(net.verify({ pods: new Array(1) as never })).rejects.toMatchObject({ argument: 'options.pods[0]' });
      expect(await owners()).toEqual({});
      const [untouched] = (await net.verify({ pods: [info(pod)] })).pods;
      expect(untouched!.inSync).toBe(false);
      expect(untouched!.routes.every((r) => !r.rule && !r.route)).toBe(true);
    });

    it('enrolls a pod again when its uid comes with another namespace, and verify tells a replaced or gone namespace', async () => {
      const net = await node();
      const first = world.pod();
      const second = world.pod();
      const uid = first.uid;
      await net.addPod({ uid, ips: [first.ip], netns: first.netns });
      // The runtime recreated the sandbox: same uid, a new namespace (and here a new IP).
      const moved = { uid, ips: [second.ip], netns: second.netns };
      expect((await net.verify({ pods: [moved] })).pods[0]).toMatchObject({ uid, inSync: false, netns: 'replaced' });
      await net.addPod(moved);
      expect(await owners()).toEqual({ [second.ip]: uid });
      expect((await net.verify({ pods: [moved] })).pods[0]).toMatchObject({ uid, inSync: true, netns: 'ok' });
      world.dropNetns(second);
      const gone = await net.verify({ pods: [moved] });
      expect(gone.inSync).toBe(false);
      expect(gone.pods[0]).toMatchObject({ uid, inSync: false, netns: 'gone', rules: [], routes: [] });
      // repair has nothing to do in a namespace that is gone, and says so without failing.
      await expect(net.repair({ pods: [moved] })).resolves.toEqual({ changed: true });
    });

    it('reports a reused IP as a conflict, takes it over, and never removes the new owner', async () => {
      const net = await node();
      const conflicts: ProbeConflict[] = [];
      net.on('conflict', (c) => conflicts.push(c));
      const a = world.pod();
      const b = world.pod(a.ip);
      await net.addPod(info(a));
      await net.addPod(info(b));
      expect(conflicts).toEqual([{ ip: a.ip, previousOwner: a.uid, newOwner: b.uid }]);
      await net.removePod(info(a), { deleted: true });
      expect(await owners()).toEqual({ [a.ip]: b.uid });
    });

    it("with onConflict 'error' fails at the probe-set step, naming both owners", async () => {
      const net = await node({ onConflict: 'error' });
      const a = world.pod();
      const b = world.pod(a.ip);
      await net.addPod(info(a));
      const err = await net.addPod(info(b)).catch((e: unknown) => e);
      expect(err).toMatchObject({ step: 'probe-set', retryable: false, pod: b.uid });
      expect((err as AgentError).cause).toBeInstanceOf(ProbeOwnerConflictError);
      expect((err as AgentError).cause).toMatchObject({ previousOwner: a.uid, newOwner: b.uid });
      expect(await owners()).toEqual({ [a.ip]: a.uid });
    });

    it('prunes an entry the agent never learned of (a lost add answer), so a new pod takes its IP with no conflict', async () => {
      const strict = await node({ onConflict: 'error' });
      const lenient = await node();
      const conflicts: ProbeConflict[] = [];
      lenient.on('conflict', (c) => conflicts.push(c));
      const [gone, next, other] = [world.pod(), world.pod(), world.pod()];
      // The kernel holds an entry neither agent's memory has (as after an add whose ACK was lost).
      await checks.setEntry(gone.ip, gone.uid);
      expect(strict.probeSet!.owner(gone.ip)).toBeUndefined();
      const report = await strict.syncSnapshot([]);
      expect(report).toMatchObject({ pruned: [{ ip: gone.ip, owner: gone.uid }], failed: [] });
      expect(await owners()).toEqual({});
      await strict.addPod({ uid: next.uid, ips: [gone.ip], netns: next.netns });
      expect(await owners()).toEqual({ [gone.ip]: next.uid });
      // The same for the takeover policy: no conflict is reported with a pod that is gone.
      await checks.setEntry(other.ip, gone.uid);
      expect((await lenient.syncSnapshot([{ uid: next.uid, ips: [gone.ip] }])).pruned).toEqual([{ ip: other.ip, owner: gone.uid }]);
      await lenient.addPod({ uid: other.uid, ips: [other.ip], netns: other.netns });
      expect(conflicts).toEqual([]);
      expect(await owners()).toEqual({ [gone.ip]: next.uid, [other.ip]: other.uid });
    });

    it("does every pod of a snapshot it can: a pod whose namespace is gone is reported in 'failed' and gets no entry", async () => {
      const net = await node();
      const pods = [world.pod(), world.pod(), world.pod(), world.pod()];
      const lost = pods[1]!;
      world.dropNetns(lost);
      const report = await net.syncSnapshot(pods.map(info), { reapplyRules: true });
      expect(report).toMatchObject({ added: 3, rulesReapplied: 3, pruned: [] });
      expect(report.failed).toEqual([{ uid: lost.uid, step: 'netns', error: expect.any(AgentError) }]);
      expect(report.failed[0]!.error).toMatchObject({ code: 'ERR_AGENT_NETNS', pod: lost.uid, retryable: false });
      const others = pods.filter((p) => p !== lost);
      expect(await owners()).toEqual(Object.fromEntries(others.map((p) => [p.ip, p.uid])));
      const verified = await net.verify({ pods: others.map(info) });
      expect(verified.inSync).toBe(true);
    });

    it("settles every add of a snapshot before reporting, and reports a refused pod in 'failed'", async () => {
      const net = await node({ onConflict: 'error' });
      const pods = Array.from({ length: 8 }, () => world.pod());
      const held = pods[0]!;
      await checks.setEntry(held.ip, 'uid-elsewhere');
      const report = await net.syncSnapshot(pods.map((p) => ({ uid: p.uid, ips: [p.ip] })));
      // Read at once: nothing may still be writing when the report arrives.
      const at = await owners();
      expect(report.failed).toEqual([{ uid: held.uid, step: 'probe-set', error: expect.any(AgentError) }]);
      expect(report.failed[0]!.error.cause).toBeInstanceOf(ProbeOwnerConflictError);
      expect(report).toMatchObject({ added: 7, pruned: [] });
      expect(at).toEqual(Object.fromEntries(pods.map((p) => [p.ip, p === held ? 'uid-elsewhere' : p.uid])));
    });

    it('verify reads the probe entries of the pods it is given (missing, foreign), and repair puts them back', async () => {
      const net = await node();
      const [a, b] = [world.pod(), world.pod()];
      await net.addPod(info(a));
      await net.addPod(info(b));
      expect((await net.verify({ pods: [info(a), info(b)] })).inSync).toBe(true);
      // Lost behind the agent's back: a's entry gone, b's owned by someone else.
      await checks.setEntry(a.ip, undefined);
      await checks.setEntry(b.ip, 'uid-elsewhere');
      const drift = await net.verify({ pods: [info(a), info(b)] });
      expect(drift.inSync).toBe(false);
      expect(drift.pods.map((p) => [p.inSync, p.netns, p.probeEntries])).toEqual([
        [false, 'ok', { missing: [a.ip], foreign: [] }],
        [false, 'ok', { missing: [], foreign: [{ ip: b.ip, owner: 'uid-elsewhere' }] }],
      ]);
      expect(await owners()).toEqual({ [b.ip]: 'uid-elsewhere' });
      expect(await net.repair({ pods: [info(a), info(b)] })).toEqual({ changed: true });
      expect(await owners()).toEqual({ [a.ip]: a.uid, [b.ip]: b.uid });
      const after = await net.verify({ pods: [info(a), info(b)] });
      expect(after.inSync).toBe(true);
      expect(after.pods.map((p) => p.probeEntries)).toEqual([
        { missing: [], foreign: [] },
        { missing: [], foreign: [] },
      ]);
    });

    it('syncs a snapshot: upserts, prunes unclaimed IPs, and never prunes while a pod has no IP', async () => {
      const net = await node();
      const [a, b, c] = [world.pod(), world.pod(), world.pod()];
      await net.addPod(info(a));
      await net.addPod(info(c));
      const waiting = await net.syncSnapshot([{ uid: a.uid, ips: [a.ip] }, { uid: b.uid, ips: [b.ip] }, { uid: 'new', ips: [] }]);
      expect(waiting).toMatchObject({ added: 1, unchanged: 1, takenOver: 0, pruned: [], pruneSkipped: true });
      expect(await owners()).toEqual({ [a.ip]: a.uid, [b.ip]: b.uid, [c.ip]: c.uid });
      const report = await net.syncSnapshot([{ uid: a.uid, ips: [a.ip] }, { uid: b.uid, ips: [b.ip] }]);
      expect(report).toMatchObject({ added: 0, unchanged: 2, pruneSkipped: false, pruned: [{ ip: c.ip, owner: c.uid }] });
      expect(await owners()).toEqual({ [a.ip]: a.uid, [b.ip]: b.uid });
    });
  });
}
