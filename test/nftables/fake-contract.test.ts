// The nftables contracts of contract-kernel.test.ts, through the same client and C++ codec, on FakeNftables: no root.
import { Nftables } from '../../lib/index.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { type NftablesBackend, nftablesContract } from './contract.js';
import { nftablesRulesetContract } from './ruleset-contract.js';

const fake = (): NftablesBackend => ({
  open: () => Nftables.open({ netlink: new FakeNftables() }),
  cleanup: () => undefined,
});

nftablesContract('FakeNftables', fake);
nftablesRulesetContract('FakeNftables', fake);
