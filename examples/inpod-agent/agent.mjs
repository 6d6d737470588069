// A skeleton of an in-pod (ambient) node agent on podnet, the parts a copy keeps: podnet-cni (chained after the
// node's primary CNI) forwards each CNI invocation to the agent's CniServer, which enrolls the pod with NodeNetwork
// (host probe sets, in-pod redirection rules and routes, and the handoff of the pod's netns to the node proxy).
//
//   sudo node examples/inpod-agent/agent.mjs \
//        --socket /var/run/podnet/cni.sock --cni-bin-dir /opt/cni/bin --cni-conf-dir /etc/cni/net.d \
//        --ztunnel-socket /var/run/ztunnel/ztunnel.sock --state-file /var/run/podnet/agent-state.json \
//        --health-port 15021 [--host-netns PATH] [--proc-root /host/proc] [--uninstall]
//   node examples/inpod-agent/agent.mjs --fake --socket /tmp/cni.sock --health-socket /tmp/health.sock
//
// CNI commands: ADD enrolls the pod (NodeNetwork.addPod), DEL removes it (removePod({ deleted: true })), CHECK
// verifies it, STATUS says whether the node network is started and the proxy connected, GC removes the pods not in
// the runtime's valid attachments. Until the agent listens, ADD fails with code 11 and the runtime retries it: a
// pod never starts outside the mesh. --state-file keeps the enrolled pods (container ID, pod UID, IPs) so that a
// restarted agent finds their netns again from /proc (--proc-root) and takes them over. GET /healthz on
// --health-socket or --health-port answers 200 when everything verifies, 503 with the report otherwise.
// --fake runs on FakeNode (no root; nothing on the host changes): CNI still arrives through podnet-cni and the
// netns fds it passes, the node's rules go to the fakes.
//
// SIGTERM or SIGINT stop it: the health endpoint and the installer's watcher close (with --uninstall, podnet-cni and
// its entry are taken out), CniServer answers what it has read and closes, then NodeNetwork removes its host rules
// and probe sets. The in-pod rules of enrolled pods stay: those pods still run, and the next agent takes them over.
import { parseArgs } from 'node:util';

import { startNodeAgent } from './node-agent.mjs';

const { values: flags } = parseArgs({
  options: {
    fake: { type: 'boolean', default: process.env.PODNET_AGENT_FAKE === '1' },
    socket: { type: 'string', default: process.env.PODNET_AGENT_SOCKET || '/var/run/podnet/cni.sock' },
    'ztunnel-socket': { type: 'string' },
    'host-netns': { type: 'string' },
    'state-file': { type: 'string' },
    'proc-root': { type: 'string' },
    'cni-bin-dir': { type: 'string' },
    'cni-conf-dir': { type: 'string' },
    uninstall: { type: 'boolean', default: false },
    'health-socket': { type: 'string' },
    'health-port': { type: 'string' },
  },
});

const log = (text) => console.log(`agent: ${text}`);

if ((flags['cni-bin-dir'] === undefined) !== (flags['cni-conf-dir'] === undefined)) {
  console.error('agent: --cni-bin-dir and --cni-conf-dir go together');
  process.exit(2);
}
const healthPort = flags['health-port'] === undefined ? undefined : Number(flags['health-port']);
if (healthPort !== undefined && !(Number.isInteger(healthPort) && healthPort >= 0 && healthPort <= 65535)) {
  console.error(`agent: --health-port '${flags['health-port']}' is not a port number`);
  process.exit(2);
}

let agent;
try {
  agent = await startNodeAgent({
    fake: flags.fake,
    socketPath: flags.socket,
    hostNetns: flags['host-netns'],
    ztunnelSocket: flags['ztunnel-socket'],
    stateFile: flags['state-file'],
    procRoot: flags['proc-root'],
    binDir: flags['cni-bin-dir'],
    confDir: flags['cni-conf-dir'],
    uninstall: flags.uninstall,
    healthSocket: flags['health-socket'],
    healthPort,
    // On FakeNode the plugin runs as the user who runs the test; on a node it runs as root, the only uid allowed.
    allowedUids: flags.fake && process.getuid() !== 0 ? [process.getuid()] : undefined,
    log,
  });
} catch (err) {
  console.error(`agent: start failed: ${err?.stack ?? err}`);
  process.exit(1);
}

let stopping;
async function stop(signal) {
  stopping ??= (async () => {
    log(`${signal}: stopping`);
    const enrolled = agent.pods.size;
    await agent.stop();
    if (agent.fakes) {
      const left = agent.fakes.netlink.dump().sets.length;
      log(`fake node: probe sets left ${left}, pods still enrolled ${enrolled}, open namespace handles ${agent.fakes.netns.openHandles}`);
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
