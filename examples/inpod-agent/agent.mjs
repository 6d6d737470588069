// A skeleton of an in-pod (ambient) node agent: the CNI plugin reports each pod's ADD and DEL over HTTP on a unix
// socket, and the agent enrolls or removes the pod with NodeNetwork (host probe sets, in-pod redirection rules and
// routes, and the handoff of the pod's namespace to the node proxy).
//
//   node examples/inpod-agent/agent.mjs --fake --socket /tmp/cni.sock            # on FakeNode: no root, no node
//   sudo node examples/inpod-agent/agent.mjs --socket /run/podnet/cni.sock \
//        [--ztunnel-socket /var/run/ztunnel/ztunnel.sock] [--host-netns PATH]   # the real thing
//
// --host-netns is the node's namespace when the agent runs in another one (default: its own, as with hostNetwork).
// PODNET_AGENT_FAKE=1 and PODNET_AGENT_SOCKET do the same as --fake and --socket. SIGTERM or SIGINT stop it: the
// HTTP server closes, then NodeNetwork removes its host rules and probe sets. The in-pod rules of enrolled pods stay:
// those pods still run, and the next agent's syncSnapshot takes them over (stop({ keep: true }) keeps the sets too).
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { NodeNetwork, ZtunnelServer } from 'podnet';
import { FakeNode } from 'podnet/testing';

import { listenCni } from './cni-server.mjs';

const { values: flags } = parseArgs({
  options: {
    fake: { type: 'boolean', default: process.env.PODNET_AGENT_FAKE === '1' },
    socket: { type: 'string', default: process.env.PODNET_AGENT_SOCKET || '/run/podnet/cni.sock' },
    'ztunnel-socket': { type: 'string' },
    'host-netns': { type: 'string' },
  },
});

const log = (text) => console.log(`agent: ${text}`);

/** The node the agent works on: fakes with their own proxy, or this host's namespaces with a real ZDS server. */
async function openNode() {
  if (flags.fake) {
    const fakes = new FakeNode();
    const { server } = await fakes.proxy();
    const network = new NodeNetwork({ ...(await fakes.options()), proxy: server });
    // On a node the CNI plugin has made the pod's namespace before it calls ADD; here the fake opener is told.
    const podAppears = (path) => fakes.netns.add(path);
    return { network, fakes, podAppears, close: () => fakes.close() };
  }
  const path = flags['ztunnel-socket'];
  const proxy = path ? await ZtunnelServer.listen({ path }) : undefined;
  const network = new NodeNetwork({ hostNetns: flags['host-netns'], proxy });
  return { network, podAppears: () => {}, close: async () => proxy?.close() };
}

/**
 * The pod as NodeNetwork takes it; NodeNetwork checks every field and refuses a bad one with InvalidArgumentError.
 * The workload (what the node proxy needs) is there when the event names the pod.
 */
function podOf(event) {
  const { uid, netns, ips, name, namespace, serviceAccount } = event ?? {};
  const named = name !== undefined || namespace !== undefined || serviceAccount !== undefined;
  return { uid, netns, ips, workload: named ? { name, namespace, serviceAccount } : undefined };
}

const node = await openNode();
// The pods enrolled, by UID: what /healthz verifies.
const pods = new Map();

await node.network.start();
log(`node network started${flags.fake ? ' (on FakeNode)' : ''}`);

const server = await listenCni(flags.socket, {
  async add(event) {
    const pod = podOf(event);
    if (typeof pod.netns === 'string') node.podAppears(pod.netns);
    await node.network.addPod(pod);
    pods.set(pod.uid, pod);
    log(`ADD ${pod.uid} ${pod.ips.join(',')}`);
  },
  async del(event) {
    const pod = podOf(event);
    // deleted: the pod is gone for good, so the proxy forgets it too.
    await node.network.removePod({ uid: pod.uid, ips: pod.ips, netns: pod.netns }, { deleted: true });
    pods.delete(pod.uid);
    log(`DEL ${pod.uid}`);
  },
  health: () => node.network.verify({ pods: [...pods.values()] }),
});
log(`listening on ${flags.socket}`);

let stopping;
async function stop(signal) {
  stopping ??= (async () => {
    log(`${signal}: stopping`);
    // No new events first; then the node's own rules go (try/finally: the proxy and socket go even if that fails).
    await new Promise((resolve) => server.close(resolve));
    try {
      await node.network.stop();
    } finally {
      if (node.fakes) {
        const left = node.fakes.netlink.dump().sets.length;
        log(`fake node: probe sets left ${left}, pods still enrolled ${pods.size}, open namespace handles ${node.fakes.netns.openHandles}`);
      }
      await node.close();
      rmSync(flags.socket, { force: true });
    }
    log('stopped');
  })();
  return stopping;
}
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    stop(signal).catch((err) => {
      console.error(`agent: stop failed: ${err?.stack ?? err}`);
      process.exitCode = 1;
    });
  });
}
