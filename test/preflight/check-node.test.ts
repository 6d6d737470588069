// checkNode on the real kernel: every row probed for real in throwaway namespaces, missing features made real
// where a namespace can lack them (IPv6 off by sysctl, no iptables on the PATH given, no CAP_SYS_ADMIN), and the
// rest simulated by replacing probes. The namespaces are anonymous: nothing is named in /run/netns, and no handle on
// one outlives the check.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { InvalidArgumentError, IpsetError, checkNode, type PreflightOptions, type PreflightReport } from '../../lib/index.js';
import { DIAGNOSTICS_CHANNELS } from '../../lib/diagnostics.js';
import { record } from '../diagnostics/recorder.js';
import { netnsFds } from '../helpers/fds.js';
import { describePrivileged } from '../helpers/privileged.js';

function row(report: PreflightReport, feature: string) {
  const found = report.rows.find((r) => r.feature === feature);
  if (!found) throw new Error(`no row '${feature}' in ${report.rows.map((r) => r.feature).join(', ')}`);
  return found;
}

const emptyDir = mkdtempSync(join(tmpdir(), 'podnet-pf-path-'));
afterAll(() => rmSync(emptyDir, { recursive: true, force: true }));

describePrivileged('checkNode on the kernel', () => {
  let heldBefore: string[];
  beforeAll(() => {
    heldBefore = netnsFds();
  });
  afterAll(() => expect(netnsFds()).toEqual(heldBefore));

  it.each([
    { name: 'iptables', backend: 'iptables' as const, features: ['ipset hash:ip with comment', 'iptables backends', 'iptables mark, connmark, CT --zone, REDIRECT', 'iptables owner --socket-exists, set, SNAT'] },
    { name: 'nftables', backend: 'nftables' as const, features: ['nf_tables meta, ct, mark, redirect, socket', 'nf_tables sets with element comments, skuid, snat', 'nf_tables batch generation id'] },
  ])('finds every required feature of the $name backend on this kernel, with IPv6', async ({ backend, features }) => {
    const report = await checkNode({ backend, ipv6: true, cache: false });
    expect(report.missing).toEqual([]);
    expect(report.ok).toBe(true);
    for (const feature of features) expect(row(report, feature)).toMatchObject({ ok: true, required: true });
    expect(row(report, 'IPv6')).toMatchObject({ ok: true, required: true });
    expect(row(report, 'kernel version').detail).toMatch(/^\d+\.\d+/);
    expect(row(report, 'policy routing (fwmark rule, local route table)').detail).toContain('IPv4, IPv6');
    expect(row(report, 'network namespaces').detail).toMatch(/^made and entered \(inode \d+, loopback up\)$/);
    expect(netnsFds()).toEqual(heldBefore);
  });

  it('makes its namespaces without iproute2, and runs a program only where the agent would', async () => {
    using rec = record(DIAGNOSTICS_CHANNELS.netnsSpawn);
    const report = await checkNode({ backend: 'iptables', ipv6: true, cache: false });
    expect(report.ok).toBe(true);
    const programs = new Set(rec.take().map((m) => m.argv[0]!.split('/').pop()!));
    expect([...programs].filter((p) => !/^ip6?tables-(nft|legacy)-(save|restore)$/.test(p))).toEqual([]);
  });

  it('reports namespaces missing, with the system call that refused, in a process without CAP_SYS_ADMIN', () => {
    const dist = new URL('../../dist/index.js', import.meta.url);
    const script = `
      const { checkNode } = await import(${JSON.stringify(dist.href)});
      const report = await checkNode({ backend: 'nftables' });
      console.log(JSON.stringify(report.rows.filter((r) => ['network namespaces', 'CAP_SYS_ADMIN'].includes(r.feature))));
    `;
    // Root without CAP_SYS_ADMIN in its bounding set: unshare(CLONE_NEWNET) is refused.
    const stdout = execFileSync('setpriv', ['--bounding-set', '-sys_admin', process.execPath, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: process.env,
    });
    const rows = JSON.parse(stdout) as PreflightReport['rows'];
    expect(rows.map((r) => [r.feature, r.ok, r.required])).toEqual([
      ['CAP_SYS_ADMIN', false, true],
      ['network namespaces', false, true],
    ]);
    expect(rows[1]!.detail).toBe(
      'creating a namespace failed: EPERM: operation not permitted, unshare [ERR_PREFLIGHT_NETNS] (provided by CONFIG_NET_NS)',
    );
  });

  it('reports IPv6 off when the probe namespaces have it disabled by sysctl, and fails only a configuration that needs it', async () => {
    const off = { 'net.ipv6.conf.all.disable_ipv6': '1', 'net.ipv6.conf.default.disable_ipv6': '1' };
    const withV6 = await checkNode({ backend: 'nftables', ipv6: true, netnsSysctls: off, cache: false });
    expect(row(withV6, 'IPv6')).toMatchObject({ ok: false, required: true });
    expect(row(withV6, 'IPv6').detail).toContain('net.ipv6.conf.all.disable_ipv6 = 1');
    expect(withV6.ok).toBe(false);
    expect(withV6.missing.map((r) => r.feature)).toEqual(['IPv6']);
    // The agent's routing falls back to IPv4 in such a pod, and so does the probe.
    expect(row(withV6, 'policy routing (fwmark rule, local route table)')).toMatchObject({ ok: true });

    const withoutV6 = await checkNode({ backend: 'nftables', ipv6: false, netnsSysctls: off, cache: false });
    expect(row(withoutV6, 'IPv6')).toMatchObject({ ok: false, required: false });
    expect(withoutV6.ok).toBe(true);
  });

  it('reports no iptables backend when the PATH it is given has no iptables, naming what provides it', async () => {
    const report = await checkNode({ backend: 'iptables', path: emptyDir, cache: false });
    const backends = row(report, 'iptables backends');
    expect(backends.ok).toBe(false);
    expect(backends.detail).toContain('no iptables backend runs');
    expect(backends.detail).toContain('ENOENT');
    expect(backends.detail).toContain('iptables-nft or iptables-legacy on the PATH');
    expect(row(report, 'iptables mark, connmark, CT --zone, REDIRECT').ok).toBe(false);
    // The rule probes share the backends probe's detection, and say what it said, not that its namespace went.
    expect(row(report, 'iptables mark, connmark, CT --zone, REDIRECT').detail).toContain(`program 'iptables-nft-restore' is not on the path '${emptyDir}' [ENOENT]`);
    // ipset speaks netlink: it needs no program.
    expect(row(report, 'ipset hash:ip with comment').ok).toBe(true);
    expect(report.ok).toBe(false);

    const nft = await checkNode({ backend: 'nftables', path: emptyDir, cache: false });
    expect(nft.ok).toBe(true);
  });

  it('answers the same configuration from the process cache, and probes again with cache: false', async () => {
    const first = await checkNode({ backend: 'nftables' });
    using rec = record(DIAGNOSTICS_CHANNELS.preflightCheck);
    const again = await checkNode({ backend: 'nftables' });
    expect(again).toBe(first);
    const fresh = await checkNode({ backend: 'nftables', cache: false });
    expect(fresh).not.toBe(first);
    expect(rec.take().map((m) => ({ backend: m.backend, cached: m.cached, outcome: m.outcome, missing: m.missing }))).toEqual([
      { backend: 'nftables', cached: true, outcome: 'ok', missing: [] },
      { backend: 'nftables', cached: false, outcome: 'ok', missing: [] },
    ]);
  });
});

// The injectable probe layer: what a node without a feature reports, without such a node. The host-only probes run
// for real (they read /proc and change nothing); every namespace probe is replaced.
const simulatedOk: PreflightOptions['probes'] = {
  netns: async () => 'simulated',
  ipv6: async () => 'simulated',
  'policy-routing': async () => 'simulated',
  'unix-seqpacket': async () => 'simulated',
  'ipset-hash-ip': async () => 'simulated',
  'ipset-hash-ip6': async () => 'simulated',
  'ipset-hash-net': async () => 'simulated',
  'ipset-hash-ip-port': async () => 'simulated',
  'iptables-backends': async () => 'simulated',
  'iptables-inpod': async () => 'simulated',
  'iptables-host': async () => 'simulated',
  'ip6tables-inpod': async () => 'simulated',
  'ip6tables-host': async () => 'simulated',
  'nft-inpod': async () => 'simulated',
  'nft-host': async () => 'simulated',
  'nft-generation': async () => 'simulated',
  'cap-net-admin': async () => 'simulated',
  'cap-sys-admin': async () => 'simulated',
};

describe('checkNode with simulated probes', () => {
  it('turns a probe that fails into a missing row naming the kernel modules that provide it', async () => {
    const report = await checkNode({
      probes: {
        ...simulatedOk,
        'ipset-hash-ip': async () => {
          throw new IpsetError('ipset: kernel error received: set type not supported', 'IPSET_ERR_FIND_TYPE', 0, {});
        },
      },
    });
    expect(report.ok).toBe(false);
    expect(report.missing).toHaveLength(1);
    expect(report.missing[0]).toMatchObject({ feature: 'ipset hash:ip with comment', needed_by: 'probe set (ipset)', ok: false, required: true });
    expect(report.missing[0]!.detail).toBe(
      'ipset: kernel error received: set type not supported [IPSET_ERR_FIND_TYPE] (provided by ip_set, ip_set_hash_ip)',
    );
  });

  it.each([
    { name: 'a thrown string', fail: async () => Promise.reject('no module'), detail: 'no module (provided by xt_owner, xt_set, xt_nat)' },
    { name: 'a synchronous throw', fail: () => { throw new Error('boom'); }, detail: 'boom (provided by xt_owner, xt_set, xt_nat)' },
  ])('makes $name a row, never a rejection', async ({ fail, detail }) => {
    const report = await checkNode({ probes: { ...simulatedOk, 'iptables-host': fail as never } });
    expect(report.missing.map((r) => [r.feature, r.detail])).toEqual([['iptables owner --socket-exists, set, SNAT', detail]]);
  });

  it('leaves out optional features from the verdict', async () => {
    const report = await checkNode({
      probes: { ...simulatedOk, 'ipset-hash-net': async () => Promise.reject(new Error('not here')) },
    });
    expect(report.ok).toBe(true);
    expect(row(report, 'ipset hash:net with comment and timeout')).toMatchObject({ ok: false, required: false });
  });

  it('requires the IPv6 rows only with ipv6', async () => {
    const probes = { ...simulatedOk, ipv6: async () => Promise.reject(new Error('off')), 'ip6tables-inpod': async () => Promise.reject(new Error('no ip6tables')) };
    expect((await checkNode({ probes })).ok).toBe(true);
    const v6 = await checkNode({ probes, ipv6: true });
    expect(v6.missing.map((r) => r.feature)).toEqual(['IPv6', 'ip6tables mark, connmark, CT --zone, REDIRECT']);
  });

  it('with requiredOnly probes and lists only the rows the configuration requires', async () => {
    const probed: string[] = [];
    const probes: PreflightOptions['probes'] = Object.fromEntries(
      Object.entries(simulatedOk!).map(([id, fn]) => [id, async (context: Parameters<NonNullable<typeof fn>>[0]) => { probed.push(id); return fn!(context); }]),
    );
    const all = await checkNode({ probes });
    probed.length = 0;
    const required = await checkNode({ probes, requiredOnly: true });
    expect(required.rows.map((r) => r.feature)).toEqual(all.rows.filter((r) => r.required).map((r) => r.feature));
    expect(required.rows.length).toBeLessThan(all.rows.length);
    expect(probed).not.toContain('ip6tables-inpod');
    expect(probed).toContain('iptables-inpod');
    const v6 = await checkNode({ probes, requiredOnly: true, ipv6: true });
    expect(v6.rows.map((r) => r.feature)).toContain('ip6tables mark, connmark, CT --zone, REDIRECT');
  });

  it('publishes a missing feature on podnet:preflight:check', async () => {
    using rec = record(DIAGNOSTICS_CHANNELS.preflightCheck);
    await checkNode({ backend: 'nftables', probes: { ...simulatedOk, 'nft-generation': async () => Promise.reject(new Error('old kernel')) } });
    const [m, ...more] = rec.take();
    expect(more).toEqual([]);
    expect(m).toMatchObject({ backend: 'nftables', ipv6: false, cached: false, outcome: 'ERR_PREFLIGHT_MISSING', missing: ['nf_tables batch generation id'] });
    expect(m!.rows).toBeGreaterThan(0);
  });

  it.each([
    { name: 'options not an object', options: 'nftables', code: 'ERR_INVALID_ARG_TYPE', argument: 'options' },
    { name: 'an unknown backend', options: { backend: 'ebtables' }, code: 'ERR_INVALID_ARG_VALUE', argument: 'options.backend' },
    { name: 'ipv6 not a boolean', options: { ipv6: 'yes' }, code: 'ERR_INVALID_ARG_TYPE', argument: 'options.ipv6' },
    { name: 'a relative hostProcRoot', options: { hostProcRoot: 'proc' }, code: 'ERR_INVALID_ARG_VALUE', argument: 'options.hostProcRoot' },
    { name: 'a relative PATH folder', options: { path: '/usr/sbin:bin' }, code: 'ERR_INVALID_ARG_VALUE', argument: 'options.path' },
    { name: 'a sysctl name with a path', options: { netnsSysctls: { '../../etc/x': '1' } }, code: 'ERR_INVALID_ARG_VALUE', argument: 'options.netnsSysctls' },
    { name: 'a sysctl value not a string', options: { netnsSysctls: { 'net.ipv4.ip_forward': 1 } }, code: 'ERR_INVALID_ARG_VALUE', argument: 'options.netnsSysctls.net.ipv4.ip_forward' },
    { name: 'an unknown probe id', options: { probes: { 'iptables-tproxy': async () => 'x' } }, code: 'ERR_INVALID_ARG_VALUE', argument: 'options.probes' },
    { name: 'a probe not a function', options: { probes: { kernel: 'ok' } }, code: 'ERR_INVALID_ARG_TYPE', argument: 'options.probes.kernel' },
    { name: 'cache not a boolean', options: { cache: 1 }, code: 'ERR_INVALID_ARG_TYPE', argument: 'options.cache' },
    { name: 'requiredOnly not a boolean', options: { requiredOnly: 'yes' }, code: 'ERR_INVALID_ARG_TYPE', argument: 'options.requiredOnly' },
  ])('refuses $name before probing anything', async ({ options, code, argument }) => {
    let probed = 0;
    const spy = { ...simulatedOk, kernel: async () => `${++probed}` };
    const bad = typeof options === 'object' ? { probes: spy, ...options } : options;
    let thrown: unknown;
    try {
      await checkNode(bad as never);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(InvalidArgumentError);
    expect(thrown).toMatchObject({ code, argument });
    expect(probed).toBe(0);
  });
});
