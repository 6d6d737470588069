/** lib/cni: the pod's way in. CniServer answers the invocations podnet-cni forwards; the wire codec they share. */
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
  CniWireError,
  WIRE_LIMITS,
  WIRE_VERSION,
  decodeRequestHeader,
  encodeRequest,
  encodeAnswer,
  decodeAnswerHeader,
  type WireRequestHeader,
  type WireAnswer,
  type WireAnswerHeader,
} from './wire.js';
// The installer (lib/cni/install.ts, lib/cni/plugin-path.ts) and the /proc discovery (lib/cni/find-pod-netns.ts)
// add their exports here.
