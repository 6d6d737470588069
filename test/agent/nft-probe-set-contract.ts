// NftProbeSet behaviour, the shared ownership cases (probe-ownership-contract.ts) on nft sets, plus what only nft
// sets show: run against the kernel and against FakeNftables, the sets read back through the same Nftables client.
import { expect, it } from 'vitest';

import { NftProbeSet } from '../../lib/agent/nft-probe-set.js';
import type { Nftables } from '../../lib/index.js';
import { probeOwnershipContract, type ProbeKind, type ProbeWorld } from './probe-ownership-contract.js';

/** NftBackend opens an Nftables client on a fresh world (kernel namespace or fake) and cleans it up. */
export type NftBackend = ProbeWorld<Nftables>;

const TABLE = { family: 'inet', name: 'istio-ambient-nat' } as const;

const nftProbes: ProbeKind<Nftables> = {
  title: 'NftProbeSet',
  make: (nftables, options) => new NftProbeSet({ nftables, ...options }),
  entries: async (nft, set) =>
    (await nft.elements(TABLE, set)).map((e) => ({ ip: e.address, comment: e.comment })).sort((a, b) => a.ip.localeCompare(b.ip)),
};

export function nftProbeSetContract(name: string, backend: () => NftBackend): void {
  probeOwnershipContract(name, nftProbes, backend, (current) => {
    it('creates both family sets with comments, and accepts them again', async () => {
      const { client: nft, probes } = current();
      await probes.ensure();
      const sets = (await nft.sets(TABLE)).filter((s) => s.table === TABLE.name);
      expect(sets.map((s) => [s.name, s.type, s.comment])).toEqual([
        ['istio-inpod-probes-v4', 'ipv4_addr', 'UUID of the pods that are part of ambient mesh'],
        ['istio-inpod-probes-v6', 'ipv6_addr', 'UUID of the pods that are part of ambient mesh'],
      ]);
    });

    it('detects a duplicate in the kernel: an element added behind its back is read back as the owner', async () => {
      const { client: nft, probes, conflicts } = current();
      await nft.addElement(TABLE, 'istio-inpod-probes-v4', { address: '10.0.0.9', comment: 'uid-elsewhere' });
      expect(probes.owner('10.0.0.9')).toBeUndefined();
      expect(await probes.add('10.0.0.9', 'uid-b')).toBe('taken-over');
      expect(conflicts).toEqual([{ ip: '10.0.0.9', previousOwner: 'uid-elsewhere', newOwner: 'uid-b' }]);
      expect(await nftProbes.entries(nft, 'istio-inpod-probes-v4')).toEqual([{ ip: '10.0.0.9', comment: 'uid-b' }]);
    });

    it('fails an add the kernel refuses with a typed error, the view unchanged', async () => {
      const { client: nft, probes } = current();
      await nft.run(nft.transaction().deleteSet({ family: 'inet', table: TABLE.name, name: 'istio-inpod-probes-v4' }));
      await expect(probes.add('10.0.0.1', 'uid-a')).rejects.toMatchObject({ name: 'NftablesError', code: 'ENOENT' });
      expect(probes.owner('10.0.0.1')).toBeUndefined();
    });
  });
}
