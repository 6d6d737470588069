// NodeNetwork with the nftables backend, read through nf_tables (probe sets as nft sets in the host's inet
// istio-ambient-nat, in-pod rules as its three inet tables), one suite for the fake world and the kernel world: the
// shared cases of node-backend-contract.ts and what only this backend shows.
import { expect, it } from 'vitest';

import { AgentError, INPOD_ROUTING, KubeletUidError, NodeNetwork, type Nftables } from '../../lib/index.js';
import { NFT_TABLES, nftHostRules, nftInpodRules } from '../../lib/agent/nft-rules.js';
import { fakeProcRoot } from './fake-proc.js';
import { nodeBackendContract, type NodeBackend, type Owners, type SetEntry } from './node-backend-contract.js';
import type { NftPodRef, NftWorld } from './nft-world.js';

const V4 = 'istio-inpod-probes-v4';
const V6 = 'istio-inpod-probes-v6';
const HOST = { family: 'inet', name: NFT_TABLES.nat } as const;

/** NftChecks read the world through nf_tables: the host's client, its probe set owners and a pod's inet tables. */
interface NftChecks {
  host: Nftables;
  owners: Owners;
  setEntry: SetEntry;
  podTables(pod: NftPodRef): Promise<string[]>;
}

const info = (pod: NftPodRef, extra = {}) => ({ uid: pod.uid, ips: [pod.ip], netns: pod.netns, ...extra });

const nftBackend: NodeBackend<NftWorld, NftChecks> = {
  title: 'NodeNetwork (nftables backend)',
  async checks(world) {
    const host = await world.hostNftables();
    return {
      host,
      owners: async (set = V4) => Object.fromEntries((await host.elements(HOST, set)).map((e) => [e.address, e.comment])),
      setEntry: async (ip, owner) => {
        if (owner === undefined) await host.deleteElement(HOST, V4, { address: ip });
        else await host.addElement(HOST, V4, { address: ip, comment: owner }, { replace: true });
      },
      podTables: async (pod) => (await (await world.podNftables(pod)).tables('inet')).map((t) => t.name),
    };
  },
  ownCases(current) {
    it('starts: probe sets and the host SNAT rule in one inet table, idempotently', async () => {
      const { host, node } = current();
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
      const { world, node, owners, podTables } = current();
      const net = await node();
      const pod = world.pod();
      const fake = world.podFake(pod);
      const gen = fake?.genId;
      await net.addPod(info(pod));
      if (fake) expect(fake.genId).toBe(gen! + 1);
      expect(await (await world.podNftables(pod)).verify(nftInpodRules())).toMatchObject({ inSync: true });
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
      const report = await net.verify({ pods: [info(pod)] });
      expect(report.pods).toEqual([
        expect.objectContaining({ uid: pod.uid, inSync: true, rules: [{ family: 'inet', result: { inSync: true, missing: [], unexpected: [], reordered: [] } }] }),
      ]);
      await net.removePod(info(pod));
      expect(await owners()).toEqual({});
      expect(await podTables(pod)).toEqual([]);
    });

    it('adds the policy rule and local route with the pod, and removes them with it', async () => {
      const { world, node } = current();
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
      const { world, node, owners } = current();
      const net = await node({ ipv6: true });
      const pod = world.pod();
      await net.addPod({ uid: pod.uid, ips: [`::ffff:${pod.ip}`, 'fd00::42'], netns: pod.netns });
      expect(await (await world.podNftables(pod)).verify(nftInpodRules({ ipv6: true }))).toMatchObject({ inSync: true });
      expect(await owners(V4)).toEqual({ [pod.ip]: pod.uid });
      expect(await owners(V6)).toEqual({ 'fd00::42': pod.uid });
    });

    it('leaves in-pod rules alone for a pod being deleted', async () => {
      const { world, node, owners, podTables } = current();
      const net = await node();
      const pod = world.pod();
      await net.addPod(info(pod));
      await net.removePod(info(pod), { deleted: true });
      expect(await owners()).toEqual({});
      expect(await podTables(pod)).toEqual([NFT_TABLES.nat, NFT_TABLES.mangle, NFT_TABLES.raw]);
    });

    it("re-applies lost in-pod rules from a snapshot, and an ingress-only pod's own variant", async () => {
      const { world, node } = current();
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
      const { world, host, node, owners } = current();
      const net = await node();
      const pod = world.pod();
      await net.addPod(info(pod));
      expect((await net.verify()).inSync).toBe(true);
      // A firewall reload flushed the SNAT chain: the probes would fail for good without a repair.
      await host.run(host.transaction().flushChain({ family: 'inet', table: NFT_TABLES.nat, name: 'postrouting' }));
      const drift = await net.verify();
      expect(drift.inSync).toBe(false);
      expect(drift.hostRules).toEqual([{ family: 'inet', result: expect.objectContaining({ inSync: false, unexpected: [] }) }]);
      expect(drift.hostRules[0]!.result.missing).toEqual([expect.stringMatching(/^inet istio-ambient-nat chain postrouting rule /)]);
      // The deprecated field still answers, with the nftables result itself.
      expect(drift.nftHostRules!.missing).toHaveLength(1);
      expect(drift.nftHostRules!.inSync).toBe(false);
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
      const { world, host, node, owners } = current();
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
      const { world, host, node } = current();
      const probe = { probeSourceV4: '169.254.10.1', probeSourceV6: 'fd00:7127::1' };
      const net = await node({ ipv6: true, kubeletUid: 4242, ...probe });
      const pod = world.pod();
      await net.addPod(info(pod));
      expect(await host.verify(nftHostRules({ kubeletUid: 4242, ipv6: true, ...probe }))).toMatchObject({ inSync: true });
      expect(await (await world.podNftables(pod)).verify(nftInpodRules({ ipv6: true, ...probe }))).toMatchObject({ inSync: true });
      expect((await net.verify({ pods: [info(pod)] })).inSync).toBe(true);
    });

    it("detects the kubelet's uid at start() under hostProcRoot, and puts it into the host rule", async () => {
      const { host, node } = current();
      using proc = fakeProcRoot([
        { pid: 1, comm: 'systemd', cmdline: ['/sbin/init'], uid: 0 },
        { pid: 812, comm: 'k3s', cmdline: ['/usr/local/bin/k3s server'], uid: 4343 },
      ]);
      const net = await node({ kubeletUid: undefined, hostProcRoot: proc.path });
      expect(await host.verify(nftHostRules({ kubeletUid: 4343 }))).toMatchObject({ inSync: true });
      expect((await net.verify()).inSync).toBe(true);
    });

    it("fails at the kubelet-uid step, changing nothing, when the kubelet's uid cannot be told; a retry after the kubelet starts succeeds", async () => {
      const { world, host } = current();
      using proc = fakeProcRoot([{ pid: 1, comm: 'systemd', cmdline: ['/sbin/init'], uid: 0 }]);
      const net = new NodeNetwork({ ...(await world.options()), kubeletUid: undefined, hostProcRoot: proc.path });
      const err = await net.start().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentError);
      // No kubelet yet (it may be restarting): worth a retry.
      expect(err).toMatchObject({ step: 'kubelet-uid', code: 'ERR_AGENT_KUBELET_UID', retryable: true });
      expect((err as AgentError).cause).toBeInstanceOf(KubeletUidError);
      expect((err as AgentError).cause).toMatchObject({ code: 'ERR_KUBELET_UID', option: 'kubeletUid', uids: [], procRoot: proc.path });
      expect((await host.tables('inet')).map((t) => t.name)).toEqual([]);
      expect(net.probeSet).toBeUndefined();

      proc.add({ pid: 900, comm: 'kubelet', cmdline: ['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml'], uid: 0 });
      await net.start();
      expect(await host.verify(nftHostRules({ kubeletUid: 0 }))).toMatchObject({ inSync: true });
      await net.stop();

      // Kubelets of two uids, or a procfs that is not there: retrying the same call cannot help.
      proc.add({ pid: 901, comm: 'kubelite', cmdline: ['/snap/microk8s/1/kubelite', '--kubelet-args-file=/x'], uid: 1000 });
      const ambiguous = await net.start().catch((e: unknown) => e);
      expect(ambiguous).toMatchObject({ step: 'kubelet-uid', retryable: false, cause: expect.objectContaining({ uids: [0, 1000] }) });
      const missing = new NodeNetwork({ ...(await world.options()), kubeletUid: undefined, hostProcRoot: `${proc.path}/none` });
      await expect(missing.start()).rejects.toMatchObject({ step: 'kubelet-uid', retryable: false, cause: expect.objectContaining({ cause: expect.objectContaining({ code: 'ENOENT' }) }) });
      expect((await host.tables('inet')).map((t) => t.name)).toEqual([]);
    });

    it("applies a pod's own virtual interfaces, and verify and repair hold the pod to them", async () => {
      const { world, node } = current();
      const net = await node({ ipv6: true });
      const pod = world.pod();
      const virtualInterfaces = ['istioin', 'tun0'];
      const withVifs = info(pod, { virtualInterfaces });
      await net.addPod(withVifs);
      const nft = await world.podNftables(pod);
      expect(await nft.verify(nftInpodRules({ ipv6: true, virtualInterfaces }))).toMatchObject({ inSync: true });
      expect((await net.verify({ pods: [withVifs] })).inSync).toBe(true);
      // Without them the pod's rules are drift: repair takes them out, and a snapshot's reapply puts them back.
      expect((await net.verify({ pods: [info(pod)] })).inSync).toBe(false);
      expect(await net.repair({ pods: [info(pod)] })).toEqual({ changed: true });
      expect(await nft.verify(nftInpodRules({ ipv6: true }))).toMatchObject({ inSync: true });
      expect(await net.syncSnapshot([withVifs], { reapplyRules: true })).toMatchObject({ rulesReapplied: 1 });
      expect(await nft.verify(nftInpodRules({ ipv6: true, virtualInterfaces }))).toMatchObject({ inSync: true });
      await net.removePod(withVifs);
      expect(await nft.tables('inet')).toEqual([]);
    });

    it('refuses a bad backend, kubelet uid or host procfs when constructed, and bad pods before doing anything', async () => {
      const { node, owners } = current();
      expect(() => new NodeNetwork({ backend: 'pf' as 'nftables' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', argument: 'options.backend' }));
      expect(() => new NodeNetwork({ backend: 'nftables', kubeletUid: -5 })).toThrow(
        expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', argument: 'options.kubeletUid' }),
      );
      for (const [hostProcRoot, code] of [['host/proc', 'ERR_INVALID_ARG_VALUE'], ['', 'ERR_INVALID_ARG_VALUE'], [7, 'ERR_INVALID_ARG_TYPE']] as const) {
        expect(() => new NodeNetwork({ backend: 'nftables', hostProcRoot: hostProcRoot as string })).toThrow(
          expect.objectContaining({ code, argument: 'options.hostProcRoot' }),
        );
      }
      const net = await node();
      await expect(net.addPod({ uid: '', ips: [] })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      await expect(net.addPod({ uid: 'x', ips: ['10.1'] })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      expect(await owners()).toEqual({});
    });
  },
};

export function nftNodeNetworkContract(name: string, makeWorld: () => NftWorld): void {
  nodeBackendContract(name, makeWorld, nftBackend);
}
