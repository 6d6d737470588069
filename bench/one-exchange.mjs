// Scenario 18: a client made for one exchange in a pod's namespace (open, one batch, close), as a node agent makes per
// pod: its socket opened by open() on the hop thread (a hand-off each way), then the batch on a libuv worker (another
// each way), against `defer: true`, where the batch's own hop opens the socket. Each sample is a fresh namespace that
// was idle for a while before, as a new pod's is; the two ways take turns sample by sample so the machine's drift
// lands on both alike. Reported, not gated.
import { Netns, Nftables, Rtnetlink, inpodRoute, inpodRoutingRule, nftInpodRules } from '../dist/index.js';

/** The idle time before each sample: long enough for the threads to sleep and the caches to go cold. */
const IDLE_MS = 20;

const pause = () => new Promise((resolve) => setTimeout(resolve, IDLE_MS));

export async function oneExchangeScenarios(res, cfg) {
  const inpod = Nftables.prepare(nftInpodRules({ ipv6: false }));
  const routing = [
    { op: 'addRule', rule: inpodRoutingRule(4) },
    { op: 'addRoute', route: inpodRoute(4) },
  ];
  const ways = [
    ['Nftables: open, run the in-pod batch, close', async (netns, defer) => {
      const nft = await Nftables.open({ netns, defer });
      try {
        await nft.run(inpod);
      } finally {
        nft.close();
      }
    }],
    ['Rtnetlink: open, batch of the policy rule and route, close', async (netns, defer) => {
      const rt = await Rtnetlink.open({ netns, defer });
      try {
        const failed = (await rt.batch(routing)).find((err) => err !== undefined);
        if (failed) throw failed;
      } finally {
        rt.close();
      }
    }],
  ];
  for (const [what, once] of ways) {
    const S = `18 one exchange in a fresh namespace, ${what.split(':')[0]}`;
    const times = [[], []];
    for (let i = 0; i < cfg.exchangeWarmup + 2 * cfg.exchangeSamples; i++) {
      const defer = i % 2 === 1;
      const netns = await Netns.create();
      try {
        await pause();
        const t = performance.now();
        await once(netns, defer);
        if (i >= cfg.exchangeWarmup) times[+defer].push(performance.now() - t);
      } finally {
        netns.close();
      }
    }
    const eager = res.row(S, `${what}: socket opened by open()`, times[0]);
    const deferred = res.row(S, `${what}: defer (socket opened in the batch's hop)`, times[1], { podnet: true });
    res.target(S, 'defer / opened by open()', deferred.median / eager.median, '<=', 1, 'x', { gate: false });
  }
}
