// The packet cases both backends prove alike on a SimulatedNode (packets.test.ts for iptables, nft-packets.test.ts
// for nftables): an ingress-only pod's inbound left alone while its outbound goes to 15001, a configured probe
// source used on both sides, and inbound HBONE's replies brought back to the in-pod proxy only by the connmark, in
// either mode. What a backend shows of it in its own rules is checked by its hooks.
import { expect, it } from 'vitest';

import { NodeNetwork, type NodeNetworkOptions } from '../../lib/index.js';
import { echoWho } from '../../lib/testing/index.js';
import { hboneDelivery, onTwoPods } from './simulated-pods.js';

export const CUSTOM_PROBE_SOURCE = '169.254.10.1';

export interface PacketBackend {
  /** The namespace-name prefix of its SimulatedNode. */
  prefix: string;
  /** NodeNetwork's options besides hostNetns (and the probe source these cases set). */
  options: Omit<NodeNetworkOptions, 'hostNetns'>;
  /** Takes the connmark rule out of the pod's mangle prerouting chain, as ingress-only mode used to apply it. */
  flushConnmark(podNetns: string): Promise<void>;
  /** Checks the host's rules once an ingress-only pod is added with CUSTOM_PROBE_SOURCE. */
  hostShowsProbeSource?(hostNetns: string): Promise<void>;
  /** Checks the pod's rules after an HBONE connection was delivered. */
  podShowsConnmark?(podNetns: string): Promise<void>;
}

export function sharedPacketCases(backend: PacketBackend): void {
  it("leaves an ingress-only pod's inbound alone but redirects its outbound, and SNATs probes to a configured source", async () => {
    // Pod B has no server: a connection from A that is not redirected to A's own 15001 is refused.
    const { served, podA } = await onTwoPods(backend.prefix, [8080, 15001, 15006], async ({ sim, podA, podB }) => {
      const network = new NodeNetwork({ ...backend.options, hostNetns: sim.host.path, probeSourceV4: CUSTOM_PROBE_SOURCE });
      await network.start();
      try {
        const pod = { uid: podA.uid, ips: [podA.ip], netns: podA.path, ingressOnly: true };
        await network.addPod(pod);
        await backend.hostShowsProbeSource?.(sim.host.path);
        expect(await echoWho(podB.path, podA.ip, 8080)).toBe(`8080 ${podB.ip}`);
        expect(await echoWho(sim.host.path, podA.ip, 8080)).toBe(`8080 ${CUSTOM_PROBE_SOURCE}`);
        expect(await echoWho(podA.path, podB.ip, 8080)).toBe(`15001 ${podA.ip}`);
        await network.removePod(pod);

        // The same pod fully enrolled: B's traffic goes to 15006, and only the in-pod accept of the configured
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
    const { served, podB } = await onTwoPods(backend.prefix, [8080], async ({ sim, podA, podB }) => {
      // The proxy hands B's HBONE connection to the app with B's address: without the agent's rules the app's
      // reply to that address leaves by eth0, and the proxy never sees it.
      expect(await hboneDelivery(podA, podB.ip)).toBe('timeout');
      const network = new NodeNetwork({ ...backend.options, hostNetns: sim.host.path });
      await network.start();
      try {
        for (const ingressOnly of [true, false]) {
          const pod = { uid: podA.uid, ips: [podA.ip], netns: podA.path, ingressOnly };
          await network.addPod(pod);
          expect(await hboneDelivery(podA, podB.ip)).toBe(`8080 ${podB.ip}`);
          await backend.podShowsConnmark?.(podA.path);
          if (ingressOnly) {
            // Without the connmark rule (what ingress-only mode used to apply), the replies are lost again.
            await backend.flushConnmark(podA.path);
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
}
