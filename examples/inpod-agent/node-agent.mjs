// The wiring of the in-pod agent, apart from its command line so that other programs (scripts/demo.mjs) run the
// same agent: NodeNetwork on the node, the previous run's pods found again, CniServer for podnet-cni, the plugin
// installed into the runtime's CNI dirs, and the health endpoint.
import { CniServer, NodeNetwork, ZtunnelServer, installCniPlugin, uninstallCniPlugin } from 'podnet';
import { FakeNode } from 'podnet/testing';

import { cniHandlers } from './cni-handlers.mjs';
import { listenHealth } from './health.mjs';
import { PodTable } from './pod-state.mjs';
import { rediscoverPods } from './restart.mjs';

/** The node the agent works on: FakeNode's fakes with their own proxy, or the kernel's namespaces. */
async function openNode(o) {
  if (o.fake) {
    const fakes = new FakeNode();
    const { server } = await fakes.proxy();
    const network = new NodeNetwork({ ...(await fakes.options()), proxy: server });
    // On a node the runtime makes the pod's netns before ADD; FakeNode's opener is told of each one.
    return { network, proxy: server, fakes, podAppears: (path) => fakes.netns.add(path), close: () => fakes.close() };
  }
  const owned = o.proxy === undefined && o.ztunnelSocket !== undefined ? await ZtunnelServer.listen({ path: o.ztunnelSocket }) : undefined;
  const proxy = o.proxy ?? owned;
  const network = new NodeNetwork({ ...(o.hostNetns === undefined ? {} : { hostNetns: o.hostNetns }), ...(proxy ? { proxy } : {}) });
  return { network, proxy, close: async () => owned?.close() };
}

/**
 * startNodeAgent starts the agent and resolves a handle with stop(). Options:
 * - socketPath: CniServer's socket (its folder must exist);
 * - fake: run on FakeNode (no root, nothing on the host changes; no restart discovery: FakeNode has no /proc);
 * - hostNetns: the node's netns path when the agent runs in another one (default: its own);
 * - ztunnelSocket: listen for the node proxy there; or proxy: a ZtunnelServer the caller owns;
 * - stateFile: where the enrolled pods are kept across restarts; procRoot: the host's /proc (default /proc);
 * - binDir, confDir: install podnet-cni and its conflist entry there (both or neither); uninstall: take them out on stop;
 * - healthSocket or healthPort: where GET /healthz answers;
 * - allowedUids: uids besides root that may use the CNI socket; log: (line) => void.
 * On a failed start, whatever was started is stopped again before the promise rejects.
 */
export async function startNodeAgent(options) {
  const o = { log: () => {}, ...options };
  const log = o.log;
  const undo = [];
  const unwind = async () => {
    let first;
    for (const step of undo.reverse()) {
      try {
        await step();
      } catch (err) {
        first ??= err;
      }
    }
    undo.length = 0;
    if (first) throw first;
  };
  try {
    const node = await openNode(o);
    undo.push(() => node.close());
    const { network, proxy } = node;
    let started = false;
    await network.start();
    started = true;
    undo.push(async () => {
      started = false;
      await network.stop();
    });
    log(`node network started${o.fake ? ' (on FakeNode)' : ''}`);

    const pods = new PodTable(o.stateFile);
    undo.push(() => pods.close());
    if (o.stateFile !== undefined && !o.fake) {
      const { report, found, missed } = await rediscoverPods({ network, pods, procRoot: o.procRoot, hostNetns: o.hostNetns, log });
      log(`restart: ${found.length} pod(s) found, ${missed.length} missed; rules reapplied ${report.rulesReapplied}, probe entries pruned ${report.pruned.length}`);
    }

    const handlers = cniHandlers({ network, pods, proxy, isStarted: () => started, podAppears: node.podAppears, log });
    const cniLog = (message, fields) => log(`cni: ${message}${fields?.error ? ` (${fields.error.code ?? fields.error.message})` : ''}`);
    const cni = await CniServer.listen({
      path: o.socketPath,
      ...(o.allowedUids ? { allowedUids: o.allowedUids } : {}),
      ...handlers,
      logger: { warn: cniLog, error: cniLog },
    });
    undo.push(() => cni.close());
    log(`listening on ${cni.path}`);

    let installation;
    if (o.binDir !== undefined || o.confDir !== undefined) {
      installation = await installCniPlugin({ binDir: o.binDir, confDir: o.confDir, socketPath: cni.path });
      // The watcher chains the entry again whenever the primary CNI rewrites its config, as long as the agent runs.
      installation.on('chained', (file) => log(`podnet-cni chained into ${file}`));
      installation.on('error', (err) => log(`podnet-cni chaining failed: ${err.code ?? ''} ${err.message}`));
      undo.push(async () => {
        await installation.close();
        if (o.uninstall) {
          const out = await uninstallCniPlugin({ binDir: o.binDir, confDir: o.confDir });
          log(`podnet-cni uninstalled: entry taken out of ${out.configFiles.length} file(s), binary removed: ${out.binaryRemoved}`);
        }
      });
      log(`podnet-cni installed in ${installation.binDir}, entry in ${installation.confDir}`);
    }

    let health;
    if (o.healthSocket !== undefined || o.healthPort !== undefined) {
      health = await listenHealth({
        socketPath: o.healthSocket,
        port: o.healthPort,
        report: async () => {
          const proxyConnected = proxy === undefined ? undefined : proxy.connected > 0;
          if (!started) return { healthy: false, started, proxyConnected };
          const verified = await network.verify({ pods: pods.pods() });
          return { healthy: verified.inSync && proxyConnected !== false, started, proxyConnected, ...verified };
        },
      });
      undo.push(() => new Promise((resolve) => health.close(() => resolve())));
      log(`health on ${o.healthSocket ?? `127.0.0.1:${health.address().port}`}`);
    }

    return {
      network,
      proxy,
      pods,
      cni,
      installation,
      health,
      fakes: node.fakes,
      /** stop takes everything down in reverse order of start; the in-pod rules of enrolled pods stay. */
      stop: unwind,
    };
  } catch (err) {
    await unwind().catch(() => undefined);
    throw err;
  }
}
