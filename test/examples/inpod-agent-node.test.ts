// examples/inpod-agent for real, on a simulated node (a host namespace and a pod namespace the test makes): the
// agent runs NodeNetwork in the host namespace given by --host-netns, and CNI ADD/DEL over its socket change the
// kernel's probe set and the pod's rules there. Nothing outside the simulated node's namespaces is touched.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { expect, it } from 'vitest';

import { runInNetns } from '../../lib/index.js';
import { SimulatedNode } from '../../lib/testing/index.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
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
      const agent = startExample('examples/inpod-agent/agent.mjs', ['--socket', socket, '--host-netns', sim.host.path]);
      const exited = once(agent, 'exit');
      try {
        const pod = sim.pods[0]!;
        const lines: string[] = [];
        let stderr = '';
        agent.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
        await new Promise<void>((resolve, reject) => {
          createInterface({ input: agent.stdout }).on('line', (line) => {
            lines.push(line);
            if (line === `agent: listening on ${socket}`) resolve();
          });
          agent.on('exit', (code) => reject(new Error(`agent exited (${code}) before listening: ${stderr}`)));
        });

        const event = { uid: pod.uid, netns: pod.path, ips: [pod.ip] };
        expect(await call(socket, 'POST', '/cni/add', JSON.stringify(event))).toEqual({ status: 200, json: { ok: true } });
        expect(await hostSets(sim)).toMatch(new RegExp(`^${pod.ip.replaceAll('.', '\\.')} comment "${pod.uid}"$`, 'm'));
        const health = await call(socket, 'GET', '/healthz');
        expect([health.status, health.json.inSync, health.json.pods.map((p: { uid: string }) => p.uid)]).toEqual([200, true, [pod.uid]]);

        expect((await call(socket, 'POST', '/cni/del', JSON.stringify(event))).status).toBe(200);
        expect(await hostSets(sim)).not.toContain(pod.ip);

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
