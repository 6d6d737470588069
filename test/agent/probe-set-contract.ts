// ProbeSet behaviour, run against the kernel and against FakeIpsetKernel: the shared ownership cases on ipset, plus what
// only ipset shows.
import { expect, it } from 'vitest';

import { ProbeSet } from '../../lib/agent/probe-set.js';
import type { Ipset } from '../../lib/index.js';
import type { IpsetBackend } from '../ipset/contract.js';
import { probeOwnershipContract, type ProbeKind } from './probe-ownership-contract.js';

const ipsetProbes: ProbeKind<Ipset> = {
  title: 'ProbeSet',
  make: (ipset, options) => new ProbeSet({ ipset, ...options }),
  entries: async (ipset, set) => (await ipset.list(set)).entries,
};

export function probeSetContract(name: string, backend: () => IpsetBackend): void {
  probeOwnershipContract(name, ipsetProbes, backend, (current) => {
    it('creates both family sets with comments, and accepts them again', async () => {
      const { client: ipset, probes } = current();
      await probes.ensure();
      expect((await ipset.listNames()).sort()).toEqual(['istio-inpod-probes-v4', 'istio-inpod-probes-v6']);
      expect(await ipset.header('istio-inpod-probes-v6')).toMatchObject({ type: 'hash:ip', family: 'inet6', comment: true });
    });
  });
}
