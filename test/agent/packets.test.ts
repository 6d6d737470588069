// NodeNetwork proven with real packets on a simulated node (host and pod namespaces joined by veths): where a
// connection to a pod's app port lands, and from which source, before, during and after the pod is enrolled.
import { expect, it } from 'vitest';

import { Iptables, NodeNetwork, runInNetns } from '../../lib/index.js';
import { echoWho, type SimulatedNode } from '../../lib/testing/index.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { hboneDelivery, onTwoPods } from './simulated-pods.js';

const PROBE_SOURCE = '169.254.7.127';
const CUSTOM_PROBE_SOURCE = '169.254.10.1';

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

    it("leaves an ingress-only pod's inbound alone but redirects its outbound, and SNATs probes to a configured source", async () => {
      // Pod B has no server: a connection from A that is not redirected to A's own 15001 is refused.
      const { served, podA } = await onTwoPods('t', [8080, 15001, 15006], async ({ sim, podA, podB }) => {
        const network = new NodeNetwork({ hostNetns: sim.host.path, probeSourceV4: CUSTOM_PROBE_SOURCE });
        await network.start();
        try {
          const pod = { uid: podA.uid, ips: [podA.ip], netns: podA.path, ingressOnly: true };
          await network.addPod(pod);
          expect(await echoWho(podB.path, podA.ip, 8080)).toBe(`8080 ${podB.ip}`);
          expect(await echoWho(sim.host.path, podA.ip, 8080)).toBe(`8080 ${CUSTOM_PROBE_SOURCE}`);
          expect(await echoWho(podA.path, podB.ip, 8080)).toBe(`15001 ${podA.ip}`);
          await network.removePod(pod);

          // The same pod fully enrolled: B's traffic goes to 15006, and only the in-pod ACCEPT of the configured
          // source keeps the host's probe from going there too.
          await network.addPod({ ...pod, ingressOnly: false });
          expect(await echoWho(podB.path, podA.ip, 8080)).toBe(`15006 ${podB.ip}`);
          expect(await echoWho(sim.host.path, podA.ip, 8080)).toBe(`8080 ${CUSTOM_PROBE_SOURCE}`);
          await network.removePod(pod);
          expect(await echoWho(podA.path, podB.ip, 8080)).toBe('refused');
        } finally {
          await network.stop();
        }
      });
      expect(served).toContain(`conn 15001 ${podA.ip}\n`);
    });

    it("brings the app's replies to inbound HBONE back to the in-pod proxy through the connmark, also in ingress-only mode", async () => {
      const { served, podB } = await onTwoPods('t', [8080], async ({ sim, podA, podB }) => {
        // The proxy hands B's HBONE connection to the app with B's address: without the agent's rules the app's
        // reply to that address leaves by eth0, and the proxy never sees it.
        expect(await hboneDelivery(podA, podB.ip)).toBe('timeout');
        const network = new NodeNetwork({ hostNetns: sim.host.path });
        await network.start();
        try {
          for (const ingressOnly of [true, false]) {
            const pod = { uid: podA.uid, ips: [podA.ip], netns: podA.path, ingressOnly };
            await network.addPod(pod);
            expect(await hboneDelivery(podA, podB.ip)).toBe(`8080 ${podB.ip}`);
            if (ingressOnly) {
              // Without the connmark rule (what ingress-only mode used to apply), the replies are lost again.
              const ipt = await Iptables.open({ netns: podA.path });
              await ipt.restore('*mangle\n-F ISTIO_PRERT\nCOMMIT\n');
              expect(await hboneDelivery(podA, podB.ip)).toBe('timeout');
            }
            await network.removePod(pod);
          }
        } finally {
          await network.stop();
        }
      });
      expect(served).toContain(`conn 8080 ${podB.ip}\n`);
    });
  },
  missingBinary('ipset', 'iptables-nft-save', 'iptables-legacy-save', 'iptables-nft-restore', 'python3'),
);
