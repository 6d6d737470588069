// npm run demo (as root): NodeNetwork on a simulated node made of network namespaces, shown with real
// connections. Nothing outside the namespaces this script makes is touched, and they are deleted at the end,
// on errors, and on SIGINT/SIGTERM.
//
// PODNET_DEMO_TAG (or --tag NAME) puts NAME into every namespace name (podnet-NAME-<pid>-<n>-...), default 'demo'.
import { INPOD_ROUTING, Ipset, NodeNetwork, Rtnetlink, runInNetns } from '../dist/index.js';
import { SimulatedNode, echoWho, startEchoWho } from '../dist/testing/index.js';

const argTag = process.argv.indexOf('--tag');
const tag = argTag >= 0 ? process.argv[argTag + 1] : process.env.PODNET_DEMO_TAG || 'demo';
const SET = 'istio-inpod-probes-v4';

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

// One cleanup for every way out (end, error, signal); a second caller waits for the first.
let cleaning;
function cleanup() {
  cleaning ??= (async () => {
    // The server is stopped while its namespace still exists (it exits on its own deadline otherwise).
    const running = server ?? (await serverStarting?.catch(() => undefined));
    await running?.stop().catch(() => undefined);
    if (network) await withDeadline(network.stop(), 10_000).catch(() => undefined);
    ipset?.close();
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
