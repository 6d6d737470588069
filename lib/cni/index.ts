/**
 * lib/cni: the pod's way in. CniServer answers the invocations podnet-cni forwards (their wire codec, wire.ts, is
 * the podnet/cni-wire subpath), installCniPlugin puts the plugin and its conflist entry on the host, findPodNetns
 * finds running pods' namespaces.
 */
export { CniServer, type CniServerOptions, type CniRequest, type CniHandler } from './server.js';
export { CniError, CNI_ERROR_CODES, isCniError } from './errors.js';
export {
  CNI_VERSIONS,
  type CniVersion,
  type CniResult,
  type CniInterface,
  type CniIpConfig,
  type CniRoute,
  type CniDns,
} from './result.js';
export type { CniCommand, CniPod, CniAttachment, CniNetworkConfig } from './request.js';
export {
  installCniPlugin,
  uninstallCniPlugin,
  CniPluginInstallation,
  DEFAULT_CNI_SOCKET_PATH,
  DEFAULT_CNI_TIMEOUT_MS,
  type InstallCniPluginOptions,
  type UninstallCniPluginOptions,
  type UninstallOutcome,
  type CniPluginInstallationEvents,
} from './install.js';
export { CniInstallError, type CniInstallErrorCode, type CniInstallErrorContext } from './install-errors.js';
export { cniPluginPath } from './plugin-path.js';
export { PODNET_PLUGIN_TYPE, type PodnetConfEntry } from './conflist.js';
export {
  findPodNetns,
  PodNetnsScan,
  type PodToFind,
  type FindPodNetnsOptions,
  type PodNetnsCandidate,
  type FoundPodNetns,
  type PodNetnsMissReason,
  type PodNetnsMiss,
  type PodNetnsScanStats,
} from './find-pod-netns.js';
