// Scenario 17, in its own process: Nftables.elementsStream of a set the parent filled (N IPv4 elements with
// comments), timed, with the peak RSS growth over a collected heap. A short stream of the same set goes first
// (compiled code, the socket path), untimed. Every element must come with its comment. Prints one JSON line.
// Usage: node --expose-gc bench/nft-list-child.mjs <netns path> <N> <table> <set>
import { Nftables } from '../dist/index.js';

const [path, nArg, table, set] = process.argv.slice(2);
const N = Number(nArg);
const MiB = 1024 * 1024;
const T = { family: 'inet', name: table };

const nft = await Nftables.open({ netns: path, timeoutMs: 600_000 });
try {
  let warm = 0;
  for await (const e of nft.elementsStream(T, set)) if (e.comment !== undefined && ++warm === 5000) break;
  globalThis.gc();
  globalThis.gc();
  const base = process.memoryUsage.rss();
  const maxBefore = process.resourceUsage().maxRSS * 1024;
  let peak = base;
  const probe = () => {
    const r = process.memoryUsage.rss();
    if (r > peak) peak = r;
  };
  const timer = setInterval(probe, 5);
  let count = 0;
  const t0 = performance.now();
  for await (const e of nft.elementsStream(T, set)) {
    if (e.comment === undefined) throw new Error(`element ${e.address} without its comment`);
    if ((++count & 4095) === 0) probe();
  }
  const ms = performance.now() - t0;
  clearInterval(timer);
  probe();
  // A peak between two probes, when this process never was that large before.
  const maxAfter = process.resourceUsage().maxRSS * 1024;
  if (maxAfter > maxBefore && maxAfter > peak) peak = maxAfter;
  if (count !== N) throw new Error(`streamed ${count} of ${N}`);
  console.log(JSON.stringify({ n: N, ms: Math.round(ms), baseMiB: +(base / MiB).toFixed(1), peakMiB: +(peak / MiB).toFixed(1), growthMiB: +((peak - base) / MiB).toFixed(1) }));
} finally {
  nft.close();
}
