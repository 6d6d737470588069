// An agent unit test on fakes: what a node agent built on podnet can check without root or a node.
//
//   node --test examples/agent-unit-test.mjs
//
// FakeNode stands in for the whole node: a fake kernel ipset (the probe sets), fake iptables and routing tables per
// namespace, pretend pod namespaces, and a fake node proxy (ztunnel) on a real unix socket. The same tests run
// against the real kernel in podnet's own suite, so what passes here is what a node does.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';

import { NodeNetwork } from 'podnet';
import { FakeNode } from 'podnet/testing';

const PROBE_SET = 'istio-inpod-probes-v4';
const workload = { name: 'reviews-v1', namespace: 'default', serviceAccount: 'reviews' };

let fakes;
let node;

beforeEach(async () => {
  fakes = new FakeNode();
  const { server } = await fakes.proxy();
  node = new NodeNetwork({ ...(await fakes.options()), proxy: server });
  await node.start();
});

afterEach(async () => {
  // try/finally: the fakes' socket folder goes even when stop() fails.
  try {
    await node.stop();
  } finally {
    await fakes.close();
  }
});

/** probeEntries is the host probe set's content, as the fake kernel holds it. */
function probeEntries() {
  return fakes.netlink.dump().sets.find((s) => s.name === PROBE_SET)?.entries ?? [];
}

test('a pod is enrolled: probe entry owned by its UID, in-pod rules, handed to the proxy', async () => {
  fakes.netns.add('/run/netns/cni-a');
  await node.addPod({ uid: 'uid-a', ips: ['10.244.0.5'], netns: '/run/netns/cni-a', workload });

  assert.deepEqual(probeEntries(), [{ ip: '10.244.0.5', comment: 'uid-a' }]);
  const podRules = fakes.iptablesOf('/run/netns/cni-a').dump();
  assert.deepEqual(podRules.nat?.PREROUTING?.rules, [['-j', 'ISTIO_PRERT']]);
  const { ztunnel } = await fakes.proxy();
  assert.deepEqual([...ztunnel.workloads.keys()], ['uid-a']);
});

test('a late removal of a pod whose IP was reused leaves the new owner alone', async () => {
  fakes.netns.add('/run/netns/cni-a').add('/run/netns/cni-b');
  const a = { uid: 'uid-a', ips: ['10.244.0.5'], netns: '/run/netns/cni-a', workload };
  const b = { uid: 'uid-b', ips: ['10.244.0.5'], netns: '/run/netns/cni-b', workload };
  const conflicts = [];
  node.on('conflict', (c) => conflicts.push(c));

  await node.addPod(a);
  await node.addPod(b); // the IP came back to the pool and went to b before a's DEL arrived
  await node.removePod(a, { deleted: true });

  assert.deepEqual(conflicts.map((c) => [c.ip, c.previousOwner, c.newOwner]), [['10.244.0.5', 'uid-a', 'uid-b']]);
  assert.deepEqual(probeEntries(), [{ ip: '10.244.0.5', comment: 'uid-b' }]);
});

test('a pod whose namespace is already gone fails with a typed error and changes nothing', async () => {
  await assert.rejects(node.addPod({ uid: 'uid-c', ips: ['10.244.0.7'], netns: '/run/netns/gone', workload }), (err) => {
    assert.equal(err.code, 'ERR_AGENT_NETNS');
    assert.equal(err.cause?.code, 'ENOENT');
    return true;
  });
  assert.deepEqual(probeEntries(), []);
  assert.equal(fakes.netns.openHandles, 0);
});
