/**
 * podnet: typed, mockable Linux host and pod networking for Node.js: network namespaces, ipset over netlink,
 * iptables and nftables rule sets, policy routes, processes inside a namespace, the node agent layer and the node
 * proxy handoff. Every failure is a PodnetError with a stable `code`; test for it with the predicates
 * (isNotFound, isAlreadyExists), never with the message.
 *
 * @module podnet
 */
export { Netns, NETNS_RUN_DIR, type NetnsLike } from './netns.js';
export {
  PodnetError,
  PodnetSystemError,
  InvalidArgumentError,
  isNotFound,
  isAlreadyExists,
  ProcessTimeoutError,
  ProcessOutputLimitError,
  type SystemErrorContext,
  type ProcessErrorContext,
} from './errors.js';
export { KernelError, IpsetError, type KernelErrorContext, type IpsetErrorContext } from './errors.js';
export { Ipset, type IpsetOpenOptions } from './ipset/client.js';
export type {
  IpsetType,
  IpsetFamily,
  IpsetProto,
  IpsetEntry,
  IpsetListedEntry,
  IpsetCreateOptions,
  IpsetHeader,
  IpsetListing,
  IpsetBatchFailure,
  IpsetBatchResult,
} from './ipset/types.js';
export type { NetlinkPeer } from './netlink/peer.js';
export type { NetlinkClientOpenOptions, NetlinkOpenOptions } from './netlink/open-options.js';
export { runInNetns, startInNetns, SAFE_PATH, type RunOptions, type RunResult, type StartedProgram } from './spawn.js';
export * from './unix/index.js';
export * from './iptables/index.js';
export * from './rtnetlink/index.js';
export { RtnetlinkError, type RtnetlinkErrorContext } from './errors.js';
export * from './nftables/index.js';
export { NftablesError, NftablesGenerationError, isGenerationChanged, type NftablesErrorContext } from './errors.js';
export {
  IptablesRestoreError,
  IptablesLockTimeoutError,
  IptablesCommandError,
  type IptablesFailureReason,
  type IptablesRestoreErrorFields,
} from './errors.js';
export { NodeNetwork, checkNodePreflight, type NodeNetworkOptions } from './preflight/node-network.js';
export type { NodeNetworkEvents, PodInfo, NodeVerifyReport, PodVerifyReport, SnapshotReport, WorkloadProxy } from './agent/node-network.js';
export type { NodePreflight, NodePreflightRequest, PreflightWiring } from './agent/node-preflight.js';
export type { RulesCheck, RuleDrift, ProbeSetState } from './agent/rule-backend.js';
export { INPOD_ROUTING, inpodRoute, inpodRoutingRule, type PodRoutingState } from './agent/routes.js';
export { ProbeSet, normalizeIp, type ProbeSetOptions, type ProbeConflict, type ProbeOwnerMismatch, type ConflictPolicy, type AddOutcome, type RemoveOutcome } from './agent/probe-set.js';
export { hostProbeRules, inpodRules, INPOD, type HostProbeRulesConfig, type InpodRulesConfig } from './agent/rules.js';
export { AgentError, ProbeOwnerConflictError, type AgentStep } from './agent/errors.js';
export {
  NFT_PROBE_SET_COMMENT,
  NFT_TABLES,
  nftHostRules,
  nftInpodRules,
  type NftHostRulesConfig,
  type NftInpodRulesConfig,
} from './agent/nft-rules.js';
export { NftProbeSet, type NftProbeSetOptions } from './agent/nft-probe-set.js';
export { KubeletUidError, detectKubeletUid } from './agent/nft-kubelet.js';
export type { Logger, LogFields } from './logger.js';
export {
  DIAGNOSTICS_CHANNELS,
  type DiagnosticsChannelName,
  type DiagnosticsMessages,
  type OperationTiming,
  type IpsetRequestMessage,
  type IpsetRequestMode,
  type IptablesRunMessage,
  type IptablesRunKind,
  type NetnsSpawnMessage,
  type AgentStepMessage,
  type CniRequestMessage,
  type PreflightCheckMessage,
} from './diagnostics.js';
export type { AgentNetns, NetnsOpener, IptablesFactory, IptablesRequest, NftablesFactory, RtnetlinkFactory } from './agent/backends.js';
export {
  ZdsError,
  isZdsProtocolError,
  ProxyError,
  ProxyAckError,
  type ZdsErrorCode,
  type ZdsErrorContext,
  type ProxyErrorContext,
} from './proxy/errors.js';
export {
  ZtunnelServer,
  type ZtunnelServerOptions,
  type ZtunnelServerEvents,
  type ZtunnelWorkload,
  type EnrolledWorkload,
  type SnapshotOutcome,
  type NetnsFd,
} from './proxy/ztunnel-server.js';
export type { ProxyPeer, DisconnectReason } from './proxy/connection.js';
export type { ZdsWorkloadInfo } from './proxy/zds-messages.js';
export * from './cni/index.js';
export * from './preflight/index.js';
