import { Ipset } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { probeSetContract } from './probe-set-contract.js';

describePrivileged(
  'ProbeSet against the kernel',
  () => {
    probeSetContract('kernel', () => {
      const ns = new TestNetns('probe');
      return { open: () => Ipset.open({ netns: ns.path }), cleanup: () => ns.delete() };
    });
  },
  missingBinary('ipset'),
);
