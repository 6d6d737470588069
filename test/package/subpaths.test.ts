// The package's subpaths as a user imports them: by name, through package.json `exports`, from dist/. A child Node in
// the package folder resolves `podnet/...` by self-reference, the same lookup an installed tree makes.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

// Imports argv[1] by name and prints its export names, sorted, as one JSON line.
const PROBE = `const m = await import(process.argv[1]); console.log(JSON.stringify(Object.keys(m).sort()));`;

async function exportsOf(specifier: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', PROBE, specifier], {
    cwd: root,
    // The child is a Node that loads the addon: it gets this process's environment whole, the sanitizer run's
    // preload and addon path included (CLI_ENV drops the preload, for programs that are not Node).
    env: process.env,
    timeout: 30_000,
  });
  return JSON.parse(stdout.trim());
}

// What the root hands to the iptables-text subpath, by name.
const MOVED = ['quoteArg', 'tokenizeLine', 'parseSave', 'parseRestoreStderr', 'TABLES', 'BUILTIN_CHAINS', 'MAX_CHAIN_NAME'];
// What the root keeps private, by name.
const PRIVATE = ['HINT_CHAINS', 'iptablesBinary', 'detectBackend', 'unmapIpv4'];
// What the root hands to the cni-wire subpath, by name.
const WIRE = ['CniWireError', 'WIRE_LIMITS', 'WIRE_VERSION', 'decodeRequestHeader', 'encodeRequest', 'encodeAnswer', 'decodeAnswerHeader'];

const noDist = existsSync(join(root, 'dist', 'index.js')) ? undefined : 'needs dist/ (npm run build:ts)';

(noDist === undefined ? describe : describe.skip)(noDist === undefined ? 'package subpaths' : `package subpaths [skipped: ${noDist}]`, () => {
  it('package.json exports the root, podnet/testing, podnet/iptables-text and podnet/cni-wire', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
    expect(Object.keys(pkg.exports)).toEqual(['.', './testing', './iptables-text', './cni-wire', './package.json']);
  });

  it('podnet/iptables-text gives the restore and save text helpers', async () => {
    expect(await exportsOf('podnet/iptables-text')).toEqual(
      ['BUILTIN_CHAINS', 'IptablesSaveParseError', 'MAX_ARG_BYTES', 'MAX_CHAIN_NAME', 'TABLES', 'parseRestoreStderr', 'parseSave', 'quoteArg', 'tokenizeLine'],
    );
  });

  it('podnet/cni-wire gives the podnet-cni wire codec', async () => {
    expect(await exportsOf('podnet/cni-wire')).toEqual([...WIRE].sort());
  });

  it('the root keeps the clients and leaves the helpers to the subpath or to lib', async () => {
    const names = await exportsOf('podnet');
    expect(names).toEqual(expect.arrayContaining(['Iptables', 'RuleSet', 'NetnsRunner', 'IptablesSaveParseError', 'Ipset', 'NodeNetwork']));
    expect(names.filter((n) => MOVED.includes(n) || PRIVATE.includes(n) || WIRE.includes(n))).toEqual([]);
    expect(names).toEqual(expect.arrayContaining(['CniServer', 'installCniPlugin', 'CniError']));
  });
});
