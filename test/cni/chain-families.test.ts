// IPv4-only, IPv6-only and dual-stack pods through the real chain (bridge with host-local ranges per family,
// loopback, podnet-cni) and an agent whose NodeNetwork handles IPv6: every address of the pod gets its probe entry,
// and one outbound connection per family is redirected to the outbound port inside the pod. IPv4 lands on the
// ztunnel player (which listens on 0.0.0.0 only); IPv6 lands on an IPv6 listener the test runs beside it, which
// reads the original destination from conntrack.
import { expect, it } from 'vitest';

import { echoWho } from '../../lib/testing/index.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { CNI_PLUGIN_DIR, ChainNode, DEADLINE_MS, isEvent, type Family } from './helpers/chain-node.js';

const cases: { families: Family; backend: 'iptables' | 'nftables'; want: (4 | 6)[] }[] = [
  { families: 'ipv4', backend: 'iptables', want: [4] },
  { families: 'ipv6', backend: 'nftables', want: [6] },
  { families: 'dual', backend: 'iptables', want: [4, 6] },
];

describePrivileged(
  'the CNI chain per address family',
  () => {
    it.each(cases)('$families pod ($backend): a probe entry per address, an outbound connection per family redirected', async ({ families, backend, want }) => {
      await using node = await ChainNode.create({ backend, families });
      const rt = node.runtime();
      const pod = node.newPod();

      const result = (await rt.add(pod.attachment)) as { ips: { address: string }[] };
      const ips = result.ips.map((i) => i.address.split('/')[0]!);
      expect(ips.map((ip) => (ip.includes(':') ? 6 : 4))).toEqual(want);
      expect((await node.probeEntries()).sort((a, b) => a.ip.localeCompare(b.ip))).toEqual(
        ips.map((ip) => ({ ip, owner: pod.uid })).sort((a, b) => a.ip.localeCompare(b.ip)),
      );
      const report = await node.network.verify({ pods: [{ uid: pod.uid, ips, netns: pod.ns.path }] });
      expect(report.pods[0]).toMatchObject({ inSync: true, netns: 'ok' });
      // Both families get the policy rule and route once the agent handles IPv6, whatever the pod's addresses.
      expect(report.pods[0]!.routes).toEqual(
        (families === 'ipv4' ? [4] : [4, 6]).map((family) => ({ family, rule: true, route: true })),
      );
      await node.player.waitFor(isEvent('ack', { request: 'add', uid: pod.uid, error: '' }), DEADLINE_MS);

      if (want.includes(4)) {
        const before = node.player.events.length;
        expect(await echoWho(pod.ns.path, '192.0.2.10', 8080)).toBe(`ztunnel-player ${pod.uid} 192.0.2.10:8080`);
        expect(await node.player.waitFor(isEvent('conn'), DEADLINE_MS, before)).toMatchObject({ uid: pod.uid, origDst: '192.0.2.10:8080', origDstSource: 'SO_ORIGINAL_DST' });
      }
      if (want.includes(6)) {
        const before = node.player.events.length;
        expect(await echoWho(pod.ns.path, '2001:db8::10', 8080)).toBe(`ztunnel-player ${pod.uid} [2001:db8::10]:8080`);
        expect(await node.player.waitFor(isEvent('conn'), DEADLINE_MS, before)).toMatchObject({
          uid: pod.uid,
          origDst: '[2001:db8::10]:8080',
          origDstSource: 'IP6T_SO_ORIGINAL_DST',
        });
      }

      await rt.del(pod.attachment, result);
      expect(await node.probeEntries()).toEqual([]);
      expect(node.proxy.workloads).toEqual([]);
      expect(node.ipamReservations()).toEqual([]);
      expect(node.player.events.filter(isEvent('error'))).toEqual([]);
    });
  },
  missingBinary('ipset', 'iptables-nft-restore', 'nft', 'python3', `${CNI_PLUGIN_DIR}/bridge`, `${CNI_PLUGIN_DIR}/host-local`, `${CNI_PLUGIN_DIR}/loopback`),
);
