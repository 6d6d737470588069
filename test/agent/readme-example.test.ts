// The README's fake-backed agent example, run as written.
import { expect, it } from 'vitest';

import { NodeNetwork } from '../../lib/index.js';
import { FakeNode } from '../../lib/testing/index.js';

it('runs the README example of an agent unit test on fakes', async () => {
  const fakes = new FakeNode();
  fakes.netns.add('/run/netns/pod-a');
  const node = new NodeNetwork(await fakes.options());
  await node.start();
  await node.addPod({ uid: 'a', ips: ['10.244.0.5'], netns: '/run/netns/pod-a' });
  const v4 = fakes.netlink.dump().sets.find((s) => s.name === 'istio-inpod-probes-v4');
  expect(v4?.entries).toEqual([{ ip: '10.244.0.5', comment: 'a' }]);
  const pod = fakes.iptablesOf('/run/netns/pod-a').dump();
  expect(pod.nat?.ISTIO_PRERT?.rules.length).toBe(2);
  expect(pod.nat?.PREROUTING?.rules).toEqual([['-j', 'ISTIO_PRERT']]);
  expect(fakes.iptablesOf().dump().nat?.POSTROUTING?.rules).toEqual([['-j', 'ISTIO_POSTRT']]);
  expect(fakes.netns.openHandles).toBe(0);
});
