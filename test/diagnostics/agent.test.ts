// podnet:agent:step on FakeNode: each step of NodeNetwork's flows, for the node and for a pod, with the pod's UID and
// a failed step's outcome taken from what caused it.
import { describe, expect, it } from 'vitest';

import { AgentError, type AgentStepMessage, DIAGNOSTICS_CHANNELS, NodeNetwork } from '../../lib/index.js';
import { FakeNode } from '../../lib/testing/index.js';
import { fakeAgentParts } from '../helpers/fake-agent.js';
import { record } from './recorder.js';

function about(m: AgentStepMessage) {
  return { step: m.step, pod: m.pod, outcome: m.outcome };
}

describe('podnet:agent:step', () => {
  const parts = fakeAgentParts();

  async function started(): Promise<{ node: FakeNode; net: NodeNetwork }> {
    const { node, options } = await parts();
    return { node, net: new NodeNetwork(options) };
  }

  it('publishes the steps of start, addPod, removePod and stop, each ok with its description', async () => {
    const { node, net } = await started();
    using rec = record(DIAGNOSTICS_CHANNELS.agentStep);
    await net.start();
    expect(rec.take().map(about)).toEqual([
      { step: 'sets', pod: undefined, outcome: 'ok' },
      { step: 'host-rules', pod: undefined, outcome: 'ok' },
    ]);
    node.netns.add('/run/netns/pod-a');
    const pod = { uid: 'uid-a', ips: ['10.244.0.5'], netns: '/run/netns/pod-a' };
    await net.addPod(pod);
    const added = rec.take();
    expect(added.map(about)).toEqual(
      ['netns', 'inpod-rules', 'routes', 'probe-set'].map((step) => ({ step, pod: 'uid-a', outcome: 'ok' })),
    );
    expect(added.at(-1)!.description).toBe("adding the probe entries of pod 'uid-a'");
    for (const m of added) expect(m.durationMs).toBeGreaterThanOrEqual(0);
    await net.removePod(pod);
    expect(rec.take().map((m) => m.step)).toEqual(['probe-set', 'netns', 'inpod-rules', 'routes']);
    await net.stop();
    expect(rec.take().map((m) => m.step)).toEqual(['host-rules', 'sets']);
  });

  it("publishes a failed step with its AgentError and the cause's code as the outcome", async () => {
    const { net } = await started();
    await net.start();
    using rec = record(DIAGNOSTICS_CHANNELS.agentStep);
    const err = await net.addPod({ uid: 'uid-b', ips: ['10.244.0.6'], netns: '/run/netns/not-there' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AgentError);
    const messages = rec.take();
    expect(messages.map(about)).toEqual([{ step: 'netns', pod: 'uid-b', outcome: 'ENOENT' }]);
    expect(messages[0]!.error).toBe(err);
    expect((err as AgentError).cause).toMatchObject({ code: 'ENOENT' });
  });
});
