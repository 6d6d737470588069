// The CNI intake end to end with Debian's containernetworking-plugins: bridge (IPAM host-local), loopback and
// podnet-cni chained in one conflist, run by a libcni-like runtime (helpers/runtime.ts) inside a host namespace the
// test makes, against an agent (CniServer -> NodeNetwork -> ZtunnelServer -> the ztunnel player). Everything lives
// in the test's namespaces and temp folder (helpers/chain-node.ts), removed after each case.
import { expect, it } from 'vitest';

import { CNI_VERSIONS } from '../../lib/cni/index.js';
import { echoWho } from '../../lib/testing/index.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { CNI_PLUGIN_DIR, ChainNode, DEADLINE_MS, OUTBOUND_PORT, isEvent, type ChainPod } from './helpers/chain-node.js';
import { PluginFailure, type CniRuntime, type PluginRun } from './helpers/runtime.js';

/** The single address of family in an ADD result, without its prefix length. */
function addressOf(result: unknown, family: 4 | 6): string {
  const ips = (result as { ips: { address: string }[] }).ips.map((i) => i.address.split('/')[0]!).filter((a) => a.includes(':') === (family === 6));
  expect(ips).toHaveLength(1);
  return ips[0]!;
}

function inodeOf(pod: ChainPod): number {
  using ns = pod.ns.open();
  return ns.inode;
}

/** Whether a plugin type supports cniVersion, by its own VERSION answer. */
async function supports(rt: CniRuntime, type: string, cniVersion: string): Promise<boolean> {
  const run = await rt.version(type, '1.0.0');
  return ((run.output as { supportedVersions: string[] }).supportedVersions ?? []).includes(cniVersion);
}

function commandsRun(runs: PluginRun[]): string[] {
  return runs.map((r) => `${r.command} ${r.type} ${r.exitCode}`);
}

describePrivileged(
  'the CNI chain bridge -> loopback -> podnet-cni, run as a runtime runs it',
  () => {
    it.each(['iptables', 'nftables'] as const)(
      'ADD enrolls the pod before podnet-cni answers bridge\'s result unchanged; CHECK passes; DEL in reverse removes it, twice (%s)',
      async (backend) => {
        await using node = await ChainNode.create({ backend });
        const rt = node.runtime();
        const pod = node.newPod();
        const inode = inodeOf(pod);

        const result = await rt.add(pod.attachment);
        expect(commandsRun(rt.runs)).toEqual(['ADD bridge 0', 'ADD loopback 0', 'ADD podnet-cni 0']);
        const [bridge, loopback, podnet] = rt.runs as [PluginRun, PluginRun, PluginRun];
        // What the runtime caches is bridge's result, unchanged, in the config's cniVersion.
        expect((bridge.output as { cniVersion: string }).cniVersion).toBe('1.0.0');
        expect(result).toEqual(bridge.output);
        expect(JSON.parse(podnet.stdin).prevResult).toEqual(bridge.output);
        expect(JSON.parse(loopback.stdin).prevResult).toEqual(bridge.output);
        expect(podnet.stderr).toBe('');
        const ip = addressOf(result, 4);

        // Enrolled by the time podnet-cni returned: nothing below waits for the agent.
        expect(node.proxy.workloads.map((w) => w.uid)).toEqual([pod.uid]);
        expect(await node.probeEntries()).toEqual([{ ip, owner: pod.uid }]);
        const report = await node.network.verify({ pods: [{ uid: pod.uid, ips: [ip], netns: pod.ns.path }] });
        expect(report.inSync).toBe(true);
        expect(report.pods[0]).toMatchObject({ uid: pod.uid, inSync: true, netns: 'ok' });
        expect(report.pods[0]!.routes).toEqual([{ family: 4, rule: true, route: true }]);
        expect(node.calls).toEqual([
          { command: 'ADD', containerId: pod.attachment.containerId, uid: pod.uid, ips: [ip], netnsInode: inode, validAttachments: undefined },
        ]);
        expect(await node.player.waitFor(isEvent('add', { uid: pod.uid }), DEADLINE_MS)).toEqual({
          event: 'add',
          uid: pod.uid,
          name: 'web-1',
          namespace: 'shop',
          serviceAccount: 'default',
          netnsInode: inode,
          fds: 1,
        });
        expect(await node.player.waitFor(isEvent('listening', { uid: pod.uid }), DEADLINE_MS)).toEqual({
          event: 'listening',
          uid: pod.uid,
          port: OUTBOUND_PORT,
          netnsInode: inode,
        });

        // The pod's first outbound connection lands on the player inside the pod, its original destination kept.
        const before = node.player.events.length;
        expect(await echoWho(pod.ns.path, '192.0.2.10', 8080)).toBe(`ztunnel-player ${pod.uid} 192.0.2.10:8080`);
        expect(await node.player.waitFor(isEvent('conn'), DEADLINE_MS, before)).toMatchObject({
          uid: pod.uid,
          origDst: '192.0.2.10:8080',
          origDstSource: 'SO_ORIGINAL_DST',
          peer: expect.stringMatching(new RegExp(`^${ip.replaceAll('.', '\\.')}:\\d+$`)),
        });

        rt.runs.length = 0;
        await rt.check(pod.attachment, result);
        expect(commandsRun(rt.runs)).toEqual(['CHECK bridge 0', 'CHECK loopback 0', 'CHECK podnet-cni 0']);
        expect(node.calls.at(-1)).toMatchObject({ command: 'CHECK', uid: pod.uid, ips: [ip], netnsInode: inode });

        rt.runs.length = 0;
        const beforeDel = node.player.events.length;
        await rt.del(pod.attachment, result);
        expect(commandsRun(rt.runs)).toEqual(['DEL podnet-cni 0', 'DEL loopback 0', 'DEL bridge 0']);
        expect(node.calls.at(-1)).toMatchObject({ command: 'DEL', uid: pod.uid, ips: [ip], netnsInode: inode });
        expect(await node.probeEntries()).toEqual([]);
        expect(node.proxy.workloads).toEqual([]);
        expect(await node.player.waitFor(isEvent('del', { uid: pod.uid }), DEADLINE_MS, beforeDel)).toEqual({ event: 'del', uid: pod.uid, known: true });
        expect(node.ipamReservations()).toEqual([]);
        expect(pod.ns.ip('-o', 'link', 'show').trim().split('\n')).toHaveLength(1); // lo only: bridge took its veth

        // DEL again, as a runtime retries it: every plugin succeeds with nothing left to remove.
        rt.runs.length = 0;
        await rt.del(pod.attachment, result);
        expect(commandsRun(rt.runs)).toEqual(['DEL podnet-cni 0', 'DEL loopback 0', 'DEL bridge 0']);
        expect(await node.probeEntries()).toEqual([]);
        expect(node.player.events.filter(isEvent('error'))).toEqual([]);
      },
    );

    it('with the agent down ADD fails with code 11 naming the socket, the chain\'s DEL leaves nothing of podnet; STATUS says 50, then 0', async () => {
      await using node = await ChainNode.create({ backend: 'iptables', agent: false });
      const rt = node.runtime();
      const pod = node.newPod();

      const failure = await rt.add(pod.attachment).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failure).toBeInstanceOf(PluginFailure);
      const { run, error } = failure as PluginFailure;
      expect(run.type).toBe('podnet-cni');
      expect(run.exitCode).not.toBe(0);
      expect(error).toMatchObject({ cniVersion: '1.0.0', code: 11 });
      expect(`${error.msg} ${error.details ?? ''}`).toContain(node.cniSocket);
      // bridge and loopback did their part before podnet-cni refused: the pod has an address.
      expect(node.ipamReservations()).toHaveLength(1);

      // The runtime tears the failed ADD down: DEL in reverse, without a cached result (none was stored).
      rt.runs.length = 0;
      await rt.del(pod.attachment);
      expect(commandsRun(rt.runs)).toEqual(['DEL podnet-cni 0', 'DEL loopback 0', 'DEL bridge 0']);
      expect(rt.runs[0]!.stdout).toBe('');
      expect(rt.runs[0]!.stderr).toContain(node.cniSocket);
      expect(node.ipamReservations()).toEqual([]);
      expect(await node.probeEntries()).toEqual([]);
      expect(await node.podnetStateInPod(pod)).toEqual([]);
      expect(node.proxy.workloads).toEqual([]);
      expect(node.calls).toEqual([]);
      expect(node.player.events.filter((e) => e.event === 'add')).toEqual([]);

      // STATUS is a 1.1.0 command: the same list at 1.1.0. Debian's plugins (1.1.1) stop at 1.0.0 and do not know
      // STATUS: they answer a CNI error of their own (code 3, "missing containerID", from their skel).
      const rt11 = node.runtime('1.1.0');
      const expectOthers = async (runs: PluginRun[]): Promise<void> => {
        for (const r of runs.slice(0, 2)) {
          if (await supports(rt, r.type, '1.1.0')) expect(r.exitCode).toBe(0);
          else expect([r.exitCode, r.output]).toEqual([1, expect.objectContaining({ code: expect.any(Number), msg: expect.any(String) })]);
        }
      };
      const down = await rt11.status();
      expect(down.map((r) => r.type)).toEqual(['bridge', 'loopback', 'podnet-cni']);
      await expectOthers(down);
      expect(down[2]!.exitCode).not.toBe(0);
      expect(down[2]!.output).toMatchObject({ cniVersion: '1.1.0', code: 50 });

      await node.startAgent();
      const up = await rt11.status();
      await expectOthers(up);
      expect(up[2]).toMatchObject({ exitCode: 0, stdout: '' });
    });

    it('GC with valid attachments reaches the gc handler typed; VERSION is answered by podnet-cni itself', async () => {
      await using node = await ChainNode.create({ backend: 'iptables' });
      const rt11 = node.runtime('1.1.0');
      const valid = [
        { containerID: 'c0ffee01', ifname: 'eth0' },
        { containerID: 'c0ffee02', ifname: 'net1' },
      ];
      const runs = await rt11.gc(valid);
      expect(runs.map((r) => r.type)).toEqual(['bridge', 'loopback', 'podnet-cni']);
      expect(runs[2]).toMatchObject({ exitCode: 0, stdout: '' });
      expect(node.calls).toEqual([{ command: 'GC', containerId: '', uid: undefined, ips: [], netnsInode: undefined, validAttachments: valid }]);

      // With no agent listening, VERSION still answers: the plugin never forwards it.
      await node.stopAgent();
      for (const cniVersion of ['1.0.0', '1.1.0']) {
        const version = await rt11.version('podnet-cni', cniVersion);
        expect(version.output).toEqual({ cniVersion, supportedVersions: [...CNI_VERSIONS] });
      }
      expect(node.calls).toHaveLength(1);
    });
  },
  missingBinary('ipset', 'iptables-nft-restore', 'nft', 'python3', `${CNI_PLUGIN_DIR}/bridge`, `${CNI_PLUGIN_DIR}/host-local`, `${CNI_PLUGIN_DIR}/loopback`),
);
