// The nftables contracts on the kernel, in a fresh namespace per test (deleted afterwards, also on failure).
import { Nftables } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { type NftablesBackend, nftablesContract } from './contract.js';
import { nftablesRulesetContract } from './ruleset-contract.js';

function kernel(prefix: string): () => NftablesBackend {
  return () => {
    let ns: TestNetns | undefined;
    return {
      open: () => {
        ns = new TestNetns(prefix);
        return Nftables.open({ netns: ns.path });
      },
      cleanup: () => ns?.delete(),
    };
  };
}

describePrivileged('nftables contract on the kernel', () => {
  nftablesContract('kernel', kernel('nftc'));
});

describePrivileged('nftables ruleset contract on the kernel', () => {
  nftablesRulesetContract('kernel', kernel('nftr'));
});
