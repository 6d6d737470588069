// The preflight is a step NodeNetwork is given: a NodePreflight function runs in its place, with the configuration
// it is asked about; the agent layer's own class, with nothing wired in, runs only such a function.
import { describe, expect, it } from 'vitest';

import { NodeNetwork as AgentNodeNetwork } from '../../lib/agent/node-network.js';
import { AgentError, NodeNetwork, type NodePreflightRequest } from '../../lib/index.js';
import { fakeAgentParts } from '../helpers/fake-agent.js';

describe('NodeNetwork preflight as an injected step', () => {
  const fakeOptions = fakeAgentParts();

  it.each([
    { name: 'iptables', extra: {}, request: { backend: 'iptables', ipv6: false, hostProcRoot: '/proc' } },
    { name: 'nftables with IPv6', extra: { backend: 'nftables' as const, kubeletUid: 1000, ipv6: true, hostProcRoot: '/host/proc' }, request: { backend: 'nftables', ipv6: true, hostProcRoot: '/host/proc' } },
  ])('runs a preflight function before anything else, asking about the configuration ($name)', async ({ extra, request }) => {
    const { options } = await fakeOptions();
    const asked: NodePreflightRequest[] = [];
    const net = new NodeNetwork({ ...options, ...extra, preflight: async (r) => void asked.push(r) });
    await net.start();
    expect(asked).toEqual([request]);
    await net.stop();
  });

  it('rejects with step preflight, not retryable, its cause what the preflight found missing, having changed nothing', async () => {
    const { node, options } = await fakeOptions();
    const missing = new Error('the node lacks what the iptables backend needs: a simulated feature');
    const net = new NodeNetwork({ ...options, preflight: async () => missing });
    const err = await net.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toMatchObject({ step: 'preflight', code: 'ERR_AGENT_PREFLIGHT', retryable: false, cause: missing });
    expect((err as Error).message).toBe(`checking what the node offers failed: ${missing.message}`);
    expect(node.netlink.dump().sets).toEqual([]);
    await net.stop();
  });

  it('runs only a preflight function when nothing is wired in (the agent layer alone)', async () => {
    const { options } = await fakeOptions();
    expect(() => new AgentNodeNetwork({ ...options, preflight: true })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', argument: 'options.preflight' }));
    expect(() => new AgentNodeNetwork({ ...options, preflight: { path: '/usr/sbin' } })).toThrow(expect.objectContaining({ argument: 'options.preflight' }));
    let ran = 0;
    const net = new AgentNodeNetwork({ ...options, preflight: async () => void ran++ });
    await net.start();
    await net.stop();
    expect(ran).toBe(1);
  });
});
