// NodeNetwork.start() runs the preflight first: on fakes only when asked (fakes are not the kernel), on the real
// backends by default; a node that lacks a feature rejects with AgentError step 'preflight' naming it, before
// anything is changed (checked on the fakes' state, and on the kernel in a fresh host namespace).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';

import { AgentError, NodeNetwork, PreflightError, type PreflightOptions } from '../../lib/index.js';
import { DIAGNOSTICS_CHANNELS } from '../../lib/diagnostics.js';
import { record } from '../diagnostics/recorder.js';
import { fakeAgentParts } from '../helpers/fake-agent.js';
import { netnsFds } from '../helpers/fds.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

const ok = async () => 'simulated';
/** Every probe that would touch a namespace or need privileges, replaced by one that finds the feature. */
const simulatedOk: NonNullable<PreflightOptions['probes']> = {
  'cap-net-admin': ok, 'cap-sys-admin': ok, netns: ok, ipv6: ok, 'policy-routing': ok, 'unix-seqpacket': ok,
  'ipset-hash-ip': ok, 'ipset-hash-ip6': ok, 'ipset-hash-net': ok, 'ipset-hash-ip-port': ok, 'iptables-backends': ok,
  'iptables-inpod': ok, 'iptables-host': ok, 'ip6tables-inpod': ok, 'ip6tables-host': ok, 'nft-inpod': ok,
  'nft-host': ok, 'nft-generation': ok,
};

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('NodeNetwork.start() preflight on fakes', () => {
  const fakeOptions = fakeAgentParts();

  it('runs no preflight when the backends are fakes, unless asked', async () => {
    const { options } = await fakeOptions();
    using rec = record(DIAGNOSTICS_CHANNELS.preflightCheck);
    const net = new NodeNetwork(options);
    await net.start();
    await net.stop();
    expect(rec.take()).toEqual([]);
  });

  it.each([
    { backend: 'iptables' as const, probe: 'ipset-hash-ip' as const, feature: 'ipset hash:ip with comment', modules: 'ip_set, ip_set_hash_ip' },
    { backend: 'iptables' as const, probe: 'iptables-host' as const, feature: 'iptables owner --socket-exists, set, SNAT', modules: 'xt_owner, xt_set, xt_nat' },
    { backend: 'nftables' as const, probe: 'nft-inpod' as const, feature: 'nf_tables meta, ct, mark, redirect, socket', modules: 'nft_socket' },
  ])('rejects with step preflight naming $feature, and changes nothing ($backend)', async ({ backend, probe, feature, modules }) => {
    const { node, options } = await fakeOptions();
    using steps = record(DIAGNOSTICS_CHANNELS.agentStep);
    const probes = { ...simulatedOk, [probe]: async () => Promise.reject(new Error('Operation not supported')) };
    const net = new NodeNetwork({ ...options, backend, kubeletUid: 1000, preflight: { probes } });
    const err = await rejection(net.start());
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toMatchObject({ step: 'preflight', code: 'ERR_AGENT_PREFLIGHT', retryable: false });
    const message = (err as AgentError).message;
    expect(message).toContain(`the node lacks what the ${backend} backend needs: '${feature}'`);
    expect(message).toContain('Operation not supported');
    expect(message).toContain(modules);
    const cause = (err as AgentError).cause;
    expect(cause).toBeInstanceOf(PreflightError);
    expect((cause as PreflightError).report.missing.map((r) => r.feature)).toEqual([feature]);
    expect(steps.take().map((m) => [m.step, m.outcome])).toEqual([['preflight', 'ERR_PREFLIGHT_MISSING']]);
    // Nothing reached the fakes: no set, no iptables run, no nftables table.
    expect(node.netlink.dump().sets).toEqual([]);
    expect(node.iptablesOf().calls).toEqual([]);
    expect(node.nftablesOf().dump().tables).toEqual([]);
    expect(net.probeSet).toBeUndefined();
  });

  it('starts when the preflight it was asked for finds everything', async () => {
    const { node, options } = await fakeOptions();
    using rec = record(DIAGNOSTICS_CHANNELS.preflightCheck);
    const net = new NodeNetwork({ ...options, preflight: { probes: simulatedOk } });
    await net.start();
    expect(rec.take().map((m) => m.outcome)).toEqual(['ok']);
    expect(node.netlink.dump().sets.map((s) => s.name)).toEqual(['istio-inpod-probes-v4']);
    await net.stop();
  });

  it.each([
    { name: 'preflight not a boolean or object', preflight: 'yes', argument: 'options.preflight' },
    { name: 'an unknown probe', preflight: { probes: { tproxy: ok } }, argument: 'options.probes' },
    { name: 'a relative path', preflight: { path: 'sbin' }, argument: 'options.path' },
  ])('refuses $name in the constructor', async ({ preflight, argument }) => {
    const { options } = await fakeOptions();
    expect(() => new NodeNetwork({ ...options, preflight: preflight as never })).toThrow(expect.objectContaining({ argument }));
  });
});

const emptyDir = mkdtempSync(join(tmpdir(), 'podnet-pf-agent-path-'));
afterAll(() => rmSync(emptyDir, { recursive: true, force: true }));

describePrivileged('NodeNetwork.start() preflight on the kernel', () => {
  it('rejects before it changes anything when the node has no iptables on the PATH the preflight is given', async () => {
    using host = new TestNetns('pfhost');
    const net = new NodeNetwork({ hostNetns: host.path, preflight: { path: emptyDir } });
    const err = await rejection(net.start());
    expect(err).toMatchObject({ step: 'preflight', code: 'ERR_AGENT_PREFLIGHT' });
    expect((err as Error).message).toContain("'iptables backends' for host and in-pod rules (iptables): no iptables backend runs");
    expect(host.exec(['ipset', 'list', '-n'])).toBe('');
    expect(host.exec(['iptables-save'])).not.toContain('ISTIO');
    await net.stop();
  });

  it('runs the preflight on the real backends by default, once per process and configuration', async () => {
    using host = new TestNetns('pfhost');
    using rec = record(DIAGNOSTICS_CHANNELS.preflightCheck);
    const heldBefore = netnsFds();
    const first = new NodeNetwork({ hostNetns: host.path });
    await first.start();
    await first.stop();
    const second = new NodeNetwork({ hostNetns: host.path });
    await second.start();
    await second.stop();
    const messages = rec.take();
    expect(messages.map((m) => [m.backend, m.outcome])).toEqual([['iptables', 'ok'], ['iptables', 'ok']]);
    expect(messages[1]!.cached).toBe(true);
    // The preflight's namespaces are anonymous: none is held open once start() has run it.
    expect(netnsFds()).toEqual(heldBefore);
  });
});
