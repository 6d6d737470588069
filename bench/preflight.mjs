// Scenario 14: the preflight's cost against NodeNetwork.start() in the same run. start() runs checkNode first and
// keeps its report for the process, so what an agent pays on every start after the first is the cached answer; the
// first start of a process pays a whole check (every probe in a fresh namespace), reported beside it.
import { NodeNetwork, checkNode } from '../dist/index.js';
import { interleaved, now, stats } from './harness.mjs';
import { withNetns } from './netns.mjs';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** startOnce times one start() (its own clock: the stop() after it is not part of the sample). */
async function startOnce(host, preflight) {
  const net = new NodeNetwork({ hostNetns: host.path, logger: quiet, preflight });
  const t0 = now();
  await net.start();
  const ms = now() - t0;
  await net.stop();
  return ms;
}

export async function preflightScenarios(res, cfg) {
  await withNetns(async (host) => {
    const S = '14 preflight vs start()';
    // The cached contender needs the report first; a failed check would make every start() fail, so say why.
    const first = await checkNode({ backend: 'iptables' });
    if (!first.ok) throw new Error(`preflight finds features missing on this machine: ${first.missing.map((r) => r.feature).join(', ')}`);
    const [bare, cached] = await interleaved(
      [
        { run: () => startOnce(host, false) },
        { run: () => startOnce(host, true) },
      ],
      { warmup: 2, samples: cfg.preflightStarts },
    );
    const [coldIpt, coldNft] = await interleaved(
      [
        { run: async () => { await checkNode({ backend: 'iptables', cache: false }); } },
        { run: async () => { await checkNode({ backend: 'nftables', cache: false }); } },
      ],
      { warmup: 1, samples: cfg.preflightChecks },
    );
    const b = res.row(S, 'start(), preflight: false (iptables backend)', bare, { podnet: true });
    const c = res.row(S, 'start() with the preflight (the process report, as every start after the first)', cached);
    res.row(S, 'checkNode, cache: false, iptables (a first start pays this once)', coldIpt, { note: 'every probe in a fresh namespace' });
    res.row(S, 'checkNode, cache: false, nftables', coldNft);
    res.target(S, 'start() with preflight - start() without (difference of medians), ms', c.median - b.median, '<=', 30, ' ms');
    res.note(`14: a first start() of a process pays the whole check once: ${Math.round(stats(coldIpt).median)} ms median for iptables, ${Math.round(stats(coldNft).median)} ms for nftables`);
  }, 1, 'pf');
}

