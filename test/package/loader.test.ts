// lib/native.ts as installed: which binary a package tree loads (a source build, else the prebuild for this
// platform, or PODNET_ADDON_PATH's), and the typed error when there is none. Each case is a copy of dist/ and
// package.json in a temp folder, loaded by a child Node whose /proc/self/maps tells which .node it mapped.
import { execFile } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';

import { CLI_ENV } from '../helpers/netns.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const built = join(root, 'build', 'Release', 'podnet.node');
const PREBUILD = join('prebuilds', `linux-${process.arch}`, 'podnet.glibc.node');

// Loads dist/native.js of the tree named by argv[1] and prints what happened as one JSON line.
const PROBE = `
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
try {
  const { native } = await import(pathToFileURL(process.argv[1] + '/dist/native.js').href);
  const maps = readFileSync('/proc/self/maps', 'utf8').split('\\n').map((l) => l.slice(l.indexOf('/'))).filter((p) => p.endsWith('.node'));
  console.log(JSON.stringify({ loaded: [...new Set(maps)], napi: native.buildInfo().napiVersion }));
} catch (err) {
  console.log(JSON.stringify({ name: err.name, code: err.code, message: err.message }));
}`;

let dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

/** tree makes a package folder with dist/, package.json and node_modules (linked), plus the binaries given. */
function tree(binaries: { build?: boolean; prebuild?: boolean }): string {
  const dir = mkdtempSync(join(tmpdir(), 'podnet-loader-'));
  dirs.push(dir);
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  copyFileSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  if (binaries.build) {
    mkdirSync(join(dir, 'build', 'Release'), { recursive: true });
    copyFileSync(built, join(dir, 'build', 'Release', 'podnet.node'));
  }
  if (binaries.prebuild) {
    mkdirSync(join(dir, 'prebuilds', `linux-${process.arch}`), { recursive: true });
    copyFileSync(built, join(dir, PREBUILD));
  }
  return realpathSync(dir);
}

async function load(dir: string, env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const childEnv: NodeJS.ProcessEnv = { ...CLI_ENV, ...env };
  if (!('PODNET_ADDON_PATH' in env)) delete childEnv.PODNET_ADDON_PATH;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', PROBE, dir], { env: childEnv, timeout: 30_000 });
  return JSON.parse(stdout.trim());
}

const noBuild = existsSync(built) && existsSync(join(root, 'dist', 'native.js')) ? undefined : 'needs build/Release/podnet.node and dist/ (npm install)';

(noBuild === undefined ? describe : describe.skip)(noBuild === undefined ? 'addon loader' : `addon loader [skipped: ${noBuild}]`, () => {
  const cases: { name: string; binaries: { build?: boolean; prebuild?: boolean }; expected: (dir: string) => string }[] = [
    { name: 'a tree with only a prebuild loads the prebuild', binaries: { prebuild: true }, expected: (dir) => join(dir, PREBUILD) },
    { name: 'a tree with only a source build loads it', binaries: { build: true }, expected: (dir) => join(dir, 'build', 'Release', 'podnet.node') },
    {
      name: 'a source build wins over a prebuild',
      binaries: { build: true, prebuild: true },
      expected: (dir) => join(dir, 'build', 'Release', 'podnet.node'),
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const dir = tree(c.binaries);
      expect(await load(dir)).toEqual({ loaded: [c.expected(dir)], napi: expect.any(Number) });
    });
  }

  it('PODNET_ADDON_PATH names the binary, whatever the tree holds', async () => {
    const dir = tree({ prebuild: true });
    expect(await load(dir, { PODNET_ADDON_PATH: built })).toEqual({ loaded: [realpathSync(built)], napi: expect.any(Number) });
  });

  it('a tree with no binary for this platform fails with ERR_PODNET_ADDON_LOAD naming the package folder', async () => {
    const dir = tree({});
    const seen = await load(dir);
    expect(seen).toMatchObject({ name: 'PodnetError', code: 'ERR_PODNET_ADDON_LOAD' });
    expect(seen.message).toContain(`not found under '${dir}/'`);
    expect(seen.message).toContain(`linux-${process.arch}`);
  });

  it('a PODNET_ADDON_PATH that does not load fails with ERR_PODNET_ADDON_LOAD naming that path', async () => {
    const dir = tree({ prebuild: true });
    const missing = join(dir, 'nothing-here.node');
    const seen = await load(dir, { PODNET_ADDON_PATH: missing });
    expect(seen).toMatchObject({ name: 'PodnetError', code: 'ERR_PODNET_ADDON_LOAD' });
    expect(seen.message).toContain(`'${missing}'`);
  });
});
