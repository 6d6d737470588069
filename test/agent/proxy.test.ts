import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { proxyContract } from './proxy-contract.js';
import { fakeWorld, kernelWorld } from './world.js';

proxyContract('fakes', fakeWorld);

describePrivileged(
  'NodeNetwork and the node proxy against the kernel',
  () => {
    proxyContract('kernel', kernelWorld);
  },
  missingBinary('ipset', 'iptables-nft-restore'),
);
