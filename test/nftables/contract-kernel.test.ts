// The nftables contract on the kernel, in a fresh namespace per test (deleted afterwards, also on failure).
import { Nftables } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { nftablesContract } from './contract.js';
import { nftablesRulesetContract } from './ruleset-contract.js';

describePrivileged('nftables contract on the kernel', () => {
  nftablesContract('kernel', () => {
    let ns: TestNetns | undefined;
    return {
      open: () => {
        ns = new TestNetns('nftc');
        return Nftables.open({ netns: ns.path });
      },
      cleanup: () => ns?.delete(),
    };
  });
});

describePrivileged('nftables ruleset contract on the kernel', () => {
  nftablesRulesetContract('kernel', () => {
    let ns: TestNetns | undefined;
    return {
      open: () => {
        ns = new TestNetns('nftr');
        return Nftables.open({ netns: ns.path });
      },
      cleanup: () => ns?.delete(),
    };
  });
});
