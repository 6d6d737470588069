// `podnet doctor` as an operator runs it: the built bin as a child process (argv, no shell), its table, its JSON and
// its exit status, on this kernel and with the iptables programs missing from the PATH it is given.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { afterAll, describe, expect, it } from 'vitest';

import type { PreflightReport } from '../../lib/index.js';
import { CLI_ENV } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { bin?: Record<string, string> };
const bin = join(root, pkg.bin?.podnet ?? 'missing-bin-entry');
const emptyDir = mkdtempSync(join(tmpdir(), 'podnet-doctor-path-'));
afterAll(() => rmSync(emptyDir, { recursive: true, force: true }));

async function doctor(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: the bin is built by npm run build:ts`);
  const env = { ...CLI_ENV };
  delete env.PODNET_ADDON_PATH;
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env, timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the podnet bin', () => {
  it('is declared in package.json and starts with a node shebang', () => {
    expect(pkg.bin).toEqual({ podnet: './dist/cli/podnet.js' });
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  it.each([
    { name: 'no command', args: [], says: 'unknown command (none)' },
    { name: 'an unknown command', args: ['fix'], says: "unknown command 'fix'" },
    { name: 'an unknown backend', args: ['doctor', '--backend', 'ebtables'], says: "--backend takes iptables or nftables, not 'ebtables'" },
    { name: 'an unknown flag', args: ['doctor', '--fast'], says: "Unknown option '--fast'" },
    { name: 'a relative --path folder', args: ['doctor', '--path', 'sbin'], says: 'expected colon-separated absolute folders for options.path' },
  ])('exits 2 with the usage for $name', async ({ args, says }) => {
    const run = await doctor(...args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(says);
    expect(run.stderr).toContain('usage: podnet doctor');
  });
});

describePrivileged('podnet doctor on the kernel', () => {
  it('prints a table of every feature and exits 0 when the node has what iptables needs', async () => {
    const run = await doctor('doctor');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^STATUS +FEATURE +NEEDED BY +DETAIL$/);
    expect(lines.find((l) => l.includes('ipset hash:ip with comment'))).toMatch(/^ok +ipset hash:ip with comment +probe set \(ipset\) +hash:ip revision \d+$/);
    expect(lines.find((l) => l.includes('iptables backends'))).toMatch(/^ok +iptables backends .*detected: (nft|legacy)$/);
    expect(lines.at(-1)).toBe('ok: this node has every feature backend iptables needs');
  });

  it('prints the report as JSON with --json, for nftables with IPv6', async () => {
    const run = await doctor('doctor', '--backend', 'nftables', '--ipv6', '--json');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as PreflightReport;
    expect(report).toMatchObject({ ok: true, backend: 'nftables', ipv6: true, missing: [] });
    expect(report.rows.find((r) => r.feature === 'nf_tables batch generation id')).toMatchObject({ ok: true, required: true, needed_by: 'nftables transactions' });
    expect(report.rows.find((r) => r.feature === 'IPv6')).toMatchObject({ ok: true, required: true });
    for (const row of report.rows) expect(Object.keys(row).sort()).toEqual(['detail', 'feature', 'needed_by', 'ok', 'required']);
  });

  it('marks the iptables rows MISSING and exits 1 when the PATH it is given has no iptables', async () => {
    const run = await doctor('doctor', '--path', emptyDir);
    expect(run.code).toBe(1);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines.find((l) => l.includes('iptables backends'))).toMatch(/^MISSING +iptables backends +host and in-pod rules \(iptables\) +no iptables backend runs/);
    expect(lines.at(-1)).toMatch(/^missing: 3 feature\(s\) backend iptables needs: iptables backends, iptables mark, connmark, CT --zone, REDIRECT, iptables owner --socket-exists, set, SNAT$/);

    const json = await doctor('doctor', '--path', emptyDir, '--json');
    expect(json.code).toBe(1);
    expect((JSON.parse(json.stdout) as PreflightReport).missing.map((r) => r.feature)).toEqual([
      'iptables backends',
      'iptables mark, connmark, CT --zone, REDIRECT',
      'iptables owner --socket-exists, set, SNAT',
    ]);
  });

  it('exits 0 for nftables on the same PATH: that backend runs no program', async () => {
    const run = await doctor('doctor', '--backend', 'nftables', '--path', emptyDir);
    expect(run.code).toBe(0);
  });
});
