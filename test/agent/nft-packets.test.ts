// NodeNetwork's nftables backend proven with real packets on a simulated node (host and pod namespaces joined by
// veths), as packets.test.ts proves the iptables path: host connections of the kubelet's uid to an enrolled pod are
// SNATed to the probe source and let through, other host sockets are not (skuid), pod-to-pod traffic is redirected
// to 15006, and removal and stop undo it all; an ingress-only pod's inbound is left alone while its outbound goes to
// 15001; a configured probe source is used on both sides; and inbound HBONE's replies find the in-pod proxy again
// through the connmark, in either mode.
import { expect, it } from 'vitest';

import { NodeNetwork, runInNetns } from '../../lib/index.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { CUSTOM_PROBE_SOURCE, sharedPacketCases } from './packet-cases.js';
import { onTwoPods } from './simulated-pods.js';

const PROBE_SOURCE = '169.254.7.127';

async function nftRuleset(path: string): Promise<string> {
  const r = await runInNetns(path, ['nft', 'list', 'ruleset'], { timeoutMs: 10_000 });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout;
}

describePrivileged(
  'NodeNetwork (nftables backend) with real packets (SimulatedNode)',
  () => {
    it("SNATs the kubelet uid's host connections to an enrolled pod, not other uids', redirects pod traffic to 15006, and undoes both", async () => {
      const { served, podB } = await onTwoPods('n', [8080, 15006], async ({ sim, podA, podB, fromHost, fromPodB }) => {
        expect(await fromHost()).toBe('8080 10.244.0.1');
        expect(await fromPodB()).toBe(`8080 ${podB.ip}`);
        const pod = { uid: podA.uid, ips: [podA.ip], netns: podA.path };
        const uid = process.getuid!();

        // The host's clients run as this process's uid: as the kubelet's, their connections are probes.
        const network = new NodeNetwork({ hostNetns: sim.host.path, backend: 'nftables', kubeletUid: uid });
        await network.start();
        try {
          await network.addPod(pod);
          const host = await nftRuleset(sim.host.path);
          expect(host).toContain(`meta l4proto tcp meta skuid ${uid} ip daddr @istio-inpod-probes-v4 counter`);
          expect(host).toContain(`${podA.ip} comment "${podA.uid}"`);
          expect(await nftRuleset(podA.path)).toContain('table inet istio-ambient-raw');
          expect(await fromHost()).toBe(`8080 ${PROBE_SOURCE}`);
          expect(await fromPodB()).toBe(`15006 ${podB.ip}`);
          await network.removePod(pod);
          expect(await nftRuleset(podA.path)).toBe('');
          expect(await fromHost()).toBe('8080 10.244.0.1');
          expect(await fromPodB()).toBe(`8080 ${podB.ip}`);
        } finally {
          await network.stop();
        }
        expect(await nftRuleset(sim.host.path)).not.toContain('istio');

        // Another kubelet uid: the same host connection is no probe, so the pod redirects it like any inbound one.
        const other = new NodeNetwork({ hostNetns: sim.host.path, backend: 'nftables', kubeletUid: uid + 4242 });
        await other.start();
        try {
          await other.addPod(pod);
          expect(await fromHost()).toBe('15006 10.244.0.1');
          await other.removePod(pod);
        } finally {
          await other.stop();
        }
      });
      expect(served).toContain(`conn 8080 ${PROBE_SOURCE}\n`);
      expect(served).toContain(`conn 15006 ${podB.ip}\n`);
      expect(served).toContain('conn 15006 10.244.0.1\n');
    });

    sharedPacketCases({
      prefix: 'n',
      options: { backend: 'nftables', kubeletUid: process.getuid!() },
      flushConnmark: async (podNetns) => {
        const flushed = await runInNetns(podNetns, ['nft', 'flush', 'chain', 'inet', 'istio-ambient-mangle', 'istio-prerouting']);
        expect(flushed.exitCode, flushed.stderr).toBe(0);
      },
      hostShowsProbeSource: async (hostNetns) => {
        expect(await nftRuleset(hostNetns)).toContain(`counter packets 0 bytes 0 snat ip to ${CUSTOM_PROBE_SOURCE}`);
      },
      podShowsConnmark: async (podNetns) => {
        // The connmark rule counted the marked packets it gave the ct mark (the SYN, then the ACKs).
        const counted = /mark & 0x00000fff == 0x00000539 counter packets (\d+) .*ct mark set/.exec(await nftRuleset(podNetns));
        expect(Number(counted?.[1])).toBeGreaterThan(0);
      },
    });
  },
  missingBinary('nft', 'python3'),
);
