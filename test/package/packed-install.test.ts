// The package as a user gets it: npm pack of a copy of the work tree (its prepack builds the prebuild, its prepare
// dist/), installed from the tarball into a scratch project where no compiler can be reached, then used by package
// name. Building the prebuild takes about a minute, so this runs once per suite, and only where the addon can be
// built at all; the sanitizer run leaves it to the plain run (it checks packaging, not memory).
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CLI_ENV } from '../helpers/netns.js';
import { buildGap, noCompilerEnv, npmCli, packEnv } from './pack-env.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../', import.meta.url));
const arch = process.arch;
const PREBUILD = `prebuilds/linux-${arch}/podnet.glibc.node`;
// What npm pack reads, prepack and prepare run on; node_modules is linked, not copied.
const TREE = ['package.json', 'binding.gyp', 'CMakeLists.txt', 'README.md', 'tsconfig.json', 'tsconfig.build.json', 'lib', 'native', 'scripts'];

const gap = process.env.PODNET_EXPECT_ASAN === '1' ? 'the plain run checks packaging' : buildGap();
const suite = gap === undefined ? describe : describe.skip;
const title = gap === undefined ? 'packed install' : `packed install [skipped: ${gap}]`;

suite(title, () => {
  let work: string;
  let tarball: string;

  async function npm(cwd: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number) {
    return run(process.execPath, [npmCli(), ...args], { cwd, env, timeout: timeoutMs, maxBuffer: 64 << 20 });
  }

  /** scratchProject makes an empty ESM project that installs the tarball with the compiler out of reach. */
  async function scratchProject(name: string, tgz: string) {
    const dir = join(work, name);
    mkdirSync(join(dir, 'project'), { recursive: true });
    const env = noCompilerEnv(dir);
    const project = join(dir, 'project');
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: `scratch-${name}`, version: '1.0.0', private: true, type: 'module' }));
    const install = npm(project, ['install', '--prefer-offline', '--foreground-scripts', '--no-package-lock', tgz], env, 240_000);
    return { project, env, install };
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'podnet-pack-test-'));
    const copy = join(work, 'tree');
    mkdirSync(copy);
    for (const entry of TREE) cpSync(join(root, entry), join(copy, entry), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'), 'dir');
    const out = join(work, 'out');
    mkdirSync(out);
    await npm(copy, ['pack', '--pack-destination', out], packEnv(arch), 540_000);
    const made = readdirSync(out).filter((f) => f.endsWith('.tgz'));
    expect(made).toHaveLength(1);
    tarball = join(out, made[0]!);
  }, 600_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('packs the prebuild for this platform and no build output', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball], { env: CLI_ENV, maxBuffer: 16 << 20 });
    const files = stdout.split('\n').filter(Boolean);
    expect(files).toContain(`package/${PREBUILD}`);
    expect(files).toContain(`package/${dirname(PREBUILD)}/podnet-cni`);
    expect(files).toContain('package/dist/index.js');
    expect(files).toContain('package/binding.gyp');
    expect(files.filter((f) => f.startsWith('package/build/') || f.startsWith('package/node_modules/'))).toEqual([]);
  });

  it('installs without a compiler, loads the prebuild and works', async () => {
    const { project, env, install } = await scratchProject('prebuilt', tarball);
    await install;
    const installed = join(project, 'node_modules', 'podnet');
    // node-gyp-build found the prebuild, so nothing was compiled (a build would have left build/ behind, or failed).
    expect(existsSync(join(installed, 'build'))).toBe(false);
    expect(existsSync(join(installed, PREBUILD))).toBe(true);

    cpSync(fileURLToPath(new URL('./packed-check.mjs', import.meta.url)), join(project, 'check.mjs'));
    const { stdout } = await run(process.execPath, ['check.mjs'], { cwd: project, env, timeout: 60_000 });
    const seen = JSON.parse(stdout.trim().split('\n').pop()!);
    const own = statSync('/proc/self/ns/net').ino;
    expect(seen.netns).toEqual({ inode: own, statInode: own });
    expect(seen.entries).toEqual([{ ip: '10.244.0.5', comment: 'a' }]);
    expect(seen.openHandles).toBe(0);
    expect(seen.lo).toEqual({ index: 1, name: 'lo', linkType: 772 });
    expect(seen.addons).toEqual([realpathSync(join(installed, PREBUILD))]);
    // The plugin binary is the package's prebuild, executable, and answers as a CNI plugin.
    expect(seen.cni.plugin).toBe(join(realpathSync(installed), dirname(PREBUILD), 'podnet-cni'));
    expect(seen.cni.mode & 0o111).not.toBe(0);
    expect(seen.cni.version).toMatchObject({ cniVersion: '1.0.0', supportedVersions: expect.arrayContaining(['0.3.1', '1.0.0', '1.1.0']) });
    // podnet/iptables-text resolves by name from the install; the root keeps to the API.
    expect(seen.iptablesText).toEqual({ roundTrip: ['-A', 'X', 'a "b" c'], onRoot: false });

    // `npx podnet doctor` as an operator runs it in the agent's image: the package's bin, from the install.
    const npx = join(dirname(npmCli()), 'npx-cli.js');
    const doctor = await run(process.execPath, [npx, '--no-install', 'podnet', 'doctor', '--backend', 'nftables', '--json'], { cwd: project, env, timeout: 120_000 }).then(
      (r) => ({ code: 0, stdout: r.stdout }),
      (err: { code?: unknown; stdout?: string }) => ({ code: err.code, stdout: err.stdout ?? '' }),
    );
    expect(JSON.parse(doctor.stdout)).toMatchObject({ backend: 'nftables', ipv6: false });
    expect(doctor.code).toBe(process.getuid?.() === 0 ? 0 : 1);
  });

  it('falls back to a source build when no prebuild matches (which fails here, with the compiler hidden)', async () => {
    // The same package without its prebuilds/: node-gyp-build's install step must go to node-gyp rebuild.
    const bare = join(work, 'bare');
    mkdirSync(bare);
    await run('tar', ['-xzf', tarball, '-C', bare], { env: CLI_ENV });
    rmSync(join(bare, 'package', 'prebuilds'), { recursive: true });
    const out = join(work, 'bare-out');
    mkdirSync(out);
    await npm(join(bare, 'package'), ['pack', '--ignore-scripts', '--pack-destination', out], packEnv(arch), 120_000);
    const [tgz] = readdirSync(out);
    const { install } = await scratchProject('bare', join(out, tgz!));
    const failure = await install.then(
      () => undefined,
      (err: { code?: number; stdout?: string; stderr?: string }) => err,
    );
    expect(failure?.code).not.toBe(0);
    expect(`${failure?.stdout}\n${failure?.stderr}`).toMatch(/gyp (ERR|info)/);
  });
});
