// The nftables contract of contract-kernel.test.ts, through the same client and C++ codec, on FakeNftables: no root.
import { Nftables } from '../../lib/index.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { nftablesContract } from './contract.js';
import { nftablesRulesetContract } from './ruleset-contract.js';

nftablesContract('FakeNftables', () => ({
  open: () => Nftables.open({ netlink: new FakeNftables() }),
  cleanup: () => undefined,
}));

nftablesRulesetContract('FakeNftables', () => ({
  open: () => Nftables.open({ netlink: new FakeNftables() }),
  cleanup: () => undefined,
}));
