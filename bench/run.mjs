// Entry point: `npm run bench` (full) and `npm run bench:ci` (--ci: smaller sizes, same ratios; exits non-zero
// when a ratio misses its target by more than 3x). `--only ipset,iptables,spawn,proxy,agent,nftables,nftlist,cni,preflight,churn,enroll,exchange` runs some groups.
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';

import { BENCH_DIR, Results, buildReference, now, settle } from './harness.mjs';
import { deleteAll } from './netns.mjs';

const args = process.argv.slice(2);
const ci = args.includes('--ci');
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? new Set(args[onlyAt + 1].split(',')) : undefined;

const FULL = {
  singleOps: 12000, singleRounds: 12, cliOps: 60, batchN: 100_000, batchSamples: 9, concurrentN: 10_000, memN: 1_000_000, memSamples: 2,
  rules: 1000, ruleSamples: 31, perRuleRules: 1000, perRuleSamples: 1, spawnOps: 200, zdsOps: 2000, pods: 10_000, podSamples: 3, cycles: 20, resyncPods: 1000,
  nftOps: 200, nftChunk: 20, nftWarmup: 10, nftElements: 10_000, nftElementSamples: 15, cniRounds: 200, cniWarmup: 10,
  preflightStarts: 21, preflightChecks: 7, churnPods: 250, churnRounds: 3, enrollSamples: 60, enrollWarmup: 100, nftListN: 1_000_000, nftListSamples: 1,
  exchangeSamples: 150, exchangeWarmup: 20,
};
const CI = {
  singleOps: 4000, singleRounds: 8, cliOps: 24, batchN: 50_000, batchSamples: 5, concurrentN: 10_000, memN: 250_000, memSamples: 1,
  rules: 200, ruleSamples: 9, perRuleRules: 200, perRuleSamples: 1, spawnOps: 60, zdsOps: 500, pods: 2_000, podSamples: 2, cycles: 8, resyncPods: 300,
  nftOps: 40, nftChunk: 10, nftWarmup: 5, nftElements: 10_000, nftElementSamples: 5, cniRounds: 60, cniWarmup: 5,
  preflightStarts: 9, preflightChecks: 3, churnPods: 120, churnRounds: 1, enrollSamples: 25, enrollWarmup: 60, nftListN: 100_000, nftListSamples: 3,
  exchangeSamples: 50, exchangeWarmup: 10,
};
const cfg = ci ? CI : FULL;

if (process.getuid?.() !== 0) {
  console.error('bench: needs root (namespaces, ipset, iptables)');
  process.exit(2);
}

const t0 = now();
const res = new Results();
const binDir = join(BENCH_DIR, 'results', 'bin');
mkdirSync(binDir, { recursive: true });
const cBin = buildReference(binDir, 'ipset_raw');

const groups = [
  ['ipset', async () => (await import('./ipset.mjs')).ipsetScenarios(res, cfg, cBin)],
  ['iptables', async () => (await import('./iptables.mjs')).iptablesScenarios(res, cfg)],
  ['spawn', async () => (await import('./spawn.mjs')).spawnScenarios(res, cfg)],
  ['proxy', async () => (await import('./proxy.mjs')).proxyScenarios(res, cfg, binDir)],
  ['agent', async () => (await import('./agent.mjs')).agentScenarios(res, cfg)],
  ['nftables', async () => (await import('./nftables.mjs')).nftablesScenarios(res, cfg, binDir)],
  ['nftlist', async () => (await import('./nft-list.mjs')).nftListScenario(res, cfg)],
  ['cni', async () => (await import('./cni.mjs')).cniScenarios(res, cfg)],
  ['preflight', async () => (await import('./preflight.mjs')).preflightScenarios(res, cfg)],
  ['churn', async () => (await import('./churn.mjs')).churnScenarios(res, cfg)],
  ['enroll', async () => (await import('./enroll.mjs')).enrollScenarios(res, cfg, binDir)],
  ['exchange', async () => (await import('./one-exchange.mjs')).oneExchangeScenarios(res, cfg)],
];

let crashed = false;
try {
  for (const [name, fn] of groups) {
    if (only && !only.has(name)) continue;
    const waited = await settle();
    const g0 = now();
    process.stderr.write(`bench: ${name}... (after ${(waited / 1000).toFixed(1)} s for the machine to settle)\n`);
    await fn();
    process.stderr.write(`bench: ${name} done in ${((now() - g0) / 1000).toFixed(1)} s\n`);
  }
} catch (err) {
  crashed = true;
  console.error('bench: a scenario failed:', err);
} finally {
  deleteAll();
}

const seconds = (now() - t0) / 1000;
const meta = {
  mode: ci ? 'ci' : 'full',
  date: new Date().toISOString(),
  machine: { nproc: os.availableParallelism(), cpu: os.cpus()[0]?.model, kernel: os.release(), node: process.version, memGiB: +(os.totalmem() / 2 ** 30).toFixed(1) },
  config: cfg,
  seconds,
};
console.log(`\npodnet benchmarks (${meta.mode}), ${meta.date}; nproc ${meta.machine.nproc}, kernel ${meta.machine.kernel}, node ${meta.machine.node}`);
console.log('Ratios within one run matter, not absolute times (shared, noisy machine).\n');
console.log(res.table());
console.log('\nTargets:\n');
console.log(res.targetTable());
for (const n of res.notes) console.log(`note: ${n}`);
const file = res.write(meta);
console.log(`\nbench: ${seconds.toFixed(1)} s; results in ${file}`);

const missed = res.targets.filter((t) => !t.holds);
const broken = res.targets.filter((t) => t.gate && !t.within3x);
if (missed.length) console.log(`bench: ${missed.length} target(s) not met: ${missed.map((t) => `[${t.scenario}] ${t.what}`).join('; ')}`);
if (ci && broken.length) {
  console.log(`bench: FAIL: ${broken.length} ratio(s) miss their target by more than 3x: ${broken.map((t) => `[${t.scenario}] ${t.what} = ${t.value.toFixed(3)} (target ${t.op} ${t.limit})`).join('; ')}`);
}
process.exit(crashed || (ci && broken.length > 0) ? 1 : 0);
