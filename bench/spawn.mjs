// Scenario 6: run /bin/true in a namespace: runInNetns vs `ip netns exec` vs `nsenter --net`.
import { runInNetns } from '../dist/index.js';
import { withNetns } from './netns.mjs';
import { runForked } from './proc.mjs';

async function timeOne(fn) {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

export async function spawnScenarios(res, cfg) {
  await withNetns(async (ns) => {
    const S = '6 /bin/true in a netns';
    const contenders = [
      ['podnet runInNetns', async () => { const r = await runInNetns(ns.path, ['/bin/true']); if (r.exitCode !== 0) throw new Error('true failed'); }],
      ['ip netns exec', () => runForked(['ip', 'netns', 'exec', ns.name, '/bin/true'])],
      ['nsenter --net', () => runForked(['nsenter', `--net=${ns.path}`, '/bin/true'])],
    ];
    const times = contenders.map(() => []);
    for (let w = 0; w < 10; w++) for (const [, fn] of contenders) await fn();
    // Round-robin so load drift hits every contender alike.
    for (let i = 0; i < cfg.spawnOps; i++) {
      for (let c = 0; c < contenders.length; c++) times[c].push(await timeOne(contenders[c][1]));
    }
    const rows = contenders.map(([name], c) => res.row(S, name, times[c], { podnet: c === 0 }));
    res.target(S, 'ip netns exec / runInNetns (speed-up)', rows[1].median / rows[0].median, '>=', 1.3);
  }, 1, 'spawn');
}
