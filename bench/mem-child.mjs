// Scenario 8, in its own process: peak RSS growth while addMany streams N entries from a generator into a
// hash:ip (maxelem 2M) in a fresh namespace. Prints one JSON line.
import { Ipset } from '../dist/index.js';
import { withNetns } from './netns.mjs';

const N = Number(process.argv[2] ?? 1_000_000);
const MiB = 1024 * 1024;

await withNetns(async (ns) => {
  const ipset = await Ipset.open({ netns: ns.path });
    try {
  await ipset.create('m', { type: 'hash:ip', family: 'inet', comment: true, maxelem: 2_000_000 });
  // Warm the path (JIT, buffers) with a small batch, then measure from a collected heap.
  await ipset.addMany('m', (function* () { for (let i = 0; i < 20_000; i++) yield { ip: `11.0.${(i >> 8) & 255}.${i & 255}`, comment: `w${i}` }; })());
  await ipset.flush('m');
  globalThis.gc();
  globalThis.gc();
  const base = process.memoryUsage().rss;
  const maxBefore = process.resourceUsage().maxRSS * 1024;
  let peak = base;
  const probe = () => { const r = process.memoryUsage.rss(); if (r > peak) peak = r; };
  const timer = setInterval(probe, 5);
  function* gen() {
    for (let i = 0; i < N; i++) {
      if ((i & 4095) === 0) probe();
      yield { ip: `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`, comment: `c${i}` };
    }
  }
  const t0 = performance.now();
  const r = await ipset.addMany('m', gen());
  const ms = performance.now() - t0;
  clearInterval(timer);
  probe();
  const maxAfter = process.resourceUsage().maxRSS * 1024;
  if (maxAfter > maxBefore && maxAfter > peak) peak = maxAfter; // a peak between two probes
  if (r.applied !== N) throw new Error(`applied ${r.applied} of ${N}`);
  console.log(JSON.stringify({ n: N, ms: Math.round(ms), baseMiB: +(base / MiB).toFixed(1), peakMiB: +(peak / MiB).toFixed(1), growthMiB: +((peak - base) / MiB).toFixed(1) }));
  } finally {
    ipset.close();
  }
}, 1, 'mem');
