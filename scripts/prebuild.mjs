#!/usr/bin/env node
// npm's prepack step: builds the addon with prebuildify into prebuilds/<platform>-<arch>/podnet.glibc.node, which
// node-gyp-build loads at install and run time so that installing the package needs no compiler, and ships the
// podnet-cni plugin executable the same build makes (binding.gyp's second target, statically linked) next to it
// as prebuilds/<platform>-<arch>/podnet-cni, where cniPluginPath() looks first.
//
// It builds the host's architecture, and linux-arm64 on an x64 host where Debian's cross compiler
// (g++-aarch64-linux-gnu) is on PATH. PODNET_PREBUILD_ARCHS=x64,arm64 names the architectures instead (one that
// cannot be built then fails the pack instead of being skipped). The builds run in a scratch copy of the sources,
// so the work tree's build/ (a developer's own source build, which node-gyp-build prefers) is left as it is.
//
// Node's headers come from the running Node (its include/node), as for the source build: nothing is downloaded.
import { spawnSync } from 'node:child_process';
import { closeSync, copyFileSync, cpSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch as hostArch, tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const require = createRequire(import.meta.url);
const prebuildifyBin = join(dirname(require.resolve('prebuildify/package.json')), 'bin.js');

/** ELF e_machine of each target: a binary built by the wrong compiler never ships. */
const ELF_MACHINE = { x64: 62, arm64: 183 };

/** Cross toolchains by target architecture, as Debian names their binaries. */
const CROSS = {
  arm64: 'aarch64-linux-gnu',
  x64: 'x86_64-linux-gnu',
};

function onPath(binary) {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, binary)));
}

/** The compiler environment for one target: the host's own toolchain, or the cross one with its strip. */
function toolchain(target) {
  if (target === hostArch()) return { env: {}, strip: 'strip' };
  const prefix = CROSS[target];
  if (!prefix || !onPath(`${prefix}-g++`)) return undefined;
  return {
    env: { CC: `${prefix}-gcc`, CXX: `${prefix}-g++`, LINK: `${prefix}-g++`, AR: `${prefix}-ar` },
    strip: `${prefix}-strip`,
  };
}

function targets() {
  const named = process.env.PODNET_PREBUILD_ARCHS;
  if (named) return { list: named.split(',').map((a) => a.trim()).filter(Boolean), required: true };
  return { list: hostArch() === 'x64' ? ['x64', 'arm64'] : [hostArch()], required: false };
}

function nodedir() {
  if (process.env.npm_config_nodedir) return process.env.npm_config_nodedir;
  // The running Node's prefix (/usr for Debian's nodejs) when it ships its headers.
  const prefix = dirname(dirname(process.execPath));
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? prefix : undefined;
}

/** A scratch copy of what node-gyp reads, with the work tree's node_modules (node-addon-api, node-gyp) linked in. */
function scratchSources() {
  const dir = mkdtempSync(join(tmpdir(), 'podnet-prebuild-'));
  for (const entry of ['package.json', 'binding.gyp', 'native']) cpSync(join(root, entry), join(dir, entry), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return dir;
}

function build(scratch, target, tools, headers) {
  const args = [
    prebuildifyBin,
    '--napi',
    '--tag-libc',
    '--strip',
    `--strip-bin=${tools.strip}`,
    `--target=${process.versions.node}`,
    `--arch=${target}`,
    `--out=${root}`,
  ];
  // node-gyp runs make with one job unless told: JOBS=max is one per core.
  const env = { JOBS: 'max', ...process.env, ...tools.env };
  if (headers) env.npm_config_nodedir = headers;
  console.log(`prebuild: linux-${target} (${tools.env.CXX ?? 'host compiler'})`);
  const result = spawnSync(process.execPath, args, { cwd: scratch, env, stdio: 'inherit' });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`prebuildify for linux-${target} exited with ${result.status ?? result.signal}`);
}

/** checkMachine throws unless file is an ELF binary (the addon, the plugin) for target. */
function checkMachine(file, target) {
  const header = Buffer.alloc(20);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  const machine = header.readUInt16LE(18);
  if (header.readUInt32BE(0) !== 0x7f454c46 || machine !== ELF_MACHINE[target]) {
    throw new Error(`prebuild: ${file} is not an ELF binary for linux-${target} (e_machine ${machine})`);
  }
}

const PT_INTERP = 3;

/**
 * checkStatic throws unless file (an ELF64 executable) has no program interpreter: podnet-cni runs on hosts without
 * Node, where the libstdc++ it was built with may be missing.
 */
function checkStatic(file) {
  const elf = readFileSync(file);
  const phoff = Number(elf.readBigUInt64LE(32));
  const phentsize = elf.readUInt16LE(54);
  const phnum = elf.readUInt16LE(56);
  if (elf[4] !== 2 || phoff + phentsize * phnum > elf.length) throw new Error(`prebuild: ${file} is not an ELF64 executable`);
  for (let i = 0; i < phnum; i++) {
    if (elf.readUInt32LE(phoff + i * phentsize) === PT_INTERP) throw new Error(`prebuild: ${file} is dynamically linked`);
  }
}

/** shipPlugin copies the build's podnet-cni into dir, checked to be static. */
function shipPlugin(scratch, dir) {
  const built = join(scratch, 'build', 'Release', 'podnet-cni');
  if (!existsSync(built)) throw new Error(`prebuild: the build made no ${built}`);
  const shipped = join(dir, 'podnet-cni');
  copyFileSync(built, shipped);
  checkStatic(shipped);
}

function main() {
  const { list, required } = targets();
  const headers = nodedir();
  // A stale binary must never ship: prebuilds/ holds exactly what this run builds.
  rmSync(join(root, 'prebuilds'), { recursive: true, force: true });
  const scratch = scratchSources();
  try {
    for (const target of list) {
      const tools = toolchain(target);
      if (!tools) {
        const prefix = CROSS[target];
        const why = prefix ? `no ${prefix}-g++ on PATH (Debian's g++-${prefix.replaceAll('_', '-')})` : 'no known cross toolchain';
        if (required) throw new Error(`prebuild: cannot build linux-${target}: ${why}`);
        console.log(`prebuild: linux-${target} skipped: ${why}`);
        continue;
      }
      build(scratch, target, tools, headers);
      const dir = join(root, 'prebuilds', `linux-${target}`);
      shipPlugin(scratch, dir);
      for (const file of readdirSync(dir)) checkMachine(join(dir, file), target);
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  for (const dir of readdirSync(join(root, 'prebuilds'))) {
    console.log(`prebuild: prebuilds/${dir}/${readdirSync(join(root, 'prebuilds', dir)).join(', ')}`);
  }
}

try {
  main();
} catch (err) {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
}
