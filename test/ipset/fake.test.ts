import { Ipset } from '../../lib/index.js';
import { FakeNetlink } from '../../lib/testing/index.js';
import { probeSetContract } from '../agent/probe-set-contract.js';
import { ipsetContract } from './contract.js';

// The same contract as test/ipset/kernel.test.ts, through the same C++ codec, against the fake kernel: no root.
const fakeBackend = () => ({
  open: () => Ipset.open({ netlink: new FakeNetlink() }),
  cleanup: () => undefined,
});

ipsetContract('FakeNetlink', fakeBackend);
probeSetContract('FakeNetlink', fakeBackend);
