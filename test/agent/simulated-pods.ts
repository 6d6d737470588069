// The stage of the packet tests of both backends: a SimulatedNode with two pods, pod A serving EchoWho, torn down
// whatever the test did.
import { expect } from 'vitest';

import { SimulatedNode, echoWho, startEchoWho, type EchoWhoServer, type SimPod } from '../../lib/testing/index.js';

/** TwoPods is what a packet test works with: the node, its two pods, and A's app port reached from the host and B. */
export interface TwoPods {
  sim: SimulatedNode;
  podA: SimPod;
  podB: SimPod;
  /** What pod A's 8080 answers to the host (the port it landed on and the source it saw). */
  fromHost(): Promise<string>;
  /** What pod A's 8080 answers to pod B. */
  fromPodB(): Promise<string>;
}

/**
 * onTwoPods runs body on a fresh SimulatedNode (its tag starts with tagPrefix, so the two backends' tests never share
 * names) with EchoWho listening on ports in pod A, then stops the server, expects it to exit 0 and returns what it
 * printed with the pods (whose addresses the printed lines hold). The node is destroyed even when body throws.
 */
export async function onTwoPods(
  tagPrefix: string,
  ports: number[],
  body: (pods: TwoPods) => Promise<void>,
): Promise<{ served: string; podA: SimPod; podB: SimPod }> {
  const sim = await SimulatedNode.create({ tag: `${tagPrefix}-${process.env.PODNET_TEST_RUN ?? 'x'}`, pods: 2 });
  let server: EchoWhoServer | undefined;
  try {
    const [podA, podB] = sim.pods as [SimPod, SimPod];
    server = await startEchoWho(podA.path, { ports, lifetimeMs: 50_000 });
    const fromHost = () => echoWho(sim.host.path, podA.ip, 8080);
    const fromPodB = () => echoWho(podB.path, podA.ip, 8080);
    await body({ sim, podA, podB, fromHost, fromPodB });
    const served = await server.stop();
    server = undefined;
    expect(served.exitCode).toBe(0);
    return { served: served.stdout, podA, podB };
  } finally {
    await server?.stop().catch(() => undefined);
    await sim.destroy();
  }
}
