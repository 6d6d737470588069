// `npm run demo` as a user runs it (node scripts/demo.mjs on the built dist/): it must succeed, show the facts it
// promises, and leave none of its namespaces behind, also when interrupted half way. The demo's namespace tag is
// set per run so only its own names are checked.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

import { describePrivileged, missingBinary } from '../helpers/privileged.js';

const DEMO = fileURLToPath(new URL('../../scripts/demo.mjs', import.meta.url));
const BUILT = fileURLToPath(new URL('../../dist/testing/index.js', import.meta.url));
const LIB = fileURLToPath(new URL('../../lib', import.meta.url));
let runs = 0;

interface DemoRun {
  tag: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function ownNamespaces(tag: string): string[] {
  return readdirSync('/run/netns').filter((name) => name.startsWith(`podnet-${tag}-`));
}

/**
 * Runs the demo; `interrupt` sends a signal once stdout shows the node's host namespace, or with `early` as soon as
 * the demo prints anything (while it is usually still building the node).
 */
function runDemo(options: { timeoutMs: number; interrupt?: NodeJS.Signals; early?: boolean; tag?: string }): Promise<DemoRun & { hostNamespace: string | undefined; existedAtInterrupt: boolean | undefined }> {
  const tag = options.tag ?? `t-${process.env.PODNET_TEST_RUN ?? 'x'}-demo${++runs}`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DEMO], {
      env: { ...process.env, PODNET_DEMO_TAG: tag },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let hostNamespace: string | undefined;
    let existedAtInterrupt: boolean | undefined;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`demo did not end within ${options.timeoutMs} ms:\n${stdout}\n${stderr}`));
    }, options.timeoutMs);
    let sent = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (options.interrupt && options.early && !sent) {
        sent = true;
        child.kill(options.interrupt);
      }
      const m = /host namespace (\S+)/.exec(stdout);
      if (m && hostNamespace === undefined) {
        hostNamespace = m[1]!;
        // The node exists now: the interrupt lands while the demo is working on it.
        if (options.interrupt && !sent) {
          sent = true;
          existedAtInterrupt = existsSync(`/run/netns/${hostNamespace}`);
          child.kill(options.interrupt);
        }
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ tag, code, signal, stdout, stderr, hostNamespace, existedAtInterrupt });
    });
  });
}

describePrivileged(
  'npm run demo',
  () => {
    it('walks through the agent flows, shows the probe source and the conflict, and deletes its namespaces', async () => {
      // The demo runs the built dist/, not lib/: a stale build would test old code.
      expect(existsSync(BUILT), 'dist/ is built by npm install').toBe(true);
      const sources = readdirSync(LIB, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
      const newestSource = Math.max(...sources.map((f) => statSync(`${LIB}/${f}`).mtimeMs));
      expect(statSync(BUILT).mtimeMs, 'dist/ is older than lib/: npm run build:ts').toBeGreaterThanOrEqual(newestSource);
      const run = await runDemo({ timeoutMs: 90_000 });
      expect(run.code, run.stderr).toBe(0);
      const out = run.stdout;
      expect(out).toContain('[before]     host  -> A:8080 lands on 8080 from 10.244.0.1\n');
      expect(out).toMatch(/^\[addPod A\] +istio-inpod-probes-v4: 10\.244\.0\.10 owner [0-9a-f-]{36} \(pod A\)$/m);
      expect(out).toContain('[addPod A]   host  -> A:8080 lands on 8080 from 169.254.7.127\n');
      expect(out).toContain('[addPod A]   pod B -> A:8080 lands on 15006 from 10.244.0.11\n');
      expect(out).toContain('[addPod A]     policy routing in pod A: rule 32764: fwmark 0x111/0xfff lookup 100\n');
      expect(out).toContain('[addPod A]     policy routing in pod A: route table 100: local default dev lo\n');
      expect(out).toContain('policy routing left in pod A: none\n');
      expect(out).toMatch(/event 'conflict': 10\.244\.0\.10 previous owner [0-9a-f-]{36} \(pod A\), new owner [0-9a-f-]{36} \(pod C\)/);
      expect(out).toMatch(/removePod A \(late\): istio-inpod-probes-v4: 10\.244\.0\.10 owner [0-9a-f-]{36} \(pod C\)/);
      expect(out).toContain('[removePod]  removePod C: istio-inpod-probes-v4 is empty\n');
      expect(out).toContain('[removePod]  host  -> A:8080 lands on 8080 from 10.244.0.1\n');
      expect(out).toContain('pruned 0, prune skipped: true');
      expect(out).toMatch(/pruned 10\.244\.0\.12 of [0-9a-f-]{36} \(pod C\), prune skipped: false/);
      expect(out).toContain('[stop]       host SNAT rules left: 0, probe sets left: 0\n');
      expect(out).toContain('deleted the 4 namespaces');
      expect(ownNamespaces(run.tag)).toEqual([]);
    });

    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      it(`deletes its namespaces when a ${signal} arrives after the node is built`, async () => {
        const run = await runDemo({ timeoutMs: 60_000, interrupt: signal });
        expect(run.hostNamespace).toMatch(new RegExp(`^podnet-${run.tag}-\\d+-\\d+-host$`));
        expect(run.existedAtInterrupt).toBe(true);
        expect(run.stdout).toContain(`${signal}: interrupted, cleaning up`);
        expect(run.stdout).toContain('deleted the 4 namespaces');
        expect(run.code, run.stderr).toBe(code);
        expect(ownNamespaces(run.tag)).toEqual([]);
      });
    }

    it('exits non-zero and says why when a step fails', async () => {
      const run = await runDemo({ timeoutMs: 30_000, tag: 'not/a-tag' });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/demo failed: .*options\.tag/);
      expect(run.stdout).not.toContain('[start]');
    });

    it('deletes its namespaces when interrupted at its first output (usually while the node is being built)', async () => {
      const run = await runDemo({ timeoutMs: 60_000, interrupt: 'SIGTERM', early: true });
      expect(run.stdout).toContain('SIGTERM: interrupted, cleaning up');
      expect(run.code, run.stderr).toBe(143);
      expect(ownNamespaces(run.tag)).toEqual([]);
    });
  },
  missingBinary('ipset', 'iptables-nft-save', 'iptables-legacy-save', 'iptables-nft-restore'),
);
