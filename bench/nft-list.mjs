// Scenario 17: a set of N IPv4 elements with comments listed at scale (issue 30). This process fills the set, in
// transactions of 100k (one of 1M with comments would pass the kernel's 16 MiB batch limit); a child process of its
// own (bench/nft-list-child.mjs) streams it with Nftables.elementsStream, so its RSS growth is the listing's alone,
// not this process's heap grown by the fill; `nft -j list set` lists the same set, started by podnet's launcher.
// Samples alternate which goes first. The set has no size, as nft makes one by default.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { Nftables, runInNetns } from '../dist/index.js';
import { BENCH_DIR, now } from './harness.mjs';
import { withNetns } from './netns.mjs';

const execFileP = promisify(execFile);
const TABLE = 'podnet-list';
const SET = 'hosts';
const FILL = 100_000;

const addressOf = (i) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;

/** fill adds n elements with comments to the set, a transaction per FILL. */
async function fill(nft, n) {
  const table = { family: 'inet', name: TABLE };
  await nft.run(nft.transaction().addTable(table).addSet({ family: 'inet', table: TABLE, name: SET, type: 'ipv4_addr' }));
  for (let at = 0; at < n; at += FILL) {
    const part = [];
    for (let i = at; i < Math.min(n, at + FILL); i++) part.push({ address: addressOf(i), comment: `pod-${i}` });
    await nft.addElement(table, SET, part);
  }
}

/** streamed runs the child: its own clock and RSS growth. */
async function streamed(ns, n) {
  const { stdout } = await execFileP(process.execPath, ['--expose-gc', join(BENCH_DIR, 'nft-list-child.mjs'), ns.path, String(n), TABLE, SET], { maxBuffer: 1 << 20, timeout: 1_200_000 });
  return JSON.parse(stdout.trim().split('\n').pop());
}

/** nftListed times `nft -j list set` and checks that it listed all n elements (parsed after the clock stops). */
async function nftListed(ns, n) {
  const t0 = now();
  const r = await runInNetns(ns.path, ['nft', '-j', 'list', 'set', 'inet', TABLE, SET], { timeoutMs: 1_200_000, maxOutputBytes: 1 << 30 });
  const ms = now() - t0;
  if (r.exitCode !== 0) throw new Error(`nft -j list set exited ${r.exitCode ?? r.signal}: ${r.stderr.trim()}`);
  const listed = JSON.parse(r.stdout).nftables.find((o) => o.set)?.set.elem ?? [];
  if (listed.length !== n) throw new Error(`nft -j list set listed ${listed.length} of ${n}`);
  return ms;
}

export async function nftListScenario(res, cfg) {
  const N = cfg.nftListN;
  const S = `17 list a ${N >= 1e6 ? `${N / 1e6}M` : `${N / 1000}k`}-element nft set`;
  await withNetns(async (ns) => {
    const nft = await Nftables.open({ netns: ns.path, timeoutMs: 600_000 });
    try {
      await fill(nft, N);
    } finally {
      nft.close();
    }
    const stream = [];
    const growth = [];
    const text = [];
    for (let i = 0; i < cfg.nftListSamples; i++) {
      const order = i % 2 === 0 ? ['stream', 'nft'] : ['nft', 'stream'];
      for (const who of order) {
        if (who === 'nft') {
          text.push(await nftListed(ns, N));
        } else {
          const j = await streamed(ns, N);
          stream.push(j.ms);
          growth.push(j.growthMiB);
          res.note(`scenario 17 stream run ${i + 1}: ${JSON.stringify(j)}`);
        }
      }
    }
    const rs = res.row(S, 'podnet Nftables.elementsStream (child process)', stream, { podnet: true });
    const rt = res.row(S, '`nft -j list set` (runInNetns)', text);
    const rg = res.row(S, 'elementsStream peak RSS growth', growth, { unit: 'MiB' });
    res.target(S, 'elementsStream / nft -j list set', rs.median / rt.median, '<=', 1.5);
    res.target(S, 'elementsStream peak RSS growth, MiB', rg.max, '<=', 64, ' MiB');
  }, 1, 'nftl');
}
