// NodeNetwork handing pods to the node proxy (ZDS), one suite for the fake world and the kernel world: the real
// ZtunnelServer and a FakeZtunnel over a unix socket in both, the pods' netns fds being fakes' or the kernel's.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { AgentError, InvalidArgumentError, NodeNetwork, ZtunnelServer, inpodRules, type PodInfo } from '../../lib/index.js';
import { FakeZtunnel } from '../../lib/testing/index.js';
import { started, type PodRef, type World } from './world.js';

const V4 = 'istio-inpod-probes-v4';

function info(pod: PodRef, extra: Partial<PodInfo> = {}): PodInfo {
  return {
    uid: pod.uid,
    ips: [pod.ip],
    netns: pod.netns,
    workload: { name: `pod-${pod.uid}`, namespace: 'default', serviceAccount: 'sa' },
    ...extra,
  };
}

export function proxyContract(name: string, makeWorld: () => World): void {
  describe(`NodeNetwork and the node proxy: ${name}`, () => {
    let world: World;
    const nodes: NodeNetwork[] = [];
    const closers: (() => unknown)[] = [];
    const node = async (proxy: ZtunnelServer) => {
      const n = await started(world, { proxy });
      nodes.push(n);
      return n;
    };
    const owners = async () => Object.fromEntries((await (await world.hostIpset()).list(V4)).entries.map((e) => [e.ip, e.comment]));
    const inpodInSync = async (pod: PodRef) => (await (await world.podIptables(pod)).verify(inpodRules())).inSync;

    beforeEach(() => {
      world = makeWorld();
    });
    afterEach(async () => {
      for (const n of nodes.splice(0)) await n.stop({ keep: true }).catch(() => undefined);
      for (const close of closers.splice(0)) await close();
      await world.cleanup();
    });

    it("hands the pod's namespace to the proxy beside its rules and before its probe entries; removePod drops it", async () => {
      const { server, ztunnel } = await world.proxy();
      const net = await node(server);
      const pod = world.pod();
      await net.addPod(info(pod));
      expect(ztunnel.workloads.get(pod.uid)).toEqual({ uid: pod.uid, workload: info(pod).workload, netnsId: world.netnsId(pod) });
      expect(server.workloads.map((w) => w.uid)).toEqual([pod.uid]);
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
      await net.removePod(info(pod));
      expect(ztunnel.workloads.has(pod.uid)).toBe(false);
      expect(ztunnel.received.at(-1)).toEqual({ kind: 'del', uid: pod.uid });
      expect(server.workloads).toEqual([]);
      expect(await owners()).toEqual({});
      expect(await inpodInSync(pod)).toBe(false);
    });

    it('hands the new namespace to the proxy when a pod comes back with another one (a recreated sandbox)', async () => {
      const { server, ztunnel } = await world.proxy();
      const net = await node(server);
      const [first, second] = [world.pod(), world.pod()];
      await net.addPod(info(first));
      const moved = info(second, { uid: first.uid });
      await net.addPod(moved);
      expect(ztunnel.received.filter((m) => m.kind === 'add').map((m) => (m as { netnsId?: string }).netnsId)).toEqual([
        world.netnsId(first),
        world.netnsId(second),
      ]);
      expect(ztunnel.workloads.get(first.uid)?.netnsId).toBe(world.netnsId(second));
      expect(server.workloads).toEqual([expect.objectContaining({ uid: first.uid, netnsId: world.netnsId(second) })]);
      expect(await owners()).toEqual({ [second.ip]: first.uid });
      expect(await inpodInSync(second)).toBe(true);
    });

    it("fails at a retryable 'proxy' step when the proxy refuses: rules in place, no probe entry; a retry adds it once", async () => {
      const { server, ztunnel } = await world.proxy();
      const net = await node(server);
      const pod = world.pod();
      ztunnel.failNext('failed to start inbound listener');
      const err = await net.addPod(info(pod)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AgentError);
      expect(err).toMatchObject({ step: 'proxy', code: 'ERR_AGENT_PROXY', retryable: true, pod: pod.uid });
      expect((err as AgentError).cause).toMatchObject({ code: 'ERR_PROXY_ACK', proxyError: 'failed to start inbound listener' });
      expect(await inpodInSync(pod)).toBe(true);
      expect(await owners()).toEqual({});
      expect(ztunnel.workloads.has(pod.uid)).toBe(false);

      await net.addPod(info(pod));
      await net.addPod(info(pod));
      expect([...ztunnel.workloads.keys()]).toEqual([pod.uid]);
      expect(server.workloads.map((w) => w.uid)).toEqual([pod.uid]);
      expect(await owners()).toEqual({ [pod.ip]: pod.uid });
    });

    it('fails an add at once, retryable, when no proxy is connected, and changes no probe entry', async () => {
      const { server, ztunnel } = await world.proxy();
      ztunnel.close();
      await expect.poll(() => server.connected, { timeout: 20_000 }).toBe(0);
      const net = await node(server);
      const pod = world.pod();
      const err = await net.addPod(info(pod)).catch((e: unknown) => e);
      expect(err).toMatchObject({ step: 'proxy', retryable: true, cause: { code: 'ERR_PROXY_NOT_CONNECTED' } });
      expect(await owners()).toEqual({});
    });

    it('removes the probe entries before telling the proxy, and the rules only after it acked', async () => {
      const { server, ztunnel } = await world.proxy();
      const net = await node(server);
      const pod = world.pod();
      await net.addPod(info(pod));
      ztunnel.failNext('busy');
      await expect(net.removePod(info(pod))).rejects.toMatchObject({ step: 'proxy', retryable: true });
      expect(await owners()).toEqual({});
      expect(await inpodInSync(pod)).toBe(true);
      await net.removePod(info(pod));
      expect(await inpodInSync(pod)).toBe(false);
      expect(ztunnel.workloads.size).toBe(0);
    });

    it('tells the proxy of a deleted pod too, leaving its rules to go with its namespace', async () => {
      const { server, ztunnel } = await world.proxy();
      const net = await node(server);
      const pod = world.pod();
      await net.addPod(info(pod));
      await net.removePod(info(pod), { deleted: true });
      expect(ztunnel.workloads.size).toBe(0);
      expect(await inpodInSync(pod)).toBe(true);
    });

    it('gives a restarted proxy a snapshot of exactly the enrolled pods, with the fds of their namespaces', async () => {
      const { server, ztunnel } = await world.proxy();
      const net = await node(server);
      const [a, b, c] = [world.pod(), world.pod(), world.pod()];
      for (const p of [a, b, c]) await net.addPod(info(p));
      await net.removePod(info(b));
      ztunnel.close();
      const restarted = await FakeZtunnel.connect(server.path);
      closers.push(() => restarted.close());
      await restarted.waitForSnapshot({ after: 0 });
      expect(restarted.received.map((m) => m.kind)).toEqual(['add', 'add', 'snapshotSent']);
      expect([...restarted.workloads.values()].map((w) => [w.uid, w.netnsId])).toEqual([
        [a.uid, world.netnsId(a)],
        [c.uid, world.netnsId(c)],
      ]);
    });

    it('after an agent restart, holds the proxy until syncSnapshot, then sends Add, Keep (netns gone) and SnapshotSent', async () => {
      const first = await world.proxy();
      const net = await node(first.server);
      const [a, b, stale] = [world.pod(), world.pod(), world.pod()];
      for (const p of [a, b, stale]) await net.addPod(info(p));
      expect(first.ztunnel.workloads.size).toBe(3);

      // The agent restarts: a new server on a new socket; the same proxy reconnects and keeps its table meanwhile.
      await net.stop({ keep: true });
      await first.server.close();
      const path = `${first.server.path}.2`;
      const server = await ZtunnelServer.listen({ path, waitForWorkloads: true });
      closers.push(() => server.close());
      const ztunnel = await FakeZtunnel.connect(path);
      closers.push(() => ztunnel.close());
      const next = await node(server);
      world.dropNetns(b);
      await next.syncSnapshot([info(a), info(b)]);
      await ztunnel.waitForSnapshot({ after: 0 });
      expect(ztunnel.received).toEqual([
        { kind: 'add', uid: a.uid, workload: info(a).workload, netnsId: world.netnsId(a) },
        { kind: 'keep', uid: b.uid },
        { kind: 'snapshotSent' },
      ]);
      expect(server.workloads.map((w) => [w.uid, w.netnsId !== undefined])).toEqual([
        [a.uid, true],
        [b.uid, false],
      ]);
    });

    it('refuses a pod without workload info before changing anything', async () => {
      const { server } = await world.proxy();
      const net = await node(server);
      const pod = world.pod();
      const { workload: _, ...bare } = info(pod);
      await expect(net.addPod(bare)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(net.addPod(info(pod, { workload: { name: '', namespace: 'x', serviceAccount: '' } }))).rejects.toMatchObject({
        argument: 'pod.workload.name',
      });
      expect(await inpodInSync(pod)).toBe(false);
      expect(() => new NodeNetwork({ proxy: {} as never })).toThrow(InvalidArgumentError);
    });
  });
}
