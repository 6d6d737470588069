// What the packed-install test needs from the machine: a way to build the addon, npm's own CLI, and environments
// for the pack (the build tools visible) and for the install in the scratch project (no compiler at all).
import { existsSync, mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';

import { CLI_ENV } from '../helpers/netns.js';

function onPath(binary: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && existsSync(join(dir, binary))) return join(dir, binary);
  }
  return undefined;
}

/** Why the addon cannot be built here (prebuildify runs node-gyp), or undefined when it can. */
export function buildGap(): string | undefined {
  if (!onPath('make')) return 'needs make to build the prebuild';
  if (!onPath('g++') && !onPath('c++')) return 'needs a C++ compiler (g++) to build the prebuild';
  if (!onPath('python3')) return 'needs python3 (node-gyp) to build the prebuild';
  const nodedir = process.env.npm_config_nodedir ?? dirname(dirname(process.execPath));
  if (!existsSync(join(nodedir, 'include', 'node', 'node_api.h'))) return `needs Node's headers (no ${nodedir}/include/node)`;
  return undefined;
}

/** npmCli is npm's entry script, run with this Node (no shell, no npm wrapper on PATH needed). */
export function npmCli(): string {
  const npm = process.env.npm_execpath && existsSync(process.env.npm_execpath) ? process.env.npm_execpath : onPath('npm');
  if (!npm) throw new Error('npm is not on PATH');
  return realpathSync(npm);
}

/**
 * packEnv is the environment of `npm pack` in the copy: the test's own, without the variables of the npm run that
 * started vitest (its lifecycle and package fields would leak into the nested npm) and without an addon override,
 * building only the host's architecture (the arm64 cross build doubles the time and adds nothing to this test).
 */
export function packEnv(arch: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(CLI_ENV).filter(([k]) => !/^npm_/i.test(k) && !k.startsWith('PODNET_')));
  if (process.env.npm_config_nodedir) env.npm_config_nodedir = process.env.npm_config_nodedir;
  return { ...env, PODNET_PREBUILD_ARCHS: arch };
}

/**
 * noCompilerEnv makes a bin folder holding only node and sh (npm runs scripts with sh) and returns an environment
 * whose PATH is that folder alone, with CC and CXX set to /bin/false: make, g++, cc and python3 are out of reach,
 * so anything that tries to compile fails.
 */
export function noCompilerEnv(dir: string): NodeJS.ProcessEnv {
  const bin = join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  symlinkSync(process.execPath, join(bin, 'node'));
  symlinkSync('/bin/sh', join(bin, 'sh'));
  const env: NodeJS.ProcessEnv = {
    PATH: bin,
    CC: '/bin/false',
    CXX: '/bin/false',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  };
  // HOME holds npm's cache: the dependencies come from it when they are there (npm ci put them in).
  if (process.env.HOME) env.HOME = process.env.HOME;
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  return env;
}
