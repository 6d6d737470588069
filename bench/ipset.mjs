// Scenarios 1-4, 7, 8: ipset adds, batches, coalescing, listing, event loop, memory.
import { execFile } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { Ipset, runInNetns } from '../dist/index.js';
import { BENCH_DIR, interleaved } from './harness.mjs';
import { withNetns } from './netns.mjs';
import { run } from './proc.mjs';

const execFileP = promisify(execFile);

/** The same data for every contender (and the C reference): 10.x.y.z from i, comment "c<i>". */
export function ipOf(i) {
  return `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;
}
export function entryOf(i) {
  return { ip: ipOf(i), comment: `c${i}` };
}
function entries(n, from = 0) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = entryOf(from + i);
  return out;
}

const SET_OPTS = { type: 'hash:ip', family: 'inet', comment: true, maxelem: 1 << 20 }; // as the C reference creates it

async function fresh(ipset, name) {
  await ipset.destroy(name).catch(() => {});
  await ipset.create(name, SET_OPTS);
}

/**
 * settle waits for the kernel's deferred work after a big set is destroyed: its entries' comments are freed
 * after an RCU grace period, in batches, tens of ms later. Without the pause those frees ran inside the next
 * timed sample, which made a contender that follows a destroy look up to 2x slower (podnet's samples did; the C
 * reference, which ran after a slow `ipset restore`, did not). Every contender of scenarios 2 and 3 now starts
 * the same way: the last set destroyed, then this pause.
 */
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

/**
 * rawC runs the C reference inside ns and returns its JSON line. It is started by podnet's launcher (setns in a
 * vfork child), not `ip netns exec`: it times itself, so the launcher is not part of its number, and an `ip netns
 * exec` run leaves the VM slower for a few hundred ms (its mount namespace's teardown), which then landed on
 * whichever contender came next.
 */
async function rawC(bin, ns, mode, n, name) {
  const r = await runInNetns(ns.path, [bin, mode, String(n), name], { timeoutMs: 600_000 });
  if (r.exitCode !== 0) throw new Error(`${bin} ${mode} exited ${r.exitCode ?? r.signal}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout.trim());
}

/** perOp times each call of op(i) for i in [0, n): per-op samples in µs. */
async function perOp(n, op) {
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    await op(i);
    out[i] = Number(process.hrtime.bigint() - t0) / 1e3;
  }
  return out;
}
export async function ipsetScenarios(res, cfg, cBin) {
  await withNetns(async (ns) => {
    const ipset = await Ipset.open({ netns: ns.path });
    try {

    // ---- 1: one exclusive add with comment, per op ----
    {
      const S = '1 one add';
      const n = cfg.singleOps;
      // warm-up (JIT, socket, set shape cache)
      await fresh(ipset, 'b1');
      for (let i = 0; i < 200; i++) ipset.addSync('b1', entryOf(i));
      for (let i = 0; i < 200; i++) await ipset.add('b1', entryOf(100_000 + i));
      await rawC(cBin, ns, 'single', 200, 'b1c');

      // Rounds interleave the contenders, so load drift on the shared machine hits each alike.
      const rounds = cfg.singleRounds;
      const k = Math.ceil(n / rounds);
      // Entries are made before the clock starts: the C reference's entries cost it a snprintf, podnet's would
      // cost a string template per field, which is the benchmark's data, not podnet's work.
      const data = entries(k);
      // Each round times a block of k adds and takes the mean per add, for podnet as for the C reference (its own
      // clock around its own loop): a clock read around every single add would cost podnet more than it costs C.
      // Each timed block starts on a fresh set after settle(), in alternating order round by round; each returns
      // its mean per add in us (interleaved() takes a returned number as the sample).
      const startBlock = () => fresh(ipset, 'b1').then(settle);
      // Beside each clock, the CPU time of the same block (user + system, both sides by getrusage): on this shared
      // 2-vCPU VM the load stretches the clock by whatever time a contender waits for a CPU. For one build, runs of
      // one afternoon read the clock ratio at 1.27x to 2.77x and the CPU time ratio at 1.39x to 1.61x.
      const syncCpu = [];
      const cCpu = [];
      const [sync, asyncOps, cMeans] = await interleaved(
        [
          {
            setup: startBlock,
            run: async () => {
              const c0 = process.cpuUsage();
              const t0 = process.hrtime.bigint();
              for (let i = 0; i < k; i++) ipset.addSync('b1', data[i]);
              const us = Number(process.hrtime.bigint() - t0) / 1e3 / k;
              const c = process.cpuUsage(c0);
              syncCpu.push((c.user + c.system) / k);
              return us;
            },
          },
          {
            setup: startBlock,
            run: async () => {
              const t0 = process.hrtime.bigint();
              for (let i = 0; i < k; i++) await ipset.add('b1', data[i]);
              return Number(process.hrtime.bigint() - t0) / 1e3 / k;
            },
          },
          {
            setup: startBlock,
            run: async () => {
              const r = await rawC(cBin, ns, 'single', k, 'b1c');
              cCpu.push(r.cpuUsPerEntry);
              return r.usPerEntry;
            },
          },
        ],
        { warmup: 0, samples: rounds },
      );
      const cli = [];
      // The CLI's samples come after every round, not between them: each `ipset add` is an `ip netns exec`, whose
      // mount namespace teardown left the next block of single adds 40-60% slower (for podnet and C alike) for a
      // few hundred ms. Its target (>= 500x) does not need interleaving to be fair.
      await fresh(ipset, 'b1');
      await run(['ip', 'netns', 'exec', ns.name, 'ipset', 'add', 'b1', ipOf(200_000), 'comment', 'w']); // warm-up
      cli.push(...(await perOp(cfg.cliOps, (i) => run(['ip', 'netns', 'exec', ns.name, 'ipset', 'add', 'b1', ipOf(i), 'comment', `c${i}`]))));
      const rs = res.row(S, 'podnet addSync (mean per add)', sync, { unit: 'µs', podnet: true, note: `${rounds} rounds of ${k}` });
      const ra = res.row(S, 'podnet add (async, awaited; mean per add)', asyncOps, { unit: 'µs' });
      const rc = res.row(S, '`ipset add` CLI (ip netns exec; per add)', cli, { unit: 'µs' });
      const rr = res.row(S, 'raw C round trip (mean per add)', cMeans, { unit: 'µs', note: 'C clock' });
      const rsc = res.row(S, 'podnet addSync, CPU time (mean per add)', syncCpu, { unit: 'µs', note: 'getrusage' });
      const rrc = res.row(S, 'raw C round trip, CPU time (mean per add)', cCpu, { unit: 'µs', note: 'getrusage' });
      res.target(S, 'addSync / raw C', rs.median / rr.median, '<=', 1.25);
      res.target(S, 'addSync / raw C, CPU time', rsc.median / rrc.median, '<=', 1.25, 'x', { gate: false });
      res.target(S, 'add (async) / raw C', ra.median / rr.median, '<=', 10);
      res.target(S, 'CLI / addSync (speed-up)', rc.median / rs.median, '>=', 500);
      await ipset.destroy('b1');
    }

    // ---- 2 and 7: N entries with comments into an empty hash:ip ----
    {
      const S = `2 ${cfg.batchN / 1000}k batch`;
      const N = cfg.batchN;
      const data = entries(N);
      const restoreText = data.map((e) => `add b2 ${e.ip} comment "${e.comment}"\n`).join('');
      const make = () => fresh(ipset, 'b2').then(settle);
      const clear = () => ipset.destroy('b2').catch(() => {}).then(settle); // the C reference makes its own set
      // CPU time beside the clock, as in scenario 1 (podnet's includes its worker thread's, the whole process's).
      const manyCpu = [];
      const cCpu = [];
      const [many, cs] = await interleaved(
        [
          {
            setup: make,
            run: async () => {
              const c0 = process.cpuUsage();
              const t0 = process.hrtime.bigint();
              const r = await ipset.addMany('b2', data);
              const ms = Number(process.hrtime.bigint() - t0) / 1e6;
              const c = process.cpuUsage(c0);
              if (r.applied !== N) throw new Error(`applied ${r.applied}`);
              manyCpu.push((c.user + c.system) / 1e3);
              return ms;
            },
          },
          {
            setup: clear,
            run: async () => {
              const r = await rawC(cBin, ns, 'batch', N, 'b2c');
              cCpu.push(r.cpuMs);
              return r.totalMs;
            },
          },
        ],
        { warmup: 1, samples: cfg.batchSamples },
      );
      manyCpu.shift(); // the warm-up round's
      cCpu.shift();
      // `ipset restore` after the rounds, as scenario 1's CLI: it runs under `ip netns exec`, whose aftermath (the VM
      // slower for up to ~1.5 s) slowed whichever contender came next, podnet more than the C reference. Its target
      // (>= 5x) does not need interleaving to be fair.
      const [restore] = await interleaved(
        [{ setup: make, run: () => run(['ip', 'netns', 'exec', ns.name, 'ipset', 'restore'], { input: restoreText }) }],
        { warmup: 1, samples: cfg.batchSamples },
      );
      const rm = res.row(S, 'podnet addMany (array)', many, { podnet: true });
      const rr = res.row(S, '`ipset restore` (ip netns exec)', restore);
      const rc = res.row(S, 'raw C ADT batch', cs, { note: 'C clock' });
      const rmc = res.row(S, 'podnet addMany (array), CPU time', manyCpu, { note: 'getrusage' });
      const rcc = res.row(S, 'raw C ADT batch, CPU time', cCpu, { note: 'getrusage' });
      res.target(S, 'addMany / raw C batch', rm.median / rc.median, '<=', 1.1);
      res.target(S, 'addMany / raw C batch, CPU time', rmc.median / rcc.median, '<=', 1.1, 'x', { gate: false });
      res.target(S, 'ipset restore / addMany (speed-up)', rr.median / rm.median, '>=', 5);

      // 7: event loop delay while scenario 2 runs async (array and streamed from a generator).
      const S7 = '7 event loop during 2';
      const maxes = { array: [], generator: [], control: [] };
      for (let i = 0; i < cfg.batchSamples; i++) {
        for (const kind of ['array', 'generator', 'control']) {
          await make();
          const h = monitorEventLoopDelay({ resolution: 1 });
          const tick = setInterval(() => {}, 1); // keeps the loop turning so every stall is seen
          h.enable();
          await new Promise((r) => setTimeout(r, 20)); // the histogram records from its 2nd tick on: prime it
          let r;
          if (kind === 'control') await rawC(cBin, ns, 'batch', N, 'b2c'); // JS idle: the machine's own noise
          else r = await ipset.addMany('b2', kind === 'array' ? data : (function* () { for (let j = 0; j < N; j++) yield entryOf(j); })());
          h.disable();
          clearInterval(tick);
          if (r && r.applied !== N) throw new Error(`applied ${r.applied}`);
          maxes[kind].push(h.max / 1e6);
        }
      }
      const ea = res.row(S7, 'loop delay max, addMany(array)', maxes.array, { podnet: true });
      res.row(S7, 'loop delay max, addMany(generator)', maxes.generator);
      res.row(S7, 'control: loop delay max, JS idle while raw C batch runs', maxes.control);
      const ctl = res.rows[res.rows.length - 1];
      // The target as stated (absolute ms; reported). On a shared machine the control row shows the loop delay
      // the machine alone causes, so the CI gate checks podnet's excess over the control of the same run.
      res.target(S7, 'event loop delay max (array addMany), ms', ea.median, '<=', 5, ' ms', { gate: false });
      res.target(S7, 'same, minus the control (machine noise), ms', Math.max(0, ea.median - ctl.median), '<=', 5, ' ms');
      await ipset.destroy('b2');
    }

    // ---- 3: concurrent add() promises, coalesced ----
    {
      const S = `3 ${cfg.concurrentN / 1000}k concurrent add()`;
      const N = cfg.concurrentN;
      const data = entries(N);
      const make = () => fresh(ipset, 'b3').then(settle);
      const clear = () => ipset.destroy('b3').catch(() => {}).then(settle);
      const [co, one, cs] = await interleaved(
        [
          { setup: make, run: () => Promise.all(data.map((e) => ipset.add('b3', e))).then(() => undefined) },
          { setup: make, run: async () => { for (const e of data) await ipset.add('b3', e); } },
          { setup: clear, run: async () => (await rawC(cBin, ns, 'batch', N, 'b3c')).totalMs },
        ],
        { warmup: 1, samples: cfg.batchSamples },
      );
      const perEntry = (xs) => xs.map((x) => (x * 1000) / N);
      const rco = res.row(S, 'podnet add() x N, coalesced (per entry)', perEntry(co), { unit: 'µs', podnet: true });
      res.row(S, 'podnet add() awaited one by one (per entry)', perEntry(one), { unit: 'µs' });
      const rc = res.row(S, 'raw C ADT batch (per entry)', perEntry(cs), { unit: 'µs' });
      res.target(S, 'coalesced per entry / raw C batch per entry', rco.median / rc.median, '<=', 3);
      await ipset.destroy('b3').catch(() => {}); // the C reference's setup may have destroyed it last
    }

    // ---- 4: list a big set ----
    {
      const S = `4 list ${cfg.batchN / 1000}k set`;
      await fresh(ipset, 'b4');
      const r = await ipset.addMany('b4', entries(cfg.batchN));
      if (r.applied !== cfg.batchN) throw new Error('fill failed');
      const [list, save] = await interleaved(
        [
          { run: async () => { const l = await ipset.list('b4'); if (l.entries.length !== cfg.batchN) throw new Error(`listed ${l.entries.length}`); } },
          { run: () => run(['ip', 'netns', 'exec', ns.name, 'ipset', '-f', '/dev/null', 'save', 'b4']).then(() => undefined) },
        ],
        { warmup: 1, samples: cfg.batchSamples },
      );
      const rl = res.row(S, 'podnet list', list, { podnet: true });
      const rs = res.row(S, '`ipset -f /dev/null save` (ip netns exec)', save);
      res.target(S, 'list / ipset save', rl.median / rs.median, '<=', 1.5);
      await ipset.destroy('b4');
    }
    } finally {
      ipset.close();
    }
  }, 1, 'ipset');

  // ---- 8: memory of a streamed addMany, in a child process ----
  {
    const S = `8 memory, ${cfg.memN / 1e6}M generator addMany`;
    const growth = [];
    for (let i = 0; i < cfg.memSamples; i++) {
      const { stdout } = await execFileP(process.execPath, ['--expose-gc', join(BENCH_DIR, 'mem-child.mjs'), String(cfg.memN)], { maxBuffer: 1 << 20 });
      const j = JSON.parse(stdout.trim().split('\n').pop());
      growth.push(j.growthMiB);
      res.note(`memory run ${i + 1}: ${JSON.stringify(j)}`);
    }
    const rg = res.row(S, 'peak RSS growth', growth, { unit: 'MiB', podnet: true });
    res.target(S, 'peak RSS growth, MiB', rg.max, '<=', 64, ' MiB');
  }
}
