// Leaks, measured in one fresh process (issue 15): 10k Ipset open/add/close cycles, 2k runInNetns, 2k Netns
// open/close, 1k Iptables apply/remove and 5k Nftables and Rtnetlink opens, all inside one test namespace. After a
// warm-up and after each part the child (cycles-child.mjs, on the built dist/) samples its open fds, threads, zombie children, RSS after a full GC,
// and the network namespace of every thread. Bounds are on counts and memory, never on time.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect, it } from 'vitest';

import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

const CHILD = fileURLToPath(new URL('./cycles-child.mjs', import.meta.url));
const BUILT = fileURLToPath(new URL('../../dist/index.js', import.meta.url));
const LIB = fileURLToPath(new URL('../../lib', import.meta.url));

/**
 * RSS may grow by this much over a part, and over the whole run: far above what the measured runs show (a few MiB),
 * far below what a leak of the counted resources would cost (a leaked 256 KiB netlink receive buffer per Ipset cycle
 * is 2.5 GiB over 10k cycles; a leaked thread stack or pipe buffer per run, 8 MiB / 64 KiB, likewise). The child
 * runs with --max-semi-space-size=1: V8 otherwise grows its young generation to 16 MiB semi-spaces under allocation
 * pressure, heap that is V8's, committed once and kept, and that once looked like 30 MiB of "growth" here.
 */
const RSS_BOUND = 32 << 20;

/** The sanitizer run (npm run test:asan) preloads ASan into the child too: its quarantine holds freed memory. */
const UNDER_ASAN = process.env.PODNET_EXPECT_ASAN === '1';

interface Sample {
  fds: number;
  threads: number;
  zombies: number[];
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  threadsOutsideNetns: string[];
}

interface Report {
  netns: string;
  start: Sample;
  warm: Sample;
  end: Sample;
  parts: { part: string; count: number; seconds: number; before: Sample; after: Sample }[];
  setElements: number;
  entriesAdded: number;
  iptablesLeft: { tables: Record<string, { chains: Record<string, unknown> }> };
}

function runChild(netnsPath: string, parts: string[]): Promise<Report> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--expose-gc', '--max-semi-space-size=1', CHILD, pathToFileURL(BUILT).href, netnsPath, parts.join(',')],
      // A deadline on the child only so that a hang fails this test with its output instead of at vitest's timeout.
      { encoding: 'utf8', timeout: 540_000, killSignal: 'SIGKILL', maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`leak child failed: ${err.message}\n${stderr}`));
        else resolve(JSON.parse(stdout) as Report);
      },
    );
  });
}

const mib = (bytes: number) => `${(bytes / (1 << 20)).toFixed(1)} MiB`;

describePrivileged(
  'leaks: thousands of cycles in one process',
  () => {
    it(
      'keeps fds, threads and zombies at their warm-up values, RSS within a bound, every thread in its namespace',
      async () => {
        // The child runs the built dist/, not lib/: a stale build would measure old code.
        expect(existsSync(BUILT), 'dist/ is built by npm install').toBe(true);
        const sources = readdirSync(LIB, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
        const newestSource = Math.max(...sources.map((f) => statSync(`${LIB}/${f}`).mtimeMs));
        expect(statSync(BUILT).mtimeMs, 'dist/ is older than lib/: npm run build:ts').toBeGreaterThanOrEqual(newestSource);

        using tns = new TestNetns('leak');
        const report = await runChild(tns.path, ['ipset', 'spawn', 'netns', 'iptables', 'netlink']);

        // The figures, for the closing note.
        const lines = [`leak figures (the child ran in ${report.netns}):`];
        lines.push(`  start: fds ${report.start.fds}, threads ${report.start.threads}, RSS ${mib(report.start.rssBytes)}`);
        lines.push(`  warm:  fds ${report.warm.fds}, threads ${report.warm.threads}, RSS ${mib(report.warm.rssBytes)}`);
        for (const p of report.parts) {
          lines.push(
            `  ${p.part} x${p.count} (${p.seconds} s): fds ${p.before.fds} -> ${p.after.fds}, threads ${p.before.threads} -> ` +
              `${p.after.threads}, zombies ${p.after.zombies.length}, RSS ${mib(p.before.rssBytes)} -> ${mib(p.after.rssBytes)}, ` +
              `V8 heap used ${mib(p.before.heapUsedBytes)} -> ${mib(p.after.heapUsedBytes)}`,
          );
        }
        lines.push(`  end:   RSS ${mib(report.end.rssBytes)} (${mib(report.end.rssBytes - report.warm.rssBytes)} over warm)`);
        console.log(lines.join('\n'));

        expect(report.parts.map((p) => [p.part, p.count])).toEqual([
          ['ipset', 10_000],
          ['spawn', 2_000],
          ['netns', 2_000],
          ['iptables', 1_000],
          ['netlink', 5_000],
        ]);
        // The warm-up started what is started once (libuv's pool threads): from then on nothing may grow.
        for (const s of [report.warm, ...report.parts.map((p) => p.after), report.end]) {
          expect(s.fds).toBe(report.warm.fds);
          expect(s.threads).toBe(report.warm.threads);
          expect(s.zombies).toEqual([]);
          expect(s.threadsOutsideNetns).toEqual([]);
        }
        expect(report.start.threadsOutsideNetns).toEqual([]);
        if (!UNDER_ASAN) {
          for (const p of report.parts) expect(p.after.rssBytes - p.before.rssBytes, `${p.part} RSS growth`).toBeLessThan(RSS_BOUND);
          expect(report.end.rssBytes - report.warm.rssBytes, 'RSS growth over all parts').toBeLessThan(RSS_BOUND);
        }
        // And the work was done: every add landed (200 warm-up cycles + 10k), every apply was removed again.
        expect(report.entriesAdded).toBe(10_200);
        expect(report.setElements).toBe(10_200);
        expect(report.iptablesLeft.tables.filter?.chains.PODNET_LEAK).toBeUndefined();
      },
      // Measured at about 40 s on an idle 2-core VM; the bound is for a heavily loaded one (and the ASan run).
      600_000,
    );
  },
  missingBinary('ipset', 'iptables-nft-save', 'iptables-nft-restore'),
);
