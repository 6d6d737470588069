/** FakeNftables and the types of its snapshot and fault matchers, for podnet/testing. */
export { FakeNftables, type FakeNftablesOptions } from './fake-nftables.js';
export type { NftFaultMatch, NftMessageName } from './faults.js';
export type {
  FakeNftChainSnapshot,
  FakeNftElementSnapshot,
  FakeNftRuleSnapshot,
  FakeNftSetSnapshot,
  FakeNftTableSnapshot,
  FakeNftablesSnapshot,
} from './snapshot.js';
