// `npm run demo` as a user runs it (node scripts/demo.mjs on the built dist/): it must succeed, show the facts it
// promises, and leave none of its namespaces behind, also when interrupted half way. The demo's namespace tag is
// set per run so only its own names are checked.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
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

/** alive tells whether a process with that pid exists (signal 0 only checks). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** proxyFacts reads the proxy part's socket folder and player pids from the demo's output. */
function proxyFacts(out: string): { socketDir: string | undefined; pids: number[] } {
  const socket = /^\[proxy\] +ZtunnelServer listening on (\S+)$/m.exec(out);
  const pids = [...out.matchAll(/^\[(?:proxy|restart)\] +ztunnel player pid (\d+) connected/gm)].map((m) => Number(m[1]));
  return { socketDir: socket ? dirname(socket[1]!) : undefined, pids };
}

/**
 * Runs the demo; `interrupt` sends a signal once stdout shows the node's host namespace (or matches `at`), or with
 * `early` as soon as the demo prints anything (while it is usually still building the node).
 */
function runDemo(options: {
  timeoutMs: number;
  interrupt?: NodeJS.Signals;
  early?: boolean;
  at?: RegExp;
  tag?: string;
}): Promise<DemoRun & { hostNamespace: string | undefined; existedAtInterrupt: boolean | undefined }> {
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
      if (m && hostNamespace === undefined) hostNamespace = m[1]!;
      if (hostNamespace !== undefined && (options.at === undefined || options.at.test(stdout))) {
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

      // The proxy part: pods A and C handed to the ztunnel player over ZDS, B as the client.
      const uid = (pod: string): string => new RegExp(`^\\[node\\] +pod ${pod}: \\S+ in \\S+, uid ([0-9a-f-]{36})$`, 'm').exec(out)![1]!;
      const [uidA, uidC] = [uid('A'), uid('C')];
      const { socketDir, pids } = proxyFacts(out);
      expect(socketDir).toMatch(/podnet-demo-/);
      expect(pids).toHaveLength(2);
      expect(out).toMatch(/^\[proxy\] +ztunnel player pid \d+ connected \(hello version 1\), empty snapshot: SnapshotSent$/m);
      const inodes = new Map<string, string>();
      for (const [pod, podUid] of [['A', uidA], ['C', uidC]] as const) {
        const handed = new RegExp(
          `^\\[proxy\\] +addPod ${pod}: handed to the proxy, uid ${podUid}, netns inode (\\d+); player got netns inode (\\d+), listens on 15006 there$`,
          'm',
        ).exec(out);
        expect(handed, `pod ${pod} handed over`).not.toBeNull();
        expect(handed![2]).toBe(handed![1]); // the fd the player got is the pod's namespace
        inodes.set(podUid, handed![1]!);
      }
      expect(inodes.get(uidA)).not.toBe(inodes.get(uidC));
      const landedOnPlayer = (step: string): string =>
        `[${step}]`.padEnd(12) +
        ` pod B -> A:8080 answered: ztunnel-player ${uidA} 10.244.0.10:8080\n` +
        `[${step}]`.padEnd(12) +
        "   player's listener in pod A: original destination 10.244.0.10:8080 (SO_ORIGINAL_DST), from 10.244.0.11\n";
      expect(out).toContain(landedOnPlayer('proxy'));
      expect(out).toContain(`[restart]    ztunnel player pid ${pids[0]} killed by SIGKILL; proxies connected: 0\n`);
      expect(out).toContain('[restart]    pod B -> A:8080 answered: refused\n');
      // The new player's snapshot: exactly A and C, in enrolment order, each with the namespace it was handed first.
      expect(out).toContain(
        `[restart]    ztunnel player pid ${pids[1]} connected (proxies connected: 1), snapshot: ` +
          `add ${uidA} (pod A) netns inode ${inodes.get(uidA)}, add ${uidC} (pod C) netns inode ${inodes.get(uidC)}\n`,
      );
      const kept = [
        [uidA, 'A'],
        [uidC, 'C'],
      ]
        .sort(([a], [b]) => (a! < b! ? -1 : 1))
        .map(([u, n]) => `${u} (pod ${n})`);
      expect(out).toContain(
        `[restart]      SnapshotSent: player keeps ${kept.join(', ')}; dropped 0; server outcome: added 2, kept 0, failed 0\n`,
      );
      expect(out).toContain(landedOnPlayer('restart'));
      expect(out).toContain(`[proxy]      removePod A, C: player got del for ${uidA} (pod A), ${uidC} (pod C); proxy workloads left: 0\n`);
      expect(out).toContain('[proxy]      pod B -> A:8080 answered: refused\n');
      expect(out).toContain('[proxy]      NodeNetwork stopped: host SNAT rules left: 0, probe sets left: 0\n');
      expect(out).toContain(`[cleanup]    ztunnel players reaped: pid ${pids[0]} (killed by SIGKILL), pid ${pids[1]} (exit 0)\n`);
      expect(out).toContain(`[cleanup]    removed the socket folder ${socketDir}\n`);
      expect(existsSync(socketDir!)).toBe(false);
      expect(pids.filter(alive)).toEqual([]);

      // The CNI part: bridge, loopback and podnet-cni run as a runtime runs them; the agent enrolls pod P on ADD.
      const p = /^\[cni\] +pod P: namespace (\S+), uid ([0-9a-f-]{36}), container (\S+)$/m.exec(out);
      expect(p, 'pod P announced').not.toBeNull();
      const [, podNs, uidP, containerId] = p!;
      expect(podNs).toMatch(new RegExp(`^podnet-${run.tag}-\\d+-cni-pod$`));
      const cniLines = out.split('\n').filter((l) => l.startsWith('[cni]')).map((l) => l.replace(/^\[cni\] {8}/, ''));
      const cniSocket = `${socketDir}/cni.sock`;
      expect(cniLines).toEqual([
        `pod P: namespace ${podNs}, uid ${uidP}, container ${containerId}`,
        'agent: node network started',
        `agent: listening on ${cniSocket}`,
        `conflist podnet-demo: bridge, loopback, podnet-cni (host-local dataDir ${socketDir}/host-local)`,
        'ADD bridge: exit 0, result ips 10.245.0.2/24',
        'ADD loopback: exit 0, result ips 10.245.0.2/24',
        `agent: ADD ${containerId} pod ${uidP} 10.245.0.2`,
        'ADD podnet-cni: exit 0, result ips 10.245.0.2/24',
        expect.stringMatching(new RegExp('^pod P 10\\.245\\.0\\.2: handed to the proxy, netns inode (\\d+); player got netns inode \\1, listens on 15006 there$')),
        `pod P istio-inpod-probes-v4: 10.245.0.2 owner ${uidP} (pod P)`,
        `pod B -> P:8080 answered: ztunnel-player ${uidP} 10.245.0.2:8080`,
        "  player's listener in pod P: original destination 10.245.0.2:8080 (SO_ORIGINAL_DST), from 10.244.0.11",
        `agent: DEL ${containerId} pod ${uidP}`,
        'DEL podnet-cni: exit 0',
        'DEL loopback: exit 0',
        'DEL bridge: exit 0',
        `player got del for ${uidP} (pod P); istio-inpod-probes-v4 is empty; host-local leases left: 0`,
        'agent stopped: probe sets left: 0, CNI socket left: false',
      ]);
      expect(out).toContain(`[cleanup]    deleted the CNI pod's namespace ${podNs}\n`);
    });

    it('deletes the CNI pod namespace, the agent socket and the socket folder when a SIGINT arrives during the CNI part', async () => {
      const run = await runDemo({ timeoutMs: 90_000, interrupt: 'SIGINT', at: /^\[cni\] +ADD bridge: exit 0/m });
      expect(run.stdout).toContain('SIGINT: interrupted, cleaning up');
      expect(run.code, run.stderr).toBe(130);
      const podNs = /^\[cni\] +pod P: namespace (\S+),/m.exec(run.stdout)![1]!;
      expect(run.stdout).toContain(`[cleanup]    deleted the CNI pod's namespace ${podNs}\n`);
      const { socketDir, pids } = proxyFacts(run.stdout);
      expect(existsSync(socketDir!)).toBe(false);
      expect(pids.filter(alive)).toEqual([]);
      expect(ownNamespaces(run.tag)).toEqual([]);
    });

    it('reaps the ztunnel player and removes its socket folder when a SIGTERM arrives during the proxy part', async () => {
      const run = await runDemo({ timeoutMs: 60_000, interrupt: 'SIGTERM', at: /^\[proxy\] +addPod A: handed/m });
      expect(run.stdout).toContain('SIGTERM: interrupted, cleaning up');
      expect(run.code, run.stderr).toBe(143);
      const { socketDir, pids } = proxyFacts(run.stdout);
      expect(pids).toHaveLength(1);
      expect(run.stdout).toMatch(new RegExp(`^\\[cleanup\\] +ztunnel players reaped: pid ${pids[0]} \\((exit 0|killed by SIGTERM|killed by SIGKILL)\\)$`, 'm'));
      expect(run.stdout).toContain(`removed the socket folder ${socketDir}\n`);
      expect(run.stdout).toContain('deleted the 4 namespaces');
      expect(existsSync(socketDir!)).toBe(false);
      expect(pids.filter(alive)).toEqual([]);
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
  missingBinary('ipset', 'iptables-nft-save', 'iptables-legacy-save', 'iptables-nft-restore', 'python3'),
);
