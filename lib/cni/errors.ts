/**
 * CniError: a failure answered to the runtime as a CNI error (`{cniVersion, code, msg, details}` on stdout, exit
 * status 1), with the CNI spec's numeric code, and the codes podnet itself answers with.
 */
import { PodnetError } from '../errors.js';

/** CNI_ERROR_CODES are the CNI spec's well-known error codes and podnet's own (100 and up). */
export const CNI_ERROR_CODES = {
  /** Incompatible CNI version: a cniVersion podnet does not support, a prevResult it cannot convert. */
  incompatibleVersion: 1,
  /** Unsupported field in the network configuration. */
  unsupportedField: 2,
  /** Container unknown or does not exist. */
  unknownContainer: 3,
  /** Invalid necessary environment variables (CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME, CNI_NETNS, CNI_ARGS). */
  invalidEnvironment: 4,
  /** I/O failure. */
  ioFailure: 5,
  /** Failed to decode content: the config is not a JSON object. */
  decodingFailure: 6,
  /** Invalid network config: a missing name or cniVersion, a chained ADD or CHECK without prevResult. */
  invalidNetworkConfig: 7,
  /** Try again later: a transient failure (a retryable AgentError). */
  tryAgainLater: 11,
  /** STATUS: the plugin is not available (ADD would fail). */
  notAvailable: 50,
  /** STATUS: not available, and existing containers may have limited connectivity. */
  notAvailableLimitedConnectivity: 51,
  /** podnet: a handler failed with an error that maps to no well-known code (its own `code` is in details). */
  handlerFailed: 100,
  /** podnet: the peer's uid is neither root nor in allowedUids; no handler ran. */
  peerNotAllowed: 101,
} as const;

/**
 * CniError is a CNI error with its numeric CNI code (`cniCode`), message (`msg`) and `details`. Handlers may throw
 * one to answer with a code of their choice (51 from status(), 3 from check(), ...). Its PodnetError `code` is
 * `ERR_CNI`.
 */
export class CniError extends PodnetError {
  declare readonly code: 'ERR_CNI';
  /** The numeric CNI error code the runtime sees (1..255 fits the spec's table; 100 and up are podnet's own). */
  readonly cniCode: number;
  /** The error's details, as answered (for podnet's own answers: the cause's `code`, or what was wrong). */
  readonly details: string;

  constructor(cniCode: number, message: string, details = '', options?: { cause?: unknown }) {
    super(message, 'ERR_CNI', options);
    this.cniCode = cniCode;
    this.details = details;
  }
}

/** isCniError tells whether err is a CniError. */
export function isCniError(err: unknown): err is CniError {
  return err instanceof CniError;
}
