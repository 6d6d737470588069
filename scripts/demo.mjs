// npm run demo (as root): NodeNetwork on a simulated node made of network namespaces, shown with real
// connections. Nothing outside the namespaces this script makes is touched, and they are deleted at the end,
// on errors, and on SIGINT/SIGTERM.
//
// The last part hands pods to a node proxy over ZDS: podnet's ZtunnelServer on a socket in a temporary folder, and
// test/fixtures/ztunnel-player.py (python3) playing ztunnel: it takes each pod's netns fd and listens inside it. The
// player is reaped and the folder removed at the end, on errors, and on SIGINT/SIGTERM.
//
// The final part takes a pod through the real CNI chain: the example agent's wiring (examples/inpod-agent) listens
// with CniServer, and a conflist of bridge (host-local IPAM, its dataDir in the temporary folder), loopback and
// podnet-cni is run the way a runtime runs it, in the simulated node's host namespace: ADD plugin by plugin, each
// given the previous result as prevResult, then DEL in reverse. The pod's namespace is made for it and deleted at the
// end, on errors, and on SIGINT/SIGTERM. The CNI plugins come from /usr/lib/cni (containernetworking-plugins).
//
// PODNET_DEMO_TAG (or --tag NAME) puts NAME into every namespace name (podnet-NAME-<pid>-<n>-...), default 'demo'.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { INPOD_ROUTING, Ipset, Netns, NodeNetwork, Rtnetlink, ZtunnelServer, cniPluginPath, runInNetns } from '../dist/index.js';
import { SimulatedNode, echoWho, startEchoWho } from '../dist/testing/index.js';
import { startNodeAgent } from '../examples/inpod-agent/node-agent.mjs';

const argTag = process.argv.indexOf('--tag');
const tag = argTag >= 0 ? process.argv[argTag + 1] : process.env.PODNET_DEMO_TAG || 'demo';
const SET = 'istio-inpod-probes-v4';
const PLAYER = fileURLToPath(new URL('../test/fixtures/ztunnel-player.py', import.meta.url));
const PLAYER_DEADLINE_MS = 20_000;
const CNI_PLUGIN_DIR = '/usr/lib/cni';

const line = (step, text) => console.log(`${`[${step}]`.padEnd(12)} ${text}`);
// Once interrupted, the walk-through stops at its next step instead of racing the cleanup.
const say = (step, text) => {
  abort.signal.throwIfAborted();
  line(step, text);
};

const abort = new AbortController();
let sim;
let simCreating;
let server;
let serverStarting;
let network;
let ipset;
let interrupted;
let socketDir;
let ztunnel;
const players = [];
let cniAgent;
let cniPodNetns;

// One cleanup for every way out (end, error, signal); a second caller waits for the first.
let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    // The server is stopped while its namespace still exists (it exits on its own deadline otherwise).
    const running = server ?? (await serverStarting?.catch(() => undefined));
    await running?.stop().catch(() => undefined);
    // The CNI agent first: no request is served while the rest goes away.
    if (cniAgent) {
      await withDeadline(cniAgent.stop(), 10_000).catch(() => undefined);
      cniAgent = undefined;
    }
    // Players first (each holds pod netns fds), then the agent side; stop() waits until the child is reaped.
    if (players.length > 0) {
      const ends = [];
      for (const p of players) ends.push(`pid ${p.pid} (${describeExit(await p.stop())})`);
      line('cleanup', `ztunnel players reaped: ${ends.join(', ')}`);
    }
    if (network) await withDeadline(network.stop(), 10_000).catch(() => undefined);
    await ztunnel?.close().catch(() => undefined);
    if (socketDir) {
      rmSync(socketDir, { recursive: true, force: true });
      line('cleanup', `removed the socket folder ${socketDir}`);
      socketDir = undefined;
    }
    ipset?.close();
    if (cniPodNetns) {
      await runInNetns(undefined, ['ip', 'netns', 'del', cniPodNetns], { timeoutMs: 10_000 }).catch(() => undefined);
      line('cleanup', `deleted the CNI pod's namespace ${cniPodNetns}`);
      cniPodNetns = undefined;
    }
    // A build still under way sees the abort at its next step and deletes what it made before it rejects.
    const node = sim ?? (await simCreating?.catch(() => undefined));
    if (node) {
      const names = node.names.length;
      await node.destroy();
      line('cleanup', `deleted the ${names} namespaces of the simulated node`);
    } else if (simCreating) {
      line('cleanup', 'the simulated node was not completed: it deleted whatever it had made');
    }
  })();
  return cleaning;
}

function onSignal(signal) {
  if (interrupted) return;
  interrupted = signal;
  console.log(`\n${signal}: interrupted, cleaning up`);
  abort.abort(new Error(`interrupted by ${signal}`));
  cleanup()
    .catch((err) => console.error(`cleanup failed: ${err?.message ?? err}`))
    .finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
}
process.on('SIGINT', () => onSignal('SIGINT'));
process.on('SIGTERM', () => onSignal('SIGTERM'));
// Last resort for paths that skip the finally block (an uncaught error elsewhere): synchronous deletion.
process.on('exit', () => {
  for (const p of players) p.kill('SIGKILL');
  try {
    if (cniPodNetns) rmSync(`/run/netns/${cniPodNetns}`, { force: true });
  } catch {
    // As below.
  }
  try {
    if (socketDir) rmSync(socketDir, { recursive: true, force: true });
  } catch {
    // As below: nothing more can be done on the way out.
  }
  try {
    sim?.destroySync();
    // A build still under way cannot be finished or undone synchronously: name what may be left.
    if (!sim && simCreating && !cleaning) console.error(`a simulated node was being built: check /run/netns for podnet-${tag}-${process.pid}-*`);
  } catch {
    // Nothing more can be done on the way out; the names were printed at the start.
  }
});

function withDeadline(promise, ms) {
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

async function probeEntries(label) {
  const names = await ipset.listNames();
  if (!names.includes(SET)) return 'no probe set';
  const entries = [];
  for await (const e of ipset.entries(SET)) entries.push(`${e.ip} owner ${label(e.comment)}`);
  return entries.length === 0 ? `${SET} is empty` : `${SET}: ${entries.sort().join(', ')}`;
}

/** The pod's policy routing as podnet lists it: the fwmark rule and what table 100 holds. */
async function podRouting(path) {
  const rt = await Rtnetlink.open({ netns: path });
  try {
    const { table, priority } = INPOD_ROUTING;
    const hex = (n) => `0x${n.toString(16)}`;
    const rules = (await rt.rules({ family: 4 })).filter((r) => r.priority === priority);
    const routes = await rt.routes({ table, family: 4 });
    const lo = await rt.link('lo');
    return [
      ...rules.map((r) => `rule ${r.priority}: fwmark ${hex(r.mark ?? 0)}/${hex(r.mask ?? 0xffffffff)} lookup ${r.table}`),
      ...routes.map((r) => `route table ${r.table}: ${r.type} ${r.dstLength === 0 ? 'default' : `${r.dst}/${r.dstLength}`} dev ${r.oif === lo.index ? 'lo' : r.oif}`),
    ];
  } finally {
    rt.close();
  }
}

async function hostRuleLines() {
  const lines = [];
  for (const program of ['iptables-nft-save', 'iptables-legacy-save']) {
    let r;
    try {
      r = await runInNetns(sim.host.path, [program, '-t', 'nat'], { timeoutMs: 10_000 });
    } catch (err) {
      // A machine with one iptables backend only: its rules can only be in that one.
      if (err?.code === 'ENOENT') continue;
      throw err;
    }
    if (r.exitCode !== 0) throw new Error(`${program} failed: ${r.stderr.trim()}`);
    lines.push(...r.stdout.split('\n').filter((l) => l.includes('ISTIO_POSTRT') && l.startsWith('-A')));
  }
  return lines;
}

function landed(answer) {
  const m = /^(\d+) (\S+)$/.exec(answer);
  return m ? `lands on ${m[1]} from ${m[2]}` : `fails: ${answer}`;
}

function describeExit(exit) {
  return exit.signal ? `killed by ${exit.signal}` : `exit ${exit.code}`;
}

/**
 * startPlayer spawns the ztunnel player (argv, no shell) on the ZDS socket and collects the JSON events it prints,
 * one per line. waitFor(predicate, from) resolves the first matching event at index `from` or later; stop() sends
 * SIGTERM (SIGKILL after 5 s) and resolves once the child is reaped.
 */
function startPlayer(socketPath) {
  const child = spawn('python3', [PLAYER, '--socket', socketPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  const events = [];
  const waiters = new Set();
  let stderr = '';
  let ended;
  const notify = () => {
    for (const w of [...waiters]) w();
  };
  child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
  createInterface({ input: child.stdout }).on('line', (text) => {
    let event;
    try {
      event = JSON.parse(text);
    } catch {
      event = { event: 'unparsed', line: text };
    }
    events.push(event);
    notify();
  });
  const exited = new Promise((resolve) => {
    child.on('error', (err) => {
      stderr += `spawn: ${err.message}\n`;
      if (child.pid === undefined) {
        ended = { code: null, signal: null };
        resolve(ended);
        notify();
      }
    });
    // 'close': exited, and stdout and stderr are drained, so every event is in.
    child.on('close', (code, signal) => {
      ended = { code, signal };
      resolve(ended);
      notify();
    });
  });
  const kill = (signal) => {
    if (ended === undefined && child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  const player = {
    pid: child.pid,
    events,
    exited,
    kill,
    waitFor(predicate, from = 0) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = events.slice(from).find(predicate);
          if (found || ended) {
            waiters.delete(check);
            clearTimeout(timer);
            if (found) resolve(found);
            else reject(new Error(`ztunnel player exited (${describeExit(ended)}) before the awaited event; stderr: ${stderr.trim() || 'empty'}`));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`ztunnel player: no awaited event within ${PLAYER_DEADLINE_MS} ms; stderr: ${stderr.trim() || 'empty'}`));
        }, PLAYER_DEADLINE_MS);
        waiters.add(check);
        check();
      });
    },
    async stop() {
      kill('SIGTERM');
      const timer = setTimeout(() => kill('SIGKILL'), 5000);
      try {
        return await exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
  players.push(player);
  return player;
}

const isEvent = (event, fields = {}) => (e) => e.event === event && Object.entries(fields).every(([k, v]) => e[k] === v);

function netnsInode(path) {
  const ns = Netns.open(path);
  try {
    return ns.inode;
  } finally {
    ns.close();
  }
}

async function main() {
  console.log('podnet demo: NodeNetwork on a simulated node (one namespace for the host, one per pod, veths)');
  simCreating = SimulatedNode.create({ tag, pods: 3, signal: abort.signal });
  sim = await simCreating;
  const [A, B, C] = sim.pods;
  const names = new Map([
    [A.uid, 'A'],
    [B.uid, 'B'],
    [C.uid, 'C'],
  ]);
  const label = (uid) => `${uid} (pod ${names.get(uid) ?? '?'})`;
  say('node', `host namespace ${sim.host.name}`);
  for (const [pod, n] of [[A, 'A'], [B, 'B'], [C, 'C']]) say('node', `pod ${n}: ${pod.ip} in ${pod.name}, uid ${pod.uid}`);

  serverStarting = startEchoWho(A.path, { ports: [8080, 15006], lifetimeMs: 60_000 });
  server = await serverStarting;
  say('node', `pod A listens on 8080 (app) and 15006 (proxy inbound); each answer says port and source`);
  const hostToA = async (step) => say(step, `host  -> A:8080 ${landed(await echoWho(sim.host.path, A.ip, 8080))}`);
  const bToA = async (step) => say(step, `pod B -> A:8080 ${landed(await echoWho(B.path, A.ip, 8080))}`);
  await hostToA('before');
  await bToA('before');

  ipset = await Ipset.open({ netns: sim.host.path });
  network = new NodeNetwork({ hostNetns: sim.host.path });
  network.on('conflict', (c) =>
    say('conflict', `event 'conflict': ${c.ip} previous owner ${label(c.previousOwner)}, new owner ${label(c.newOwner)}`),
  );
  network.on('ownerMismatch', (m) =>
    say('mismatch', `event 'ownerMismatch': ${m.ip} not removed for ${label(m.owner)}, owned by ${label(m.actualOwner)}`),
  );

  await network.start();
  say('start', `probe set and host SNAT rule installed in the host namespace:`);
  for (const rule of await hostRuleLines()) say('start', `  ${rule}`);

  const podA = { uid: A.uid, ips: [A.ip], netns: A.path };
  await network.addPod(podA);
  say('addPod A', await probeEntries(label));
  for (const line of await podRouting(A.path)) say('addPod A', `  policy routing in pod A: ${line}`);
  await hostToA('addPod A');
  say('addPod A', '  (kubelet-style probe: SNAT to the probe source on the host, ACCEPTed inside the pod)');
  await bToA('addPod A');
  say('addPod A', '  (pod traffic: REDIRECTed to the proxy inbound port inside the pod, source kept)');

  const podCWithAIp = { uid: C.uid, ips: [A.ip], netns: C.path };
  say('conflict', `pod C is added with A's IP ${A.ip} before A's removal arrived`);
  await network.addPod(podCWithAIp);
  say('conflict', await probeEntries(label));
  await network.removePod(podA);
  say('conflict', `removePod A (late): ${await probeEntries(label)} (C's entry kept)`);
  const leftRouting = await podRouting(A.path);
  say('conflict', `  policy routing left in pod A: ${leftRouting.length === 0 ? 'none' : leftRouting.join('; ')}`);
  await hostToA('conflict');
  await bToA('conflict');
  say('conflict', "  (A's in-pod rules are gone, so pod traffic reaches 8080; C's probe entry for this IP still SNATs the host)");

  await network.removePod(podCWithAIp);
  say('removePod', `removePod C: ${await probeEntries(label)}`);
  await hostToA('removePod');

  await network.addPod({ uid: C.uid, ips: [C.ip], netns: C.path });
  say('snapshot', `pod C enrolled with its own IP: ${await probeEntries(label)}`);
  const waiting = await network.syncSnapshot([
    { uid: A.uid, ips: [A.ip] },
    { uid: B.uid, ips: [B.ip] },
    { uid: 'pod-without-ip', ips: [] },
  ]);
  say(
    'snapshot',
    `snapshot A, B and a pod without IP yet: added ${waiting.added}, unchanged ${waiting.unchanged}, ` +
      `pruned ${waiting.pruned.length}, prune skipped: ${waiting.pruneSkipped}`,
  );
  say('snapshot', await probeEntries(label));
  const full = await network.syncSnapshot([
    { uid: A.uid, ips: [A.ip] },
    { uid: B.uid, ips: [B.ip] },
  ]);
  say(
    'snapshot',
    `snapshot A, B: added ${full.added}, unchanged ${full.unchanged}, pruned ` +
      (full.pruned.map((p) => `${p.ip} of ${label(p.owner)}`).join(', ') || 'nothing') +
      `, prune skipped: ${full.pruneSkipped}`,
  );
  say('snapshot', await probeEntries(label));

  await network.removePod({ uid: C.uid, ips: [], netns: C.path });
  await network.stop();
  network = undefined;
  const left = await hostRuleLines();
  say('stop', `host SNAT rules left: ${left.length}, probe sets left: ${(await ipset.listNames()).length}`);

  const player = await proxyHandoff(label);
  await cniChain(player);
}

/**
 * The node proxy part: each pod's netns goes to the proxy over ZDS, and pod traffic lands on the proxy's listener
 * inside the pod. Pods A and C are enrolled; B stays out as the client (an enrolled pod's own outbound traffic would
 * be captured by its own REDIRECT to 15001, where the player does not listen).
 */
async function proxyHandoff(label) {
  const [A, B, C] = sim.pods;
  // The player listens on 15006 inside each pod it is given: A's app server (on 8080 and 15006) goes first, so
  // whatever answers on A:8080 below is the proxy.
  await server.stop();
  server = undefined;
  say('proxy', "pod A's app server stopped: nothing podnet runs listens in pod A now");

  socketDir = mkdtempSync(join(tmpdir(), 'podnet-demo-'));
  ztunnel = await ZtunnelServer.listen({ path: join(socketDir, 'ztunnel.sock') });
  say('proxy', `ZtunnelServer listening on ${ztunnel.path}`);
  const first = startPlayer(ztunnel.path);
  const hello = await first.waitFor(isEvent('hello'));
  await first.waitFor(isEvent('ack', { request: 'snapshotSent' }));
  say('proxy', `ztunnel player pid ${first.pid} connected (hello version ${hello.version}), empty snapshot: SnapshotSent`);

  network = new NodeNetwork({ hostNetns: sim.host.path, proxy: ztunnel });
  await network.start();
  const enrolled = [
    ['A', { uid: A.uid, ips: [A.ip], netns: A.path, workload: { name: 'pod-a', namespace: 'demo', serviceAccount: 'sa-a' } }],
    ['C', { uid: C.uid, ips: [C.ip], netns: C.path, workload: { name: 'pod-c', namespace: 'demo', serviceAccount: 'sa-c' } }],
  ];
  for (const [n, pod] of enrolled) {
    const from = first.events.length;
    await network.addPod(pod);
    const add = await first.waitFor(isEvent('add', { uid: pod.uid }), from);
    const listening = await first.waitFor(isEvent('listening', { uid: pod.uid }), from);
    say(
      'proxy',
      `addPod ${n}: handed to the proxy, uid ${pod.uid}, netns inode ${netnsInode(pod.netns)}; ` +
        `player got netns inode ${add.netnsInode}, listens on ${listening.port} there`,
    );
  }

  const bToA = async (step, player) => {
    const from = player?.events.length ?? 0;
    const answer = await echoWho(B.path, A.ip, 8080);
    say(step, `pod B -> A:8080 answered: ${answer}`);
    if (player && answer.startsWith('ztunnel-player ')) {
      const conn = await player.waitFor(isEvent('conn'), from);
      say(step, `  player's listener in pod A: original destination ${conn.origDst} (${conn.origDstSource}), from ${conn.peer.replace(/:\d+$/, '')}`);
    }
  };
  await bToA('proxy', first);

  const gone = withDeadline(once(ztunnel, 'disconnected'), PLAYER_DEADLINE_MS);
  first.kill('SIGKILL');
  const firstExit = await first.exited;
  await gone;
  say('restart', `ztunnel player pid ${first.pid} ${describeExit(firstExit)}; proxies connected: ${ztunnel.connected}`);
  await bToA('restart');
  say('restart', '  (pod A stays redirected with no proxy listening: it fails closed)');

  const snapshot = withDeadline(once(ztunnel, 'snapshotSent'), PLAYER_DEADLINE_MS);
  const second = startPlayer(ztunnel.path);
  const sent = await second.waitFor(isEvent('snapshotSent'));
  const [, outcome] = await snapshot;
  const adds = second.events.filter(isEvent('add')).map((e) => `${label(e.uid)} netns inode ${e.netnsInode}`);
  say('restart', `ztunnel player pid ${second.pid} connected (proxies connected: ${ztunnel.connected}), snapshot: add ${adds.join(', add ')}`);
  say(
    'restart',
    `  SnapshotSent: player keeps ${sent.workloads.map(label).join(', ')}; dropped ${sent.dropped.length}; ` +
      `server outcome: added ${outcome.added}, kept ${outcome.kept}, failed ${outcome.failed.length}`,
  );
  await bToA('restart', second);

  const beforeDel = second.events.length;
  for (const [, pod] of enrolled) await network.removePod(pod);
  await second.waitFor(isEvent('ack', { request: 'del', uid: C.uid }), beforeDel);
  const dels = second.events.slice(beforeDel).filter(isEvent('del')).map((e) => label(e.uid));
  say('proxy', `removePod A, C: player got del for ${dels.join(', ')}; proxy workloads left: ${ztunnel.workloads.length}`);
  await bToA('proxy');
  await network.stop();
  network = undefined;
  const left = await hostRuleLines();
  say('proxy', `NodeNetwork stopped: host SNAT rules left: ${left.length}, probe sets left: ${(await ipset.listNames()).length}`);
  return second;
}

/** runPlugin runs one CNI plugin in the node's host namespace as a runtime does: CNI_* in env, the config on stdin. */
async function runPlugin(path, env, config) {
  const r = await runInNetns(sim.host.path, [path], { env, stdin: JSON.stringify(config), timeoutMs: 30_000 });
  const out = r.stdout.trim();
  if (r.exitCode !== 0) throw new Error(`${config.type} ${env.CNI_COMMAND} exited ${r.exitCode}: ${out} ${r.stderr.trim()}`);
  return out === '' ? undefined : JSON.parse(out);
}

/**
 * The final part: a pod through the real CNI chain. The example agent's wiring runs NodeNetwork with the ZDS server
 * and player of the proxy part and listens for podnet-cni; the conflist's plugins run as a runtime runs them, and
 * pod B's first connection to the new pod lands on the player's listener inside it.
 */
async function cniChain(player) {
  const [, B] = sim.pods;
  const label = (uid) => (uid === podUid ? `${uid} (pod P)` : uid);
  const podUid = randomUUID();
  const containerId = `demo${process.pid}`;
  cniPodNetns = `podnet-${tag}-${process.pid}-cni-pod`;
  await runInNetns(undefined, ['ip', 'netns', 'add', cniPodNetns], { timeoutMs: 10_000 }).then((r) => {
    if (r.exitCode !== 0) throw new Error(`ip netns add failed: ${r.stderr.trim()}`);
  });
  const netnsPath = `/run/netns/${cniPodNetns}`;
  say('cni', `pod P: namespace ${cniPodNetns}, uid ${podUid}, container ${containerId}`);

  const socketPath = join(socketDir, 'cni.sock');
  cniAgent = await startNodeAgent({ socketPath, hostNetns: sim.host.path, proxy: ztunnel, log: (text) => say('cni', `agent: ${text}`) });
  const dataDir = join(socketDir, 'host-local');
  const conflist = {
    cniVersion: '1.0.0',
    name: 'podnet-demo',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni-podnet0',
        isGateway: true,
        ipMasq: false,
        ipam: { type: 'host-local', dataDir, ranges: [[{ subnet: '10.245.0.0/24' }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
      { type: 'loopback' },
      { type: 'podnet-cni', socketPath, timeoutMs: 10_000 },
    ],
  };
  say('cni', `conflist ${conflist.name}: ${conflist.plugins.map((p) => p.type).join(', ')} (host-local dataDir ${dataDir})`);
  const pathOf = (type) => (type === 'podnet-cni' ? cniPluginPath() : join(CNI_PLUGIN_DIR, type));
  const env = (command) => ({
    CNI_COMMAND: command,
    CNI_CONTAINERID: containerId,
    CNI_NETNS: netnsPath,
    CNI_IFNAME: 'eth0',
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=demo;K8S_POD_NAME=pod-p;K8S_POD_UID=${podUid}`,
    CNI_PATH: CNI_PLUGIN_DIR,
  });
  const configOf = (plugin, prevResult) => ({
    cniVersion: conflist.cniVersion,
    name: conflist.name,
    ...plugin,
    ...(prevResult === undefined ? {} : { prevResult }),
  });

  let result;
  const from = player.events.length;
  for (const plugin of conflist.plugins) {
    // Each plugin's result is the next one's prevResult; a plugin that prints nothing passes the last one on.
    result = (await runPlugin(pathOf(plugin.type), env('ADD'), configOf(plugin, result))) ?? result;
    say('cni', `ADD ${plugin.type}: exit 0, result ips ${result?.ips?.map((i) => i.address).join(', ') ?? 'none'}`);
  }
  const podIp = result.ips[0].address.split('/')[0];
  const add = await player.waitFor(isEvent('add', { uid: podUid }), from);
  const listening = await player.waitFor(isEvent('listening', { uid: podUid }), from);
  say('cni', `pod P ${podIp}: handed to the proxy, netns inode ${netnsInode(netnsPath)}; player got netns inode ${add.netnsInode}, listens on ${listening.port} there`);
  say('cni', `pod P ${await probeEntries(label)}`);

  const before = player.events.length;
  const answer = await echoWho(B.path, podIp, 8080);
  say('cni', `pod B -> P:8080 answered: ${answer}`);
  if (answer.startsWith('ztunnel-player ')) {
    const conn = await player.waitFor(isEvent('conn'), before);
    say('cni', `  player's listener in pod P: original destination ${conn.origDst} (${conn.origDstSource}), from ${conn.peer.replace(/:\d+$/, '')}`);
  }

  const beforeDel = player.events.length;
  for (const plugin of [...conflist.plugins].reverse()) {
    await runPlugin(pathOf(plugin.type), env('DEL'), configOf(plugin, result));
    say('cni', `DEL ${plugin.type}: exit 0`);
  }
  await player.waitFor(isEvent('ack', { request: 'del', uid: podUid }), beforeDel);
  const dels = player.events.slice(beforeDel).filter(isEvent('del')).map((e) => label(e.uid));
  say('cni', `player got del for ${dels.join(', ')}; ${await probeEntries(label)}; host-local leases left: ${leases(dataDir)}`);
  const agent = cniAgent;
  cniAgent = undefined;
  await agent.stop();
  say('cni', `agent stopped: probe sets left: ${(await ipset.listNames()).length}, CNI socket left: ${existsSync(socketPath)}`);
}

/** leases counts host-local's address files (one per leased IP) in its network's folder. */
function leases(dataDir) {
  const dir = join(dataDir, 'podnet-demo');
  if (!existsSync(dir)) return 0;
  return readdirSync(dir).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)).length;
}

let failed = false;
try {
  await main();
} catch (err) {
  if (!interrupted) {
    failed = true;
    console.error(`demo failed: ${err?.stack ?? err}`);
  }
} finally {
  try {
    await cleanup();
  } catch (err) {
    failed = true;
    console.error(`cleanup failed: ${err?.message ?? err}`);
  }
}
if (interrupted) process.exit(interrupted === 'SIGINT' ? 130 : 143);
process.exitCode = failed ? 1 : 0;
