// NodeNetwork with the nftables backend: the cases of node-network-contract.ts read through nf_tables (probe sets as
// nft sets in the host's inet istio-ambient-nat, in-pod rules as its three inet tables), one suite for the fake
// world and the kernel world.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { AgentError, INPOD_ROUTING, NodeNetwork, ProbeOwnerConflictError, type Nftables, type ProbeConflict } from '../../lib/index.js';
import { NFT_TABLES, nftHostRules, nftInpodRules } from '../../lib/agent/nft-rules.js';
import { startedNft, type NftPodRef, type NftWorld } from './nft-world.js';

const V4 = 'istio-inpod-probes-v4';
const V6 = 'istio-inpod-probes-v6';
const HOST = { family: 'inet', name: NFT_TABLES.nat } as const;

export function nftNodeNetworkContract(name: string, makeWorld: () => NftWorld): void {
  describe(`NodeNetwork (nftables backend): ${name}`, () => {
    let world: NftWorld;
    let host: Nftables;
    const nodes: NodeNetwork[] = [];
    const node = async (extra = {}) => {
      const n = await startedNft(world, extra);
      nodes.push(n);
      return n;
    };
    const owners = async (set = V4) => Object.fromEntries((await host.elements(HOST, set)).map((e) => [e.address, e.comment]));
    const podTables = async (pod: NftPodRef) => (await (await world.podNftables(pod)).tables('inet')).map((t) => t.name);
    const info = (pod: NftPodRef, extra = {}) => ({ uid: pod.uid, ips: [pod.ip], netns: pod.netns, ...extra });

    beforeEach(async () => {
      world = makeWorld();
      host = await world.hostNftables();
    });
    afterEach(async () => {
      for (const n of nodes.splice(0)) await n.stop({ keep: true }).catch(() => undefined);
      await world.cleanup();
    });

    it('starts: probe sets and the host SNAT rule in one inet table, idempotently', async () => {
      const net = await node({ ipv6: true });
      expect(net.backend).toBe('nftables');
      const sets = (await host.sets(HOST)).filter((s) => s.table === HOST.name);
      expect(sets.map((s) => [s.name, s.type])).toEqual([[V4, 'ipv4_addr'], [V6, 'ipv6_addr']]);
      const wanted = nftHostRules({ kubeletUid: 1000, ipv6: true });
      expect(await host.verify(wanted)).toMatchObject({ inSync: true });
      // A restarted agent finds everything in place and duplicates nothing.
      await node({ ipv6: true });
      expect(await host.verify(wanted)).toEqual({ inSync: true, missing: [], unexpected: [], reordered: [] });
      expect((await net.verify()).inSync).toBe(true);
    });

    it('adds a pod: its in-pod tables in one batch, then its probe entries; removes it in reverse', async () => {
      const net = await node();
      const pod = world.pod();
      const fake = world.podFake(pod);
      const gen = fake?.genId;
      await net.addPod(info(pod));
      if (fake) expect(fake.genId).toBe(gen! + 1);
      expect(await (await world.podNftables(pod)).verify(nftInpodRules())).toMatchObject({ inSync: true });
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
      const report = await net.verify({ pods: [info(pod)] });
      expect(report.pods).toEqual([expect.objectContaining({ uid: pod.uid, inSync: true, rules: [], nftRules: expect.objectContaining({ inSync: true }) })]);
      await net.removePod(info(pod));
      expect(await owners()).toEqual({});
      expect(await podTables(pod)).toEqual([]);
    });

    it('adds the policy rule and local route with the pod, and removes them with it', async () => {
      const net = await node();
      const pod = world.pod();
      await net.addPod(info(pod));
      const rt = await world.podRtnetlink(pod);
      expect((await rt.rules()).filter((r) => r.priority === INPOD_ROUTING.priority)).toEqual([
        expect.objectContaining({ family: 4, mark: 0x111, mask: 0xfff, table: 100, action: 'toTable' }),
      ]);
      expect(await rt.routes({ table: INPOD_ROUTING.table })).toEqual([expect.objectContaining({ family: 4, type: 'local' })]);
      await net.addPod(info(pod));
      expect((await net.verify({ pods: [info(pod)] })).pods[0]).toMatchObject({ inSync: true, routes: [{ family: 4, rule: true, route: true }] });
      await net.removePod(info(pod));
      expect(await rt.routes({ table: INPOD_ROUTING.table })).toEqual([]);
    });

    it('puts IPv6 into the same inet tables and the v6 set, and unmaps IPv4-mapped addresses', async () => {
      const net = await node({ ipv6: true });
      const pod = world.pod();
      await net.addPod({ uid: pod.uid, ips: [`::ffff:${pod.ip}`, 'fd00::42'], netns: pod.netns });
      expect(await (await world.podNftables(pod)).verify(nftInpodRules({ ipv6: true }))).toMatchObject({ inSync: true });
      expect(await owners(V4)).toEqual({ [pod.ip]: pod.uid });
      expect(await owners(V6)).toEqual({ 'fd00::42': pod.uid });
    });

    it('leaves in-pod rules alone for a pod being deleted', async () => {
      const net = await node();
      const pod = world.pod();
      await net.addPod(info(pod));
      await net.removePod(info(pod), { deleted: true });
      expect(await owners()).toEqual({});
      expect(await podTables(pod)).toEqual([NFT_TABLES.nat, NFT_TABLES.mangle, NFT_TABLES.raw]);
    });

    it('fails at the netns step, adding nothing, when the pod namespace is gone', async () => {
      const net = await node();
      const pod = world.pod();
      world.dropNetns(pod);
      const err = await net.addPod(info(pod)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentError);
      expect(err).toMatchObject({ step: 'netns', code: 'ERR_AGENT_NETNS', retryable: false, pod: pod.uid });
      expect(await owners()).toEqual({});
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
      expect(await owners()).toEqual({ [a.ip]: a.uid });
    });

    it('syncs a snapshot: upserts, prunes unclaimed IPs, and never prunes while a pod has no IP', async () => {
      const net = await node();
      const [a, b, c] = [world.pod(), world.pod(), world.pod()];
      await net.addPod(info(a));
      await net.addPod(info(c));
      const waiting = await net.syncSnapshot([{ uid: a.uid, ips: [a.ip] }, { uid: b.uid, ips: [b.ip] }, { uid: 'new', ips: [] }]);
      expect(waiting).toMatchObject({ added: 1, unchanged: 1, takenOver: 0, pruned: [], pruneSkipped: true });
      const report = await net.syncSnapshot([{ uid: a.uid, ips: [a.ip] }, { uid: b.uid, ips: [b.ip] }]);
      expect(report).toMatchObject({ added: 0, unchanged: 2, pruneSkipped: false, pruned: [{ ip: c.ip, owner: c.uid }] });
      expect(await owners()).toEqual({ [a.ip]: a.uid, [b.ip]: b.uid });
    });

    it("re-applies lost in-pod rules from a snapshot, and an ingress-only pod's own variant", async () => {
      const net = await node();
      const pod = world.pod();
      const ingress = info(pod, { ingressOnly: true });
      await net.addPod(ingress);
      const nft = await world.podNftables(pod);
      expect(await nft.verify(nftInpodRules({ ingressOnly: true }))).toMatchObject({ inSync: true });
      // Someone put the full rules back, then someone deleted everything.
      await nft.apply(nftInpodRules());
      expect(await net.syncSnapshot([ingress], { reapplyRules: true })).toMatchObject({ rulesReapplied: 1 });
      expect(await nft.verify(nftInpodRules({ ingressOnly: true }))).toMatchObject({ inSync: true });
      await nft.remove(nftInpodRules());
      expect((await net.verify({ pods: [ingress] })).inSync).toBe(false);
      expect(await net.repair({ pods: [ingress] })).toEqual({ changed: true });
      expect(await nft.verify(nftInpodRules({ ingressOnly: true }))).toMatchObject({ inSync: true });
    });

    it('verifies and repairs drift of the host rule and sets, keeping nothing stale', async () => {
      const net = await node();
      const pod = world.pod();
      await net.addPod(info(pod));
      expect((await net.verify()).inSync).toBe(true);
      // A firewall reload flushed the SNAT chain: the probes would fail for good without a repair.
      await host.run(host.transaction().flushChain({ family: 'inet', table: NFT_TABLES.nat, name: 'postrouting' }));
      const drift = await net.verify();
      expect(drift.inSync).toBe(false);
      expect(drift.nftHostRules!.missing).toHaveLength(1);
      expect(await net.repair()).toEqual({ changed: true });
      expect((await net.verify()).inSync).toBe(true);
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
      // The whole table gone: sets come back (empty, as after a reboot) with the rule.
      await host.run(host.transaction().deleteTable(HOST));
      const gone = await net.verify();
      expect(gone.sets).toEqual([{ name: V4, present: false, ok: false }]);
      expect(await net.repair()).toEqual({ changed: true });
      expect((await net.verify()).inSync).toBe(true);
      expect(await net.repair()).toEqual({ changed: false });
    });

    it('stops: the host table with its sets deleted; keep leaves it for the next agent', async () => {
      const kept = await node();
      const pod = world.pod();
      await kept.addPod(info(pod));
      await kept.stop({ keep: true });
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
      const net = await node();
      expect(net.probeSet?.owner(pod.ip)).toBe(pod.uid);
      await net.stop();
      expect((await host.tables('inet')).map((t) => t.name)).toEqual([]);
    });

    it('puts the kubelet uid and the configured probe sources into the host and in-pod rules', async () => {
      const probe = { probeSourceV4: '169.254.10.1', probeSourceV6: 'fd00:7127::1' };
      const net = await node({ ipv6: true, kubeletUid: 4242, ...probe });
      const pod = world.pod();
      await net.addPod(info(pod));
      expect(await host.verify(nftHostRules({ kubeletUid: 4242, ipv6: true, ...probe }))).toMatchObject({ inSync: true });
      expect(await (await world.podNftables(pod)).verify(nftInpodRules({ ipv6: true, ...probe }))).toMatchObject({ inSync: true });
      expect((await net.verify({ pods: [info(pod)] })).inSync).toBe(true);
    });

    it('refuses a bad backend or kubelet uid when constructed, and bad pods before doing anything', async () => {
      expect(() => new NodeNetwork({ backend: 'pf' as 'nftables' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', argument: 'options.backend' }));
      expect(() => new NodeNetwork({ backend: 'nftables', kubeletUid: -5 })).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', argument: 'options.kubeletUid' }),
      );
      const net = await node();
      await expect(net.addPod({ uid: '', ips: [] })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      await expect(net.addPod({ uid: 'x', ips: ['10.1'] })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      expect(await owners()).toEqual({});
    });
  });
}
