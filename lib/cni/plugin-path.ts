/**
 * Where the package keeps its podnet-cni plugin binary: the prebuild an installed package carries, else the source
 * build's.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { PODNET_PLUGIN_TYPE } from './conflist.js';
import { CniInstallError } from './install-errors.js';

// This module sits two levels under the package root both as source (lib/cni/) and as built (dist/cni/).
const packageRoot = fileURLToPath(new URL('../../', import.meta.url));

/**
 * cniPluginCandidates lists where the plugin binary may be under root, in the order they are tried:
 * `prebuilds/linux-<arch>/podnet-cni`, then `build/Release/podnet-cni`.
 */
export function cniPluginCandidates(root: string = packageRoot): string[] {
  return [join(root, 'prebuilds', `linux-${process.arch}`, PODNET_PLUGIN_TYPE), join(root, 'build', 'Release', PODNET_PLUGIN_TYPE)];
}

/**
 * cniPluginPathIn is the first of cniPluginCandidates(root) that is a regular file. Throws CniInstallError
 * `ERR_CNI_PLUGIN_NOT_FOUND` (with the `paths` tried) when none is.
 */
export function cniPluginPathIn(root: string): string {
  const paths = cniPluginCandidates(root);
  for (const path of paths) {
    if (statSync(path, { throwIfNoEntry: false })?.isFile() === true) return path;
  }
  throw new CniInstallError(
    `podnet-cni plugin binary not found (looked for ${paths.map((p) => `'${p}'`).join(' and ')}): build it from source or install a package with prebuilds`,
    'ERR_CNI_PLUGIN_NOT_FOUND',
    { paths },
  );
}

/**
 * cniPluginPath is where this package's podnet-cni binary is: its prebuild for this architecture when the package
 * carries one, else the source build's `build/Release/podnet-cni`. Throws CniInstallError `ERR_CNI_PLUGIN_NOT_FOUND`
 * when neither exists.
 */
export function cniPluginPath(): string {
  return cniPluginPathIn(packageRoot);
}
