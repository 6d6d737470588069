// Scenario 14: the preflight's cost against NodeNetwork.start() in the same run. start() runs checkNode first and
// keeps its report for the process: a process's first start pays a whole check (every probe in a fresh anonymous
// namespace), every later one the cached answer. Both are timed beside a start() without the preflight, and the whole
// check per backend beside them.
import { NodeNetwork, PreflightError, checkNode } from '../dist/index.js';
import { interleaved, now, stats } from './harness.mjs';
import { withNetns } from './netns.mjs';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** A first start's preflight, every time: the check start() wires in (the required rows), with the report not kept. */
async function freshPreflight() {
  const report = await checkNode({ backend: 'iptables', cache: false, requiredOnly: true });
  return report.ok ? undefined : new PreflightError(report);
}

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
    const [bare, cached, fresh] = await interleaved(
      [
        { run: () => startOnce(host, false) },
        { run: () => startOnce(host, true) },
        { run: () => startOnce(host, freshPreflight) },
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
    const f = res.row(S, "start() with the preflight probing anew (a process's first start)", fresh);
    res.row(S, 'checkNode, cache: false, iptables', coldIpt, { note: 'every probe in a fresh anonymous namespace' });
    const n = res.row(S, 'checkNode, cache: false, nftables', coldNft);
    res.target(S, 'start() with preflight - start() without (difference of medians), ms', c.median - b.median, '<=', 30, ' ms');
    // The bar for a first start ("a few tens of milliseconds"): the required rows, as start() probes them.
    res.target(S, 'first start() - start() without (difference of medians; the required rows, iptables), ms', f.median - b.median, '<=', 40, ' ms');
    res.target(S, 'checkNode, cache: false, nftables (median), ms', n.median, '<=', 25, ' ms');
    res.note(
      `14: the whole check (cache: false), median: ${Math.round(stats(coldIpt).median)} ms for iptables, ${Math.round(stats(coldNft).median)} ms for nftables; ` +
        `a first start() paid ${Math.round(f.median - b.median)} ms over one without the preflight`,
    );
  }, 1, 'pf');
}
