import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { nodeNetworkContract } from './node-network-contract.js';
import { fakeWorld, kernelWorld } from './world.js';

nodeNetworkContract('fakes', fakeWorld);

describePrivileged(
  'NodeNetwork against the kernel',
  () => {
    nodeNetworkContract('kernel', kernelWorld);
  },
  missingBinary('ipset', 'iptables-nft-restore'),
);
