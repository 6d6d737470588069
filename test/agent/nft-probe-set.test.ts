// NftProbeSet's contract on FakeNftables (no root) and on the kernel, in a fresh namespace per test; and on the
// kernel, interop with nft: the owners podnet writes are the comments `nft -j list set` prints, and the elements
// nft -f writes with comments are the owners a restarted NftProbeSet loads.
import { expect, it } from 'vitest';

import { Nftables } from '../../lib/index.js';
import { NftProbeSet } from '../../lib/agent/nft-probe-set.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { nftProbeSetContract } from './nft-probe-set-contract.js';

nftProbeSetContract('FakeNftables', () => ({ open: () => Nftables.open({ netlink: new FakeNftables() }), cleanup: () => undefined }));

describePrivileged('NftProbeSet against the kernel', () => {
  nftProbeSetContract('kernel', () => {
    let ns: TestNetns | undefined;
    return {
      open: () => {
        ns = new TestNetns('nftprobe');
        return Nftables.open({ netns: ns.path });
      },
      cleanup: () => ns?.delete(),
    };
  });
});

describePrivileged(
  'NftProbeSet and nft',
  () => {
    it('owners are the element comments nft prints, and nft-written comments load as owners', async () => {
      using ns = new TestNetns('nftprobenft');
      const nft = await Nftables.open({ netns: ns.path });
      try {
        const probes = new NftProbeSet({ nftables: nft });
        await probes.ensure();
        await probes.add('10.244.0.5', 'pod-uid-a');
        await probes.add('fd00::5', 'pod-uid-b');
        const listed = JSON.parse(ns.exec(['nft', '-j', 'list', 'set', 'inet', 'istio-ambient-nat', 'istio-inpod-probes-v4'])) as {
          nftables: { set?: { comment?: string; elem?: unknown[] } }[];
        };
        const set = listed.nftables.find((e) => e.set)!.set!;
        expect(set.comment).toBe('UUID of the pods that are part of ambient mesh');
        expect(set.elem).toEqual([{ elem: { val: '10.244.0.5', comment: 'pod-uid-a' } }]);

        ns.exec(['nft', '-f', '-'], 'add element inet istio-ambient-nat istio-inpod-probes-v4 { 10.244.0.6 comment "pod-uid-c" }\n');
        const restarted = new NftProbeSet({ nftables: nft });
        await restarted.load();
        expect(restarted.entries().sort((a, b) => a.ip.localeCompare(b.ip))).toEqual([
          { ip: '10.244.0.5', owner: 'pod-uid-a' },
          { ip: '10.244.0.6', owner: 'pod-uid-c' },
          { ip: 'fd00::5', owner: 'pod-uid-b' },
        ]);
        // nft's own add of a duplicate is silently accepted; podnet's is a detected conflict.
        ns.exec(['nft', 'add', 'element', 'inet', 'istio-ambient-nat', 'istio-inpod-probes-v4', '{ 10.244.0.6 comment "pod-uid-d" }']);
        expect(await restarted.add('10.244.0.6', 'pod-uid-d')).toBe('taken-over');
        expect(await restarted.remove('10.244.0.6', 'pod-uid-c')).toBe('mismatch');
      } finally {
        nft.close();
      }
    });
  },
  missingBinary('nft'),
);
