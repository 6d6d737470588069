// examples/inpod-agent for real, on a simulated node (a host namespace and a pod namespace the test makes): the
// agent runs NodeNetwork in the host namespace given by --host-netns, and ADD/CHECK/DEL through the real podnet-cni
// change the kernel's probe set and the pod's rules there; the state file holds the enrolled pod. Nothing outside
// the simulated node's namespaces is touched.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect, it } from 'vitest';

import { runInNetns } from '../../lib/index.js';
import { SimulatedNode } from '../../lib/testing/index.js';
import { CLI_ENV } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { invokeCni } from './cni-runtime.js';
import { startExample } from './run-example.js';
import { callAgent as call } from './unix-http.js';

async function hostSets(sim: SimulatedNode): Promise<string> {
  const r = await runInNetns(sim.host.path, ['ipset', 'list'], { timeoutMs: 10_000 });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout;
}

describePrivileged(
  'in-pod agent example on a simulated node',
  () => {
    it('enrolls a pod from a CNI ADD into the host namespace it was given, removes it on DEL, and cleans up on SIGTERM', async () => {
      const sim = await SimulatedNode.create({ tag: `t-${process.env.PODNET_TEST_RUN ?? 'x'}`, pods: 1 });
      const dir = mkdtempSync(join(tmpdir(), 'podnet-example-agent-'));
      const socket = join(dir, 'cni.sock');
      const health = join(dir, 'health.sock');
      const stateFile = join(dir, 'state.json');
      const agent = startExample('examples/inpod-agent/agent.mjs', [
        ...['--socket', socket, '--host-netns', sim.host.path, '--state-file', stateFile, '--health-socket', health],
      ]);
      const exited = once(agent, 'exit');
      try {
        const pod = sim.pods[0]!;
        const lines: string[] = [];
        let stderr = '';
        agent.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
        await new Promise<void>((resolve, reject) => {
          createInterface({ input: agent.stdout }).on('line', (line) => {
            lines.push(line);
            if (line.startsWith('agent: health on ')) resolve();
          });
          agent.on('exit', (code) => reject(new Error(`agent exited (${code}) before listening: ${stderr}`)));
        });

        const cni = { socketPath: socket, containerId: 'ctr-1', netns: pod.path, ip: pod.ip };
        const add = await invokeCni({ ...cni, command: 'ADD', args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web', K8S_POD_UID: pod.uid } });
        expect(add.status, add.stderr).toBe(0);
        expect(await hostSets(sim)).toMatch(new RegExp(`^${pod.ip.replaceAll('.', '\\.')} comment "${pod.uid}"$`, 'm'));
        expect((await invokeCni({ ...cni, command: 'CHECK' })).status).toBe(0);
        const state = JSON.parse(readFileSync(stateFile, 'utf8'));
        expect(state.pods).toEqual([{ containerId: 'ctr-1', uid: pod.uid, ips: [pod.ip], ifName: 'eth0' }]);
        const ok = await call(health, 'GET', '/healthz');
        expect([ok.status, ok.json.healthy, ok.json.pods.map((p: { uid: string }) => p.uid)]).toEqual([200, true, [pod.uid]]);

        // Drift in the pod: its rules flushed behind the agent's back. CHECK fails (100, ERR_POD_NOT_IN_SYNC), /healthz says 503.
        for (const program of ['iptables-nft', 'iptables-legacy']) await runInNetns(pod.path, [program, '-t', 'nat', '-F'], { timeoutMs: 10_000 }).catch(() => undefined);
        const drift = await invokeCni({ ...cni, command: 'CHECK' });
        expect([drift.status, drift.json?.code, drift.json?.details]).toEqual([1, 100, 'ERR_POD_NOT_IN_SYNC']);
        const bad = await call(health, 'GET', '/healthz');
        expect([bad.status, bad.json.healthy, bad.json.pods[0].inSync]).toEqual([503, false, false]);

        expect((await invokeCni({ ...cni, command: 'DEL' })).status).toBe(0);
        expect(await hostSets(sim)).not.toContain(pod.ip);
        expect(JSON.parse(readFileSync(stateFile, 'utf8')).pods).toEqual([]);

        agent.kill('SIGTERM');
        const [code] = await exited;
        expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
        expect(lines.at(-1)).toBe('agent: stopped');
        // stop() took the probe sets with it.
        expect(await hostSets(sim)).toBe('');
      } finally {
        if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
        await exited;
        rmSync(dir, { recursive: true, force: true });
        await sim.destroy();
      }
    });
  },
  missingBinary('ipset', 'iptables-nft-restore', 'iptables-legacy-restore'),
);

const PIDS_HIERARCHY = '/sys/fs/cgroup/pids';
const cgroupGap = existsSync(join(PIDS_HIERARCHY, 'cgroup.procs')) ? undefined : `needs the cgroup v1 pids hierarchy at ${PIDS_HIERARCHY}`;

/** Starts the example agent with args and resolves once its health endpoint listens. */
async function startAgent(args: string[]) {
  const agent = startExample('examples/inpod-agent/agent.mjs', args);
  const exited = once(agent, 'exit');
  const lines: string[] = [];
  let stderr = '';
  agent.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: agent.stdout }).on('line', (line) => {
      lines.push(line);
      if (line.startsWith('agent: health on ')) resolve();
    });
    agent.on('exit', (code) => reject(new Error(`agent exited (${code}) before listening: ${stderr}`)));
  });
  const stop = async () => {
    if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGTERM');
    const [code] = await exited;
    return { code, stderr };
  };
  return { agent, lines, ready, stop, kill: () => agent.exitCode === null && agent.signalCode === null && agent.kill('SIGKILL'), exited };
}

describePrivileged(
  'in-pod agent example after a restart',
  () => {
    it('finds the pods of its state file again from /proc and takes them over', async () => {
      const sim = await SimulatedNode.create({ tag: `t-${process.env.PODNET_TEST_RUN ?? 'x'}`, pods: 1 });
      const dir = mkdtempSync(join(tmpdir(), 'podnet-example-agent-'));
      const pod = sim.pods[0]!;
      // The pod's process: sleep in the pod's netns, in a cgroup with a kubepods path naming the pod's UID.
      const cgroupTop = join(PIDS_HIERARCHY, `podnet-t-${process.env.PODNET_TEST_RUN ?? 'x'}-${process.pid}-agent`);
      const cgroup = join(cgroupTop, 'kubepods', 'besteffort', `pod${pod.uid}`, 'f'.repeat(64));
      const sleeper = spawn('nsenter', [`--net=${pod.path}`, 'sleep', '120'], { stdio: 'ignore', env: CLI_ENV });
      const socket = join(dir, 'cni.sock');
      const args = ['--socket', socket, '--host-netns', sim.host.path, '--state-file', join(dir, 'state.json'), '--health-socket', join(dir, 'health.sock')];
      let first: Awaited<ReturnType<typeof startAgent>> | undefined;
      let second: Awaited<ReturnType<typeof startAgent>> | undefined;
      try {
        mkdirSync(cgroup, { recursive: true });
        writeFileSync(join(cgroup, 'cgroup.procs'), String(sleeper.pid));
        first = await startAgent(args);
        await first.ready;
        const cni = { socketPath: socket, containerId: 'ctr-1', netns: pod.path, ip: pod.ip };
        const add = await invokeCni({ ...cni, command: 'ADD', args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web', K8S_POD_UID: pod.uid } });
        expect(add.status, add.stderr).toBe(0);
        expect(await first.stop()).toEqual({ code: 0, stderr: '' });
        // The first agent's stop took the probe sets; the pod's in-pod rules stay.
        expect(await hostSets(sim)).toBe('');

        second = await startAgent(args);
        await second.ready;
        expect(second.lines).toContain(`agent: restart: pod ${pod.uid} found in net:[${statSync(pod.path).ino}]`);
        expect(second.lines).toContain('agent: restart: 1 pod(s) found, 0 missed; rules reapplied 1, probe entries pruned 0');
        expect(await hostSets(sim)).toMatch(new RegExp(`^${pod.ip.replaceAll('.', '\\.')} comment "${pod.uid}"$`, 'm'));
        const health = await call(join(dir, 'health.sock'), 'GET', '/healthz');
        expect([health.status, health.json.pods.map((p: { uid: string; inSync: boolean }) => [p.uid, p.inSync])]).toEqual([200, [[pod.uid, true]]]);
        // The state survived the restart: DEL finds the container.
        expect((await invokeCni({ ...cni, command: 'DEL' })).status).toBe(0);
        expect(second.lines).toContain(`agent: DEL ctr-1 pod ${pod.uid}`);
        expect(await second.stop()).toEqual({ code: 0, stderr: '' });
      } finally {
        first?.kill();
        second?.kill();
        await first?.exited;
        await second?.exited;
        sleeper.kill('SIGKILL');
        if (sleeper.exitCode === null && sleeper.signalCode === null) await once(sleeper, 'exit');
        for (let dirPath = cgroup; dirPath.startsWith(cgroupTop); dirPath = dirname(dirPath)) {
          if (existsSync(dirPath)) rmdirSync(dirPath);
        }
        rmSync(dir, { recursive: true, force: true });
        await sim.destroy();
      }
    });
  },
  cgroupGap ?? missingBinary('ipset', 'iptables-nft-restore', 'iptables-legacy-restore', 'nsenter'),
);
