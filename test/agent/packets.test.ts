// NodeNetwork proven with real packets on a simulated node (host and pod namespaces joined by veths): where a
// connection to a pod's app port lands, and from which source, before, during and after the pod is enrolled.
import { expect, it } from 'vitest';

import { Iptables, NodeNetwork, runInNetns } from '../../lib/index.js';
import type { SimulatedNode } from '../../lib/testing/index.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { sharedPacketCases } from './packet-cases.js';
import { onTwoPods } from './simulated-pods.js';

const PROBE_SOURCE = '169.254.7.127';

async function hostState(sim: SimulatedNode): Promise<{ rules: string; sets: string }> {
  const save = async (program: string): Promise<string> => {
    const r = await runInNetns(sim.host.path, [program], { timeoutMs: 10_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    return r.stdout;
  };
  const rules = (await save('iptables-nft-save')) + (await save('iptables-legacy-save'));
  const sets = await runInNetns(sim.host.path, ['ipset', 'list'], { timeoutMs: 10_000 });
  expect(sets.exitCode, sets.stderr).toBe(0);
  return { rules, sets: sets.stdout };
}

describePrivileged(
  'NodeNetwork with real packets (SimulatedNode)',
  () => {
    it('SNATs host connections to an enrolled pod to the probe source, redirects pod traffic to 15006, and undoes both', async () => {
      const { served, podB } = await onTwoPods('t', [8080, 15006], async ({ sim, podA, podB, fromHost, fromPodB }) => {
        // The plain node first, so the changes below are the agent's doing.
        expect(await fromHost()).toBe('8080 10.244.0.1');
        expect(await fromPodB()).toBe(`8080 ${podB.ip}`);

        const network = new NodeNetwork({ hostNetns: sim.host.path });
        await network.start();
        try {
          const pod = { uid: podA.uid, ips: [podA.ip], netns: podA.path };
          await network.addPod(pod);
          const during = await hostState(sim);
          expect(during.rules).toContain(`--match-set istio-inpod-probes-v4 dst -j SNAT --to-source ${PROBE_SOURCE}`);
          expect(during.sets).toMatch(new RegExp(`^${podA.ip.replaceAll('.', '\\.')} comment "${podA.uid}"$`, 'm'));

          // Host (kubelet) -> pod: SNAT to the probe source on the host, let through by the in-pod probe ACCEPT.
          expect(await fromHost()).toBe(`8080 ${PROBE_SOURCE}`);
          // Pod -> pod: forwarded by the host untouched, redirected to the proxy's inbound port inside the pod.
          expect(await fromPodB()).toBe(`15006 ${podB.ip}`);

          await network.removePod(pod);
          expect(await fromHost()).toBe('8080 10.244.0.1');
          expect(await fromPodB()).toBe(`8080 ${podB.ip}`);
        } finally {
          await network.stop();
        }
        const after = await hostState(sim);
        expect(after.rules).not.toMatch(/ISTIO|istio-inpod-probes/);
        expect(after.sets.trim()).toBe('');
      });
      expect(served).toContain(`conn 8080 ${PROBE_SOURCE}\n`);
      expect(served).toContain(`conn 15006 ${podB.ip}\n`);
    });

    sharedPacketCases({
      prefix: 't',
      options: {},
      flushConnmark: async (podNetns) => {
        const ipt = await Iptables.open({ netns: podNetns });
        await ipt.restore('*mangle\n-F ISTIO_PRERT\nCOMMIT\n');
      },
    });
  },
  missingBinary('ipset', 'iptables-nft-save', 'iptables-legacy-save', 'iptables-nft-restore', 'python3'),
);
