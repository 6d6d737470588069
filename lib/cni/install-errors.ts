/**
 * CniInstallError: what installCniPlugin, uninstallCniPlugin and cniPluginPath refuse (a network config that cannot be
 * parsed or used, a conflist name taken by a file podnet did not write, a plugin binary that is nowhere).
 */
import { PodnetError } from '../errors.js';

/** CniInstallErrorCode is a code a CniInstallError carries. */
export type CniInstallErrorCode =
  | 'ERR_CNI_CONFIG_PARSE'
  | 'ERR_CNI_CONFIG_INVALID'
  | 'ERR_CNI_CONFIG_CONFLICT'
  | 'ERR_CNI_PLUGIN_NOT_FOUND';

/** CniInstallErrorContext is what a CniInstallError is about besides its code. */
export interface CniInstallErrorContext {
  /** The network config file that was refused (ERR_CNI_CONFIG_*). */
  file?: string;
  /** The places the plugin binary was looked for (ERR_CNI_PLUGIN_NOT_FOUND). */
  paths?: readonly string[];
}

/**
 * CniInstallError is a refusal of the CNI installer: `code` is `ERR_CNI_CONFIG_PARSE` (the `file` is not JSON, or not
 * UTF-8; the parser's error is the `cause`), `ERR_CNI_CONFIG_INVALID` (JSON, but not a network config podnet can chain
 * into: no object, no `plugins` list, a single-plugin config without `type` or `name`), `ERR_CNI_CONFIG_CONFLICT` (the
 * `.conflist` a `.conf` would become exists and podnet did not write it) or `ERR_CNI_PLUGIN_NOT_FOUND` (no plugin
 * binary at any of `paths`). Nothing was changed when one is thrown.
 */
export class CniInstallError extends PodnetError {
  declare readonly code: CniInstallErrorCode;
  /** The network config file that was refused. */
  readonly file: string | undefined;
  /** The places the plugin binary was looked for. */
  readonly paths: readonly string[] | undefined;

  constructor(message: string, code: CniInstallErrorCode, context: CniInstallErrorContext = {}, options?: { cause?: unknown }) {
    super(message, code, options);
    this.file = context.file;
    this.paths = context.paths;
  }
}
