/** podnet/testing: fakes that implement podnet's interfaces for tests without root. */
export { FakeIptables, type FakeIptablesDump } from './fake-iptables.js';
