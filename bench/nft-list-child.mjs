// Scenario 15, in its own process: a set of N IPv4 elements with comments listed by Nftables.elementsStream (time
// and peak RSS growth over a collected heap), then by `nft -j list set` in the same namespace and run. The set is
// filled in transactions of 100k elements (one of 1M would pass the kernel's 16 MiB batch limit). Prints one JSON line.
import { Nftables, runInNetns } from '../dist/index.js';
import { withNetns } from './netns.mjs';

const N = Number(process.argv[2] ?? 1_000_000);
const MiB = 1024 * 1024;
const T = { family: 'inet', name: 'big' };
const addressOf = (i) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;

await withNetns(async (ns) => {
  const nft = await Nftables.open({ netns: ns.path, timeoutMs: 600_000 });
  try {
    await nft.run(nft.transaction().addTable(T).addSet({ family: 'inet', table: T.name, name: 's', type: 'ipv4_addr', size: 2_000_000 }));
    for (let at = 0; at < N; at += 100_000) {
      const part = [];
      for (let i = at; i < Math.min(N, at + 100_000); i++) part.push({ address: addressOf(i), comment: `pod-${i}` });
      await nft.addElement(T, 's', part);
    }
    globalThis.gc();
    globalThis.gc();
    const base = process.memoryUsage().rss;
    let peak = base;
    const probe = () => { const r = process.memoryUsage.rss(); if (r > peak) peak = r; };
    const timer = setInterval(probe, 5);
    let count = 0;
    const t0 = performance.now();
    for await (const e of nft.elementsStream(T, 's')) {
      if (e.comment !== undefined) count++;
      if ((count & 4095) === 0) probe();
    }
    const streamMs = performance.now() - t0;
    clearInterval(timer);
    probe();
    if (count !== N) throw new Error(`streamed ${count} of ${N}`);
    const t1 = performance.now();
    const r = await runInNetns(ns.path, ['nft', '-j', 'list', 'set', 'inet', 'big', 's'], { timeoutMs: 1_200_000, maxOutputBytes: 1 << 30 });
    const nftMs = performance.now() - t1;
    if (r.exitCode !== 0) throw new Error(`nft -j list set exited ${r.exitCode ?? r.signal}`);
    console.log(JSON.stringify({ n: N, streamMs: Math.round(streamMs), nftMs: Math.round(nftMs), ratio: +(streamMs / nftMs).toFixed(2), growthMiB: +((peak - base) / MiB).toFixed(1) }));
  } finally {
    nft.close();
  }
}, 1, 'nftlist');
