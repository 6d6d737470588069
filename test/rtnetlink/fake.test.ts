// The rtnetlink contract through the same C++ codec, against FakeRtnetlink: no root.
import { Rtnetlink } from '../../lib/index.js';
import { FakeRtnetlink } from '../../lib/testing/index.js';
import { rtnetlinkContract } from './contract.js';

rtnetlinkContract('FakeRtnetlink', () => ({
  open: () => Rtnetlink.open({ netlink: new FakeRtnetlink() }),
  cleanup: () => undefined,
}));
