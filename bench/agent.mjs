// Scenario 9: the node agent on real namespaces. syncSnapshot of N pods (probe sets only), and the addPod +
// removePod cycle of one pod compared with the sum of its parts (an ipset add + del of the same entry, the
// Iptables apply + remove of inpodRules in the pod's namespace, and its policy rule and route added and deleted).
import { Ipset, Iptables, NodeNetwork, Rtnetlink, inpodRoute, inpodRoutingRule, inpodRules } from '../dist/index.js';
import { now, sample } from './harness.mjs';
import { withNetns } from './netns.mjs';
import { ipOf } from './ipset.mjs';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

export async function agentScenarios(res, cfg) {
  await withNetns(async (host, podNs) => {
    // ---- syncSnapshot of N pods, no pod namespaces ----
    {
      const S = `9 agent syncSnapshot ${cfg.pods / 1000}k pods`;
      const pods = Array.from({ length: cfg.pods }, (_, i) => ({ uid: `pod-${i}`, ips: [ipOf(i)] }));
      let agent;
      const fresh = await sample(
        async () => {
          const r = await agent.syncSnapshot(pods);
          if (r.added !== cfg.pods) throw new Error(`added ${r.added}`);
        },
        {
          warmup: 1,
          samples: cfg.podSamples,
          setup: async () => { agent = new NodeNetwork({ hostNetns: host.path, logger: quiet }); await agent.start(); },
          teardown: async () => { await agent.stop(); },
        },
      );
      res.row(S, 'syncSnapshot into empty probe sets', fresh, { podnet: true });

      // A restart with `keep`: the sets already hold every pod. Each add fails EXIST and the owner is then looked
      // up by streaming the whole set, so this grows with N^2; measured at a small N only.
      const small = cfg.resyncPods;
      const Sr = `9 agent re-sync ${small} unchanged pods`;
      const first = new NodeNetwork({ hostNetns: host.path, logger: quiet });
      await first.start();
      await first.syncSnapshot(pods.slice(0, small));
      await first.stop({ keep: true });
      const again = new NodeNetwork({ hostNetns: host.path, logger: quiet });
      await again.start();
      const t0 = now();
      const r = await again.syncSnapshot(pods.slice(0, small));
      const ms = now() - t0;
      if (r.unchanged !== small) throw new Error(`unchanged ${r.unchanged}`);
      await again.stop();
      res.row(Sr, 'syncSnapshot, all unchanged (after stop({keep}))', [ms], { podnet: true, note: 'owner lookup streams the set per entry' });
    }

    // ---- addPod + removePod cycle vs its parts ----
    {
      const S = '9 agent pod cycle';
      const agent = new NodeNetwork({ hostNetns: host.path, logger: quiet });
      await agent.start();
      const ipset = await Ipset.open({ netns: host.path });
      try {
        await ipset.create('bpart', { type: 'hash:ip', family: 'inet', comment: true });
        const rules = inpodRules({ family: 4, dnsCapture: true });
        const backend = (await Iptables.open({ netns: host.path })).backend; // what the agent detected
        const ipt = await Iptables.open({ netns: podNs.path, backend });
        const pod = { uid: 'pod-cycle', ips: ['10.250.0.1'], netns: podNs.path };
        const cycle = [];
        const ipsetPart = [];
        const iptPart = [];
        const routePart = [];
        const once = async (k) => {
          const t0 = now();
          await agent.addPod(pod);
          await agent.removePod(pod);
          const t1 = now();
          await ipset.add('bpart', { ip: '10.250.0.1', comment: 'pod-cycle' });
          await ipset.del('bpart', { ip: '10.250.0.1' });
          const t2 = now();
          await ipt.apply(rules);
          await ipt.remove(rules);
          const t3 = now();
          // As the agent does it: a client opened in the pod's namespace per pod, lo looked up by name.
          const rt = await Rtnetlink.open({ netns: podNs.path });
          try {
            await rt.addresses({ link: 'lo', family: 6 });
            await rt.addRule(inpodRoutingRule(4));
            await rt.addRoute(inpodRoute(4), { replace: true });
            await rt.delRule(inpodRoutingRule(4));
            await rt.delRoute(inpodRoute(4));
          } finally {
            rt.close();
          }
          const t4 = now();
          if (k >= 0) {
            cycle.push(t1 - t0);
            ipsetPart.push(t2 - t1);
            iptPart.push(t3 - t2);
            routePart.push(t4 - t3);
          }
        };
        await once(-1);
        await once(-1);
        for (let k = 0; k < cfg.cycles; k++) await once(k);
        const sum = cycle.map((_, k) => ipsetPart[k] + iptPart[k] + routePart[k]);
        const rc = res.row(S, 'addPod + removePod', cycle, { podnet: true });
        res.row(S, 'part: ipset add + del', ipsetPart);
        res.row(S, `part: Iptables apply + remove inpodRules (${backend})`, iptPart);
        res.row(S, 'part: policy rule and route added and deleted (rtnetlink)', routePart);
        const rs = res.row(S, 'sum of parts', sum);
        res.target(S, 'cycle / sum of parts', rc.median / rs.median, '<=', 2);
        await ipset.destroy('bpart');
      } finally {
        ipset.close();
        await agent.stop();
      }
    }
  }, 2, 'agent');
}
