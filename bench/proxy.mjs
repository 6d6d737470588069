// Scenario 10: hand a pod's netns to the node proxy: one ZDS Add with its fd, sent and acked (ZtunnelServer to a proxy
// in another process), against a plain child_process spawn of /bin/true, the cheapest thing a Node agent could do
// instead of an addon (it cannot pass fds at all). The proxy end is reference/zds_ack_peer.c: ztunnel is native, and
// a Node peer would add its own event loop's latency to every round trip.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Netns } from '../dist/index.js';
import { encodeRequest } from '../dist/proxy/zds-messages.js';
import { buildReference } from './harness.mjs';
import { withNetns } from './netns.mjs';
import { runForked } from './proc.mjs';
import { withZdsPeer } from './zds-peer.mjs';

const W = { name: 'bench-0', namespace: 'bench', serviceAccount: 'default' };

async function timeOne(fn) {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e3;
}

/**
 * The floor: the same Add (podnet's own bytes, with the same namespace's fd) sent and acked by a C program to the same
 * C peer (reference/zds_add_raw.c), `count` times; its own clock's round trips in microseconds.
 */
function rawFloor(binDir, netnsPath, count) {
  const bin = buildReference(binDir, 'zds_add_raw');
  const dir = mkdtempSync(join(tmpdir(), 'podnet-bench-zds-raw-'));
  try {
    const addFile = join(dir, 'add.bin');
    writeFileSync(addFile, encodeRequest({ kind: 'add', uid: 'uid-0', workload: W }));
    const out = execFileSync(bin, [join(dir, 'raw.sock'), join(binDir, 'zds_ack_peer'), addFile, netnsPath, String(count)], { encoding: 'utf8' });
    return out.trim().split('\n').map(Number);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function proxyScenarios(res, cfg, binDir) {
  await withZdsPeer(binDir, async (server) => {
    await withNetns(async (ns) => {
      const S = '10 ZDS Add with a netns fd, acked';
      const handle = Netns.open(ns.path);
      try {
        let n = 0;
        const contenders = [
          ['podnet ZtunnelServer.addWorkload', () => server.addWorkload(`uid-${n++ % 64}`, W, handle)],
          ['child_process spawn /bin/true', () => runForked(['/bin/true'])],
        ];
        const times = contenders.map(() => []);
        // JIT-warm both paths first: the codec and socket code run cold otherwise, and a cold median is not what an agent sees.
        for (let w = 0; w < 10; w++) await contenders[1][1]();
        for (let w = 0; w < 300; w++) await contenders[0][1]();
        // One contender after the other, not interleaved: each fork write-protects this process, and the Adds right
        // after one pay a page fault per page they write (see proc.mjs), a cost of the interleaving, not of ZDS. The
        // speed-up's margin (>100x against a 10x target) is far beyond any drift between the two blocks.
        for (let c = 0; c < contenders.length; c++) {
          for (let i = 0; i < cfg.zdsOps; i++) times[c].push(await timeOne(contenders[c][1]));
        }
        const rows = contenders.map(([name], c) => res.row(S, name, times[c], { unit: 'us', podnet: c === 0 }));
        const floor = res.row(S, 'raw C floor: the same Add and fd from a C program to the same peer (zds_add_raw.c)', rawFloor(binDir, ns.path, cfg.zdsOps), { unit: 'us', note: 'C clock' });
        res.target(S, 'spawn / Add round trip (speed-up)', rows[1].median / rows[0].median, '>=', 10);
        // The absolute goal, reported but not gated: absolute times move with the machine's load. Neither is
        // the ratio to the floor: the floor is two wake-ups across processes, which cost what the scheduler's placing
        // makes them (on one 2-core VM: 11 us with both ends on one CPU, 80-100 us across the two, either in a run).
        res.target(S, 'Add round trip median', rows[0].median, '<=', 100, 'us', { gate: false });
        res.target(S, 'Add round trip / raw C floor', rows[0].median / floor.median, '<=', 2, 'x', { gate: false });
      } finally {
        handle.close();
      }
    }, 1, 'zds');
  });
}
