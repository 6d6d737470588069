// examples/inpod-agent on FakeNode: the real podnet-cni forwards ADD, CHECK, STATUS, GC and DEL to the agent's
// CniServer, which drives NodeNetwork on the fakes; the health endpoint reports what verify finds; a bad invocation
// gets its CNI error code and changes nothing; the agent down means ADD fails with 11 and DEL succeeds; SIGTERM
// stops it with nothing left behind.
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, expect, it } from 'vitest';

import { invokeCni } from './cni-runtime.js';
import { startExample } from './run-example.js';
import { callAgent as call } from './unix-http.js';

const UID_A = '0b9c2a4e-1f3d-4c5b-8a6e-7d8f9a0b1c2d';
const UID_B = '5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9';
const podArgs = (uid: string, name: string) => ({ K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: name, K8S_POD_UID: uid });

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('enrolls and removes pods from CNI invocations through podnet-cni, reports health, and stops cleanly on SIGTERM', async () => {
  dir = mkdtempSync(join(tmpdir(), 'podnet-example-agent-'));
  const socketPath = join(dir, 'cni.sock');
  const health = join(dir, 'health.sock');
  // The runtime's CNI dirs: a primary network's conflist the agent chains podnet-cni into, and takes it out of on stop.
  const [binDir, confDir] = [join(dir, 'bin'), join(dir, 'net.d')];
  mkdirSync(confDir);
  const primary = join(confDir, '10-bridge.conflist');
  const primaryText = `${JSON.stringify({ cniVersion: '1.0.0', name: 'k8s-pod-network', plugins: [{ type: 'bridge' }] }, null, 2)}\n`;
  writeFileSync(primary, primaryText);
  const agent = startExample('examples/inpod-agent/agent.mjs', [
    ...['--fake', '--socket', socketPath, '--health-socket', health, '--cni-bin-dir', binDir, '--cni-conf-dir', confDir, '--uninstall'],
  ]);
  const lines: string[] = [];
  let stderr = '';
  agent.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
  const exited = once(agent, 'exit');
  try {
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: agent.stdout }).on('line', (line) => {
        lines.push(line);
        if (line.startsWith('agent: health on ')) resolve();
      });
      agent.on('exit', (code) => reject(new Error(`agent exited (${code}) before listening: ${stderr}`)));
    });
    expect(statSync(socketPath).mode & 0o777).toBe(0o600);
    expect(statSync(health).mode & 0o777).toBe(0o600);
    expect(statSync(join(binDir, 'podnet-cni')).mode & 0o777).toBe(0o755);
    expect(JSON.parse(readFileSync(primary, 'utf8')).plugins).toEqual([{ type: 'bridge' }, { type: 'podnet-cni', socketPath, timeoutMs: 10000 }]);

    // Pod netns paths any user may open: FakeNode is told of each path, the plugin passes a real netns fd.
    const nsA = '/proc/self/ns/net';
    const nsB = `/proc/${process.pid}/ns/net`;
    const addA = await invokeCni({ command: 'ADD', socketPath, containerId: 'ctr-a', netns: nsA, args: podArgs(UID_A, 'web-a'), ip: '10.244.0.5' });
    expect(addA.status, addA.stderr).toBe(0);
    // A chained plugin that changes nothing answers the prevResult.
    expect(addA.json.ips).toEqual([{ address: '10.244.0.5/24', interface: 0 }]);
    expect((await invokeCni({ command: 'CHECK', socketPath, containerId: 'ctr-a', netns: nsA, ip: '10.244.0.5' })).status).toBe(0);
    expect((await invokeCni({ command: 'STATUS', socketPath })).status).toBe(0);

    const ok = await call(health, 'GET', '/healthz');
    expect([ok.status, ok.json.healthy, ok.json.proxyConnected]).toEqual([200, true, true]);
    expect(ok.json.pods.map((p: { uid: string; inSync: boolean }) => [p.uid, p.inSync])).toEqual([[UID_A, true]]);

    // Refused before any handler (no prevResult: code 7), and by NodeNetwork (a bad IP: InvalidArgumentError, 7).
    const noPrev = await invokeCni({ command: 'ADD', socketPath, containerId: 'ctr-x', netns: nsB, args: podArgs(UID_B, 'web-x') });
    expect([noPrev.status, noPrev.json.code, noPrev.json.details]).toEqual([1, 7, 'prevResult']);
    const unknown = await invokeCni({ command: 'CHECK', socketPath, containerId: 'ctr-none', netns: nsB, ip: '10.244.0.9' });
    expect([unknown.status, unknown.json.code]).toEqual([1, 3]);
    expect((await call(health, 'GET', '/healthz')).json.pods.map((p: { uid: string }) => p.uid)).toEqual([UID_A]);
    expect((await call(health, 'GET', '/nope')).status).toBe(404);

    const addB = await invokeCni({ command: 'ADD', socketPath, containerId: 'ctr-b', netns: nsB, args: podArgs(UID_B, 'web-b'), ip: '10.244.0.6' });
    expect(addB.status, addB.stderr).toBe(0);
    // GC keeps only ctr-a: pod B goes.
    const gc = await invokeCni({ command: 'GC', socketPath, validAttachments: [{ containerID: 'ctr-a', ifname: 'eth0' }] });
    expect(gc.status, gc.stderr).toBe(0);
    expect((await call(health, 'GET', '/healthz')).json.pods.map((p: { uid: string }) => p.uid)).toEqual([UID_A]);

    expect((await invokeCni({ command: 'DEL', socketPath, containerId: 'ctr-a', netns: '' })).status).toBe(0);
    // DEL again, and DEL of a container never seen: both succeed.
    expect((await invokeCni({ command: 'DEL', socketPath, containerId: 'ctr-a', netns: '' })).status).toBe(0);
    expect((await invokeCni({ command: 'DEL', socketPath, containerId: 'ctr-never', netns: '' })).status).toBe(0);
    expect((await call(health, 'GET', '/healthz')).json.pods).toEqual([]);

    agent.kill('SIGTERM');
    const [code, signal] = await exited;
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(lines.filter((l) => !l.startsWith('agent: cni: '))).toEqual([
      'agent: node network started (on FakeNode)',
      `agent: listening on ${socketPath}`,
      `agent: podnet-cni installed in ${binDir}, entry in ${confDir}`,
      `agent: health on ${health}`,
      `agent: ADD ctr-a pod ${UID_A} 10.244.0.5`,
      `agent: ADD ctr-b pod ${UID_B} 10.244.0.6`,
      `agent: GC ctr-b pod ${UID_B}`,
      `agent: DEL ctr-a pod ${UID_A}`,
      'agent: DEL ctr-a: not enrolled',
      'agent: DEL ctr-never: not enrolled',
      'agent: SIGTERM: stopping',
      'agent: podnet-cni uninstalled: entry taken out of 1 file(s), binary removed: true',
      'agent: fake node: probe sets left 0, pods still enrolled 0, open namespace handles 0',
      'agent: stopped',
    ]);
    expect(existsSync(socketPath)).toBe(false);
    expect([readFileSync(primary, 'utf8'), existsSync(join(binDir, 'podnet-cni'))]).toEqual([primaryText, false]);

    // The agent is down: fail closed. ADD is answered 11 (the runtime retries it), DEL succeeds.
    const down = await invokeCni({ command: 'ADD', socketPath, containerId: 'ctr-c', netns: nsA, args: podArgs(UID_A, 'web-c'), ip: '10.244.0.7' });
    expect([down.status, down.json.code]).toEqual([1, 11]);
    expect((await invokeCni({ command: 'DEL', socketPath, containerId: 'ctr-c', netns: '' })).status).toBe(0);
  } finally {
    if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
    await exited;
  }
});
