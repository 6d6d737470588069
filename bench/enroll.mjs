// Scenario 16: one pod enrolled, each sample a new pod in a namespace of its own (as a kubelet's CNI ADD brings it):
// NodeNetwork.addPod with the nftables backend (in-pod rules, policy rule and route, the proxy's ZDS Add acked by a C
// peer, the host probe entry) against the reference agent's own sequence for the same pod (`nft -f` of its in-pod
// rules in the pod, `nft -f` of the probe set element on the host, both started with runInNetns); and addPod with the
// iptables backend against one bare iptables-restore of the same pod's in-pod rules. Both agents first enroll
// `enrollWarmup` pods one after another: a node agent runs for the node's life, and its first pods pay V8's compile-up
// of the code they run. The nftables agent's first 20 are a row of their own, and its last half another: pods enrolled
// back to back by a warm agent, with no program run in between. A fifth contender is the floor: the same netlink
// work (podnet's own request bytes) done by one C thread, no proxy round trip (bench/pod-floor.mjs).
import { Iptables, NFT_PROBE_SET_COMMENT, NodeNetwork, inpodRules, runInNetns } from '../dist/index.js';
import { interleaved } from './harness.mjs';
import { createNetns, withNetns } from './netns.mjs';
import { startPodFloor } from './pod-floor.mjs';
import { INPOD_TEXT, nftIn } from './nftables.mjs';
import { withZdsPeer } from './zds-peer.mjs';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const W = { name: 'enroll', namespace: 'bench', serviceAccount: 'default' };

/** The reference's probe set on its host: the table and set its start-up makes, so a pod's step is one element. */
const REF_HOST_TEXT = `add table inet istio-ambient-nat\nadd set inet istio-ambient-nat istio-inpod-probes-v4 { type ipv4_addr; comment "${NFT_PROBE_SET_COMMENT}"; }\n`;

/** ipOf is the n-th pod's IPv4 address in a /16 of its own per contender. */
const ipOf = (net, n) => `10.${net}.${(n >> 8) & 255}.${n & 255}`;

export async function enrollScenarios(res, cfg, binDir) {
  await withZdsPeer(binDir, async (server) => {
    await withNetns(async (hostNft, hostIpt, refHost, floorHost) => {
      const S = '16 one pod enrolled (a new namespace each)';
      const warmup = 3;
      const rounds = warmup + cfg.enrollSamples;
      // Every pod's namespace is made before the first sample: made in between, its `ip` would fork this process
      // and leave the next sample paying the copy-on-write faults (see bench/README.md).
      const pools = [0, 1, 2, 3, 4].map(() => Array.from({ length: rounds }, () => createNetns('enroll')));
      const warmPools = [0, 1].map(() => Array.from({ length: cfg.enrollWarmup }, () => createNetns('enroll')));
      const nft = new NodeNetwork({ hostNetns: hostNft.path, backend: 'nftables', kubeletUid: 0, preflight: false, proxy: server, logger: quiet });
      const ipt = new NodeNetwork({ hostNetns: hostIpt.path, backend: 'iptables', kubeletUid: 0, preflight: false, proxy: server, logger: quiet });
      await nft.start();
      await ipt.start();
      const floor = await startPodFloor(binDir, floorHost.path);
      try {
        await nftIn(refHost, REF_HOST_TEXT);
        const backend = (await Iptables.open({ netns: hostIpt.path })).backend;
        const restoreText = inpodRules({ family: 4, dnsCapture: true }).render();
        const restoreArgv = [`iptables-${backend}-restore`, '--noflush'];
        // The agents' warm-up: pods enrolled one after another; the nftables agent's first 20 are timed.
        const firstPods = [];
        const backToBack = [];
        for (const [a, agent] of [nft, ipt].entries()) {
          for (const [n, ns] of warmPools[a].entries()) {
            const t0 = performance.now();
            await agent.addPod({ uid: `warm-${a}-${n}`, ips: [ipOf(210 + a, n)], netns: ns.path, workload: W });
            if (a === 0 && n < 20) firstPods.push(performance.now() - t0);
            if (a === 0 && n >= cfg.enrollWarmup / 2) backToBack.push(performance.now() - t0);
          }
        }
        const used = [0, 0, 0, 0, 0];
        const next = (c) => pools[c][used[c]++];
        const podFor = (c, ns) => ({ uid: `enroll-${c}-${used[c]}`, ips: [ipOf(200 + c, used[c])], netns: ns.path, workload: W });
        let nftPod;
        let iptPod;
        let refPod;
        let barePod;
        let floorPod;
        const [nftTimes, refTimes, iptTimes, bareTimes, floorTimes] = await interleaved(
          [
            { setup: () => { nftPod = podFor(0, next(0)); }, run: () => nft.addPod(nftPod) },
            { setup: () => { refPod = { ns: next(1), ip: ipOf(201, used[1]), uid: `ref-${used[1]}` }; }, run: async () => {
              await nftIn(refPod.ns, INPOD_TEXT);
              await nftIn(refHost, `add element inet istio-ambient-nat istio-inpod-probes-v4 { ${refPod.ip} comment "${refPod.uid}" }\n`);
            } },
            { setup: () => { iptPod = podFor(2, next(2)); }, run: () => ipt.addPod(iptPod) },
            { setup: () => { barePod = next(3); }, run: async () => {
              const r = await runInNetns(barePod.path, restoreArgv, { stdin: restoreText, timeoutMs: 60_000 });
              if (r.exitCode !== 0) throw new Error(`${restoreArgv[0]} exited ${r.exitCode ?? r.signal}: ${r.stderr.trim()}`);
            } },
            { setup: () => { floorPod = { ns: next(4), ip: ipOf(204, used[4]) }; }, run: () => floor.pod(floorPod.ns.path, floorPod.ip) },
          ],
          { warmup, samples: cfg.enrollSamples },
        );
        const n = res.row(S, 'addPod, nftables backend (rules, route, proxy Add acked, probe entry)', nftTimes, { podnet: true });
        res.row(S, "addPod, nftables backend: a new agent's first 20 pods (one after another, V8 still compiling)", firstPods);
        res.row(S, 'addPod, nftables backend: a warm agent, pods back to back (no program run in between)', backToBack);
        const r = res.row(S, 'reference CLI: nft -f of the in-pod rules + nft -f of the host set element', refTimes);
        const i = res.row(S, 'addPod, iptables backend (the same steps)', iptTimes);
        const b = res.row(S, `one bare ${restoreArgv[0]} of the in-pod rules`, bareTimes);
        const f = res.row(S, 'raw C floor: the same netlink requests from one thread, no proxy (pod_raw.c)', floorTimes, { note: 'C clock' });
        // How far the reference is from podnet depends on the machine's cost of starting a process against its cost
        // of a netlink exchange, which differ by 3x between the VMs this runs on (the reference read 26-47 ms against
        // a floor of 0.29 ms on one, 9-11 ms against 0.44-0.53 ms on another, where the C floor itself is only 18-22x
        // faster than the reference). The CI gate gives a ratio 3x of slack; the reference's ratio is gated where the
        // floor clears the target by that slack too (>= 60x), so that CI fails for podnet's cost, not the machine's,
        // and podnet's cost over the floor's is gated everywhere.
        const reachable = r.median / f.median >= 60;
        res.target(S, 'reference CLI / raw C floor (what any client could reach here)', r.median / f.median, '>=', 20, 'x', { gate: false });
        res.target(S, 'reference CLI / addPod (nftables)', r.median / n.median, '>=', 20, 'x', { gate: reachable });
        res.target(S, 'addPod (nftables) / raw C floor (the floor has no proxy round trip)', n.median / f.median, '<=', 3);
        res.target(S, 'addPod (nftables) median', n.median, '<=', 1, ' ms', { gate: false });
        res.target(S, 'addPod (iptables) / one bare restore', i.median / b.median, '<=', 1.2);
      } finally {
        await floor.close();
        await nft.stop();
        await ipt.stop();
        for (const pool of [...pools, ...warmPools]) for (const ns of pool) ns.delete();
      }
    }, 4, 'enroll-host');
  });
}
