import { Ipset } from '../../lib/index.js';
import { FakeIpsetKernel } from '../../lib/testing/index.js';
import { probeSetContract } from '../agent/probe-set-contract.js';
import { ipsetContract } from './contract.js';

// The same contract as test/ipset/kernel.test.ts, through the same C++ codec, against the fake kernel: no root.
const fakeBackend = () => ({
  open: () => Ipset.open({ netlink: new FakeIpsetKernel() }),
  cleanup: () => undefined,
});

ipsetContract('FakeIpsetKernel', fakeBackend);
probeSetContract('FakeIpsetKernel', fakeBackend);
