// The rtnetlink contract (test/rtnetlink/contract.ts, which the kernel passes) run against FakeRtnetlink through
// podnet's own client and codec: the fake must answer podnet the way the kernel does.
import { Rtnetlink } from '../../lib/index.js';
import { FakeRtnetlink } from '../../lib/testing/index.js';
import { rtnetlinkContract } from '../rtnetlink/contract.js';

rtnetlinkContract('FakeRtnetlink', () => ({
  open: () => Rtnetlink.open({ netlink: new FakeRtnetlink() }),
  cleanup: () => {},
}));
