/**
 * podnet/testing: fakes for tests of code that uses podnet, each held to the real thing by the same contract tests.
 * FakeIpsetKernel stands in for the kernel's ipset netlink subsystem
 * (`Ipset.open({ netlink: new FakeIpsetKernel() })`), FakeRtnetlink and FakeNftables for NETLINK_ROUTE and nf_tables
 * (all three on the shared netlink-kernel/ codec), FakeIptables for iptables-restore/-save
 * (`Iptables.open({ runner: new FakeIptables() })`), FakeZtunnel for the node proxy on the other end of the
 * agent's ZDS socket (`await FakeZtunnel.connect(path)`). SimulatedNode and echo-who are the opposite: real
 * namespaces, veths and sockets for tests that need packets (root only).
 *
 * @module podnet/testing
 */
export { FakeIpsetKernel, type FakeIpsetKernelOptions } from './fake-ipset/fake-ipset-kernel.js';
export { FakeNetlink, type FakeNetlinkOptions, type FakeNetlinkSnapshot } from './fake-netlink/fake-netlink.js';
export type { FaultMatch, IpsetCommandName } from './fake-ipset/faults.js';
export type {
  FakeEntrySnapshot,
  FakeIpsetSnapshot,
  FakeSetOptions,
  FakeSetSnapshot,
} from './fake-ipset/snapshot.js';
export type { TypeName as FakeSetType } from './fake-ipset/model.js';
export { FakeRtnetlink, type FakeLinkOptions, type FakeRtnetlinkOptions } from './fake-rtnetlink/fake-rtnetlink.js';
export type { RtnetlinkFaultMatch, RtnetlinkRequestName } from './fake-rtnetlink/faults.js';
export type {
  FakeAddressSnapshot,
  FakeLinkSnapshot,
  FakeRouteSnapshot,
  FakeRtnetlinkSnapshot,
  FakeRuleSnapshot,
} from './fake-rtnetlink/snapshot.js';
export { FakeNftables, type FakeNftablesOptions, type FakeNftablesSnapshot, type FakeNftTableSnapshot, type FakeNftChainSnapshot, type FakeNftRuleSnapshot, type FakeNftSetSnapshot, type FakeNftElementSnapshot, type NftFaultMatch, type NftMessageName } from './fake-nftables/index.js';
export { FakeIptables, type FakeIptablesDump } from './fake-iptables.js';
export { FakeNode, FakeNetnsOpener, type FakeNodeProxy } from './fake-node.js';
export {
  FakeZtunnel,
  type FakeZtunnelDisconnect,
  type FakeZtunnelMessage,
  type FakeZtunnelOptions,
  type FakeZtunnelProtocolError,
  type FakeZtunnelProtocolErrorKind,
  type FakeZtunnelWaitOptions,
  type FakeZtunnelWorkload,
} from './fake-ztunnel.js';
export { SimulatedNode, SIM_GATEWAY, type SimulatedNodeOptions, type SimNamespace, type SimPod } from './sim-node.js';
export { startEchoWho, echoWho, echoWhoServerArgv, echoWhoClientArgv, type EchoWhoServer, type EchoWhoServerOptions } from './echo-who.js';
