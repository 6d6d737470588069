// NodeNetwork's behaviour with the iptables backend (probe sets on ipset, rules through iptables-restore), one suite
// for the fake world and the kernel world: the shared cases of node-backend-contract.ts and what only this backend
// shows.
import { expect, it } from 'vitest';

import { INPOD, INPOD_ROUTING, NodeNetwork, hostProbeRules, inpodRules } from '../../lib/index.js';
import { nodeBackendContract, type NodeBackend, type Owners, type SetEntry } from './node-backend-contract.js';
import type { World } from './world.js';

const V4 = 'istio-inpod-probes-v4';
const V6 = 'istio-inpod-probes-v6';

const iptablesBackend: NodeBackend<World, { owners: Owners; setEntry: SetEntry }> = {
  title: 'NodeNetwork',
  async checks(world) {
    const owners: Owners = async (set = V4) =>
      Object.fromEntries((await (await world.hostIpset()).list(set)).entries.map((e) => [e.ip, e.comment]));
    const setEntry: SetEntry = async (ip, owner) => {
      const ipset = await world.hostIpset();
      if (owner === undefined) await ipset.del(V4, { ip });
      else await ipset.add(V4, { ip, comment: owner }, { replace: true });
    };
    return { owners, setEntry };
  },
  ownCases(current) {
    it('starts: probe sets and host SNAT rules, idempotently', async () => {
      const { world, node } = current();
      await node({ ipv6: true });
      const ipset = await world.hostIpset();
      expect((await ipset.listNames()).sort()).toEqual([V4, V6]);
      expect(await ipset.header(V4)).toMatchObject({ type: 'hash:ip', family: 'inet', comment: true });
      expect(await ipset.header(V6)).toMatchObject({ type: 'hash:ip', family: 'inet6', comment: true });
      const ipt4 = await world.hostIptables(4);
      expect((await ipt4.verify(hostProbeRules())).inSync).toBe(true);
      expect((await (await world.hostIptables(6)).verify(hostProbeRules({ family: 6 }))).inSync).toBe(true);
      // A restarted agent finds everything in place and duplicates nothing.
      await node({ ipv6: true });
      expect(await ipt4.verify(hostProbeRules())).toMatchObject({ inSync: true, unexpected: [] });
    });

    it('adds a pod: in-pod rules inside its namespace, then its probe entries; removes it in reverse', async () => {
      const { world, node, owners } = current();
      const net = await node();
      const pod = world.pod();
      await net.addPod({ uid: pod.uid, ips: [pod.ip], netns: pod.netns });
      expect((await (await world.podIptables(pod)).verify(inpodRules())).inSync).toBe(true);
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
      await net.removePod({ uid: pod.uid, ips: [pod.ip], netns: pod.netns });
      expect(await owners()).toEqual({});
      const after = await (await world.podIptables(pod)).verify(inpodRules());
      expect(after.inSync).toBe(false);
      expect(after.missing.length).toBe(inpodRules().rules().length + 6);
    });

    it('adds the policy rule and local route with the pod, idempotently, and removes them with it', async () => {
      const { world, node } = current();
      const net = await node();
      const pod = world.pod();
      const info = { uid: pod.uid, ips: [pod.ip], netns: pod.netns };
      await net.addPod(info);
      const rt = await world.podRtnetlink(pod);
      const ours = async () => ({
        rules: (await rt.rules()).filter((r) => r.priority === INPOD_ROUTING.priority),
        routes: await rt.routes({ table: INPOD_ROUTING.table }),
      });
      const added = await ours();
      expect(added.rules).toEqual([expect.objectContaining({ family: 4, mark: 0x111, mask: 0xfff, table: 100, action: 'toTable' })]);
      expect(added.routes).toEqual([expect.objectContaining({ family: 4, dstLength: 0, type: 'local', scope: 'host', oif: 1 })]);
      // What `ip` prints on a real node, as the reference's users read it.
      const ipRules = world.podIp(pod, 'rule', 'show');
      if (ipRules !== undefined) {
        expect(ipRules).toContain('32764:\tfrom all fwmark 0x111/0xfff lookup 100');
        expect(world.podIp(pod, 'route', 'show', 'table', '100')).toContain('local default dev lo');
      }
      // A second addPod changes nothing and raises nothing.
      await net.addPod(info);
      expect(await ours()).toEqual(added);
      expect((await net.verify({ pods: [info] })).pods).toEqual([
        expect.objectContaining({ uid: pod.uid, inSync: true, routes: [{ family: 4, rule: true, route: true }] }),
      ]);

      await net.removePod(info);
      expect(await ours()).toEqual({ rules: [], routes: [] });
      if (ipRules !== undefined) {
        expect(world.podIp(pod, 'rule', 'show')).not.toContain('fwmark 0x111/0xfff');
        expect(world.podIp(pod, 'route', 'show', 'table', '100')).toBe('');
      }
    });

    it('routes IPv6 too when ipv6 is on, and verify/repair bring back a lost rule and route', async () => {
      const { world, node } = current();
      const net = await node({ ipv6: true });
      const pod = world.pod();
      const info = { uid: pod.uid, ips: [pod.ip], netns: pod.netns };
      await net.addPod(info);
      const rt = await world.podRtnetlink(pod);
      expect((await rt.rules()).filter((r) => r.priority === 32764).map((r) => r.family).sort()).toEqual([4, 6]);
      expect((await rt.routes({ table: 100 })).map((r) => [r.family, r.type]).sort()).toEqual([[4, 'local'], [6, 'local']]);

      // A CNI re-run or a reboot lost them.
      await rt.delRule({ family: 6, priority: 32764, mark: 0x111, mask: 0xfff, table: 100 });
      await rt.delRoute({ family: 4, table: 100, type: 'local', oif: 'lo' });
      const drift = await net.verify({ pods: [info] });
      expect(drift.inSync).toBe(false);
      expect(drift.pods[0]!.routes).toEqual([
        { family: 4, rule: true, route: false },
        { family: 6, rule: false, route: true },
      ]);
      expect(await net.repair({ pods: [info] })).toEqual({ changed: true });
      expect((await net.verify({ pods: [info] })).inSync).toBe(true);
      expect(await net.repair({ pods: [info] })).toEqual({ changed: false });

      await rt.delRoute({ family: 6, table: 100, type: 'local', oif: 'lo' });
      await net.syncSnapshot([{ ...info }], { reapplyRules: true });
      expect((await rt.routes({ table: 100 })).map((r) => r.family).sort()).toEqual([4, 6]);
    });

    it('leaves in-pod rules alone for a pod being deleted', async () => {
      const { world, node, owners } = current();
      const net = await node();
      const pod = world.pod();
      await net.addPod({ uid: pod.uid, ips: [pod.ip], netns: pod.netns });
      await net.removePod({ uid: pod.uid, ips: [pod.ip], netns: pod.netns }, { deleted: true });
      expect(await owners()).toEqual({});
      expect((await (await world.podIptables(pod)).verify(inpodRules())).inSync).toBe(true);
    });

    it('unmaps IPv4-mapped addresses and sorts IPs by family', async () => {
      const { world, node, owners } = current();
      const net = await node({ ipv6: true });
      const pod = world.pod();
      await net.addPod({ uid: pod.uid, ips: [`::ffff:${pod.ip}`, 'fd00::42'], netns: pod.netns });
      expect(await owners(V4)).toEqual({ [pod.ip]: pod.uid });
      expect(await owners(V6)).toEqual({ 'fd00::42': pod.uid });
    });

    it('re-applies lost in-pod rules from a snapshot when asked', async () => {
      const { world, node } = current();
      const net = await node();
      const pod = world.pod();
      await net.addPod({ uid: pod.uid, ips: [pod.ip], netns: pod.netns });
      const ipt = await world.podIptables(pod);
      await ipt.remove(inpodRules());
      const report = await net.syncSnapshot([{ uid: pod.uid, ips: [pod.ip], netns: pod.netns }], { reapplyRules: true });
      expect(report.rulesReapplied).toBe(1);
      expect((await ipt.verify(inpodRules())).inSync).toBe(true);
    });

    it('verifies and repairs drift of host rules and sets', async () => {
      const { world, node } = current();
      const net = await node();
      expect((await net.verify()).inSync).toBe(true);
      const ipt = await world.hostIptables();
      await ipt.remove(hostProbeRules());
      await (await world.hostIpset()).destroy(V4);
      const drift = await net.verify();
      expect(drift.inSync).toBe(false);
      expect(drift.sets).toEqual([{ name: V4, present: false, ok: false }]);
      expect(drift.hostRules[0]).toMatchObject({ family: 4, result: { inSync: false } });
      expect(drift.hostRules[0]!.result.missing.length).toBeGreaterThan(0);
      for (const missing of drift.hostRules[0]!.result.missing) expect(missing).toMatch(/^-t \w+ -[AN] /);
      expect(drift.nftHostRules).toBeUndefined();
      expect(await net.repair()).toEqual({ changed: true });
      expect((await net.verify()).inSync).toBe(true);
      expect(await net.repair()).toEqual({ changed: false });
    });

    it('stops: host rules deleted, sets flushed and destroyed; keep leaves them', async () => {
      const { world, node, owners } = current();
      const kept = await node();
      const pod = world.pod();
      await kept.addPod({ uid: pod.uid, ips: [pod.ip], netns: pod.netns });
      await kept.stop({ keep: true });
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
      const net = await node();
      expect(net.probeSet?.owner(pod.ip)).toBe(pod.uid);
      await net.stop();
      expect(await (await world.hostIpset()).listNames()).toEqual([]);
      const after = await (await world.hostIptables()).verify(hostProbeRules());
      expect(after.missing.map((m) => m.chain)).toContain('ISTIO_POSTRT');
    });

    it('puts the configured probe sources into the host and in-pod rules of each family, and repairs with them', async () => {
      const { world, node } = current();
      const probeSource = { 4: '169.254.10.1', 6: 'fd00:7127::1' } as const;
      const net = await node({ ipv6: true, probeSourceV4: probeSource[4], probeSourceV6: probeSource[6] });
      const pod = world.pod();
      await net.addPod({ uid: pod.uid, ips: [pod.ip], netns: pod.netns });
      for (const family of [4, 6] as const) {
        const config = { family, probeSource: probeSource[family] };
        const host = await world.hostIptables(family);
        expect(await host.verify(hostProbeRules(config))).toMatchObject({ inSync: true, unexpected: [] });
        const inpod = await world.podIptables(pod, family);
        expect(await inpod.verify(inpodRules(config))).toMatchObject({ inSync: true, unexpected: [] });
      }
      expect((await net.verify()).inSync).toBe(true);
      const host6 = await world.hostIptables(6);
      await host6.remove(hostProbeRules({ family: 6, probeSource: probeSource[6] }));
      expect(await net.repair()).toEqual({ changed: true });
      expect(await host6.verify(hostProbeRules({ family: 6, probeSource: probeSource[6] }))).toMatchObject({ inSync: true });
    });

    it("applies, re-applies and removes an ingress-only pod's own rule variant", async () => {
      const { world, node, owners } = current();
      const net = await node();
      const pod = world.pod();
      const info = { uid: pod.uid, ips: [pod.ip], netns: pod.netns, ingressOnly: true };
      const ingress = inpodRules({ ingressOnly: true });
      await net.addPod(info);
      const ipt = await world.podIptables(pod);
      expect(await ipt.verify(ingress)).toMatchObject({ inSync: true, unexpected: [] });
      // Someone put the full rules back: the snapshot's reapply must restore the pod's variant, not the default.
      await ipt.apply(inpodRules());
      expect(await net.syncSnapshot([info], { reapplyRules: true })).toMatchObject({ rulesReapplied: 1 });
      expect(await ipt.verify(ingress)).toMatchObject({ inSync: true, unexpected: [] });
      await net.removePod(info);
      expect(await owners()).toEqual({});
      expect((await ipt.verify(ingress)).missing.length).toBe(ingress.rules().length + 6);
    });

    it("applies a pod's own virtual interfaces first in nat ISTIO_PRERT, and verify and repair hold the pod to them", async () => {
      const { world, node } = current();
      const net = await node();
      const pod = world.pod();
      const virtualInterfaces = ['istioin', 'tun0'];
      const plain = { uid: pod.uid, ips: [pod.ip], netns: pod.netns };
      const withVifs = { ...plain, virtualInterfaces };
      await net.addPod(withVifs);
      const ipt = await world.podIptables(pod);
      expect(await ipt.verify(inpodRules({ virtualInterfaces }))).toMatchObject({ inSync: true, unexpected: [] });
      const prert = (await ipt.save()).tables.nat!.chains[INPOD.preroutingChain]!.rules.slice(0, 2).map((r) => r.join(' '));
      expect(prert).toEqual(['-i istioin -p tcp -j REDIRECT --to-ports 15001', '-i istioin -p tcp -j RETURN']);
      expect((await net.verify({ pods: [withVifs] })).inSync).toBe(true);
      expect((await net.verify({ pods: [plain] })).inSync).toBe(false);
      expect(await net.repair({ pods: [plain] })).toEqual({ changed: true });
      expect(await ipt.verify(inpodRules())).toMatchObject({ inSync: true, unexpected: [] });
      expect(await net.syncSnapshot([withVifs], { reapplyRules: true })).toMatchObject({ rulesReapplied: 1 });
      expect(await ipt.verify(inpodRules({ virtualInterfaces }))).toMatchObject({ inSync: true, unexpected: [] });
      await net.removePod(withVifs);
    });

    it('refuses bad probe sources when constructed, and a pod whose ingressOnly is not a boolean', async () => {
      const { world, node, owners } = current();
      const cases = [
        { probeSourceV4: 'fd00::1', argument: 'options.probeSourceV4', code: 'ERR_INVALID_ARG_VALUE' },
        { probeSourceV4: '169.254.7.127/32', argument: 'options.probeSourceV4', code: 'ERR_INVALID_ARG_VALUE' },
        { probeSourceV6: '169.254.7.127', argument: 'options.probeSourceV6', code: 'ERR_INVALID_ARG_VALUE' },
        { probeSourceV6: 'FD16::1', argument: 'options.probeSourceV6', code: 'ERR_INVALID_ARG_VALUE' },
        { probeSourceV6: 42, argument: 'options.probeSourceV6', code: 'ERR_INVALID_ARG_TYPE' },
      ];
      for (const { argument, code, ...bad } of cases) {
        expect(() => new NodeNetwork(bad as object)).toThrow(expect.objectContaining({ code, argument }));
      }
      const net = await node();
      const pod = world.pod();
      const bad = { uid: pod.uid, ips: [pod.ip], netns: pod.netns, ingressOnly: 'yes' as unknown as boolean };
      await expect(net.addPod(bad)).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', argument: 'pod.ingressOnly' });
      await expect(net.syncSnapshot([bad])).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', argument: 'pods[0].ingressOnly' });
      expect(await owners()).toEqual({});
      expect((await (await world.podIptables(pod)).verify(inpodRules())).inSync).toBe(false);
    });

    it('logs structured fields through an injected logger, and nothing by default', async () => {
      const { world, node } = current();
      const lines: { level: string; message: string; fields: Record<string, unknown> | undefined }[] = [];
      const logger = {
        info: (message: string, fields?: Record<string, unknown>) => lines.push({ level: 'info', message, fields }),
        warn: (message: string, fields?: Record<string, unknown>) => lines.push({ level: 'warn', message, fields }),
      };
      const net = await node({ logger });
      const a = world.pod();
      const b = world.pod(a.ip);
      await net.addPod({ uid: a.uid, ips: [a.ip], netns: a.netns });
      await net.addPod({ uid: b.uid, ips: [b.ip], netns: b.netns });
      expect(lines).toContainEqual({ level: 'info', message: 'pod added', fields: { pod: a.uid, ips: [a.ip] } });
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 'warn', fields: expect.objectContaining({ ip: a.ip, pod: b.uid, previousOwner: a.uid, set: V4 }) }),
      );
    });

    it('refuses bad pods before doing anything', async () => {
      const { node, owners } = current();
      const net = await node();
      await expect(net.addPod({ uid: '', ips: [] })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      await expect(net.addPod({ uid: 'x', ips: ['10.1'] })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
      await expect(net.addPod({ uid: 'x', ips: ['10.0.0.1'] })).rejects.toMatchObject({ step: 'netns' });
      expect(await owners()).toEqual({});
    });
  },
};

export function nodeNetworkContract(name: string, makeWorld: () => World): void {
  nodeBackendContract(name, makeWorld, iptablesBackend);
}
