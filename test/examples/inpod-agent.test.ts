// examples/inpod-agent on FakeNode: CNI ADD and DEL over HTTP on its unix socket drive NodeNetwork, bad requests
// get typed errors and change nothing, and SIGTERM stops it with nothing left behind.
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, expect, it } from 'vitest';

import { startExample } from './run-example.js';
import { callAgent as call } from './unix-http.js';

const workload = { name: 'reviews-v1', namespace: 'default', serviceAccount: 'reviews' };
const podA = { uid: 'uid-a', netns: '/run/netns/cni-a', ips: ['10.244.0.5'], ...workload };

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

it('enrolls and removes pods from CNI events over HTTP on a unix socket, and stops cleanly on SIGTERM', async () => {
  dir = mkdtempSync(join(tmpdir(), 'podnet-example-agent-'));
  const socket = join(dir, 'cni.sock');
  const agent = startExample('examples/inpod-agent/agent.mjs', ['--fake', '--socket', socket]);
  const lines: string[] = [];
  let stderr = '';
  agent.stderr.setEncoding('utf8').on('data', (c) => (stderr += c));
  const exited = once(agent, 'exit');
  try {
    const listening = new Promise<void>((resolve, reject) => {
      createInterface({ input: agent.stdout }).on('line', (line) => {
        lines.push(line);
        if (line === `agent: listening on ${socket}`) resolve();
      });
      agent.on('exit', (code) => reject(new Error(`agent exited (${code}) before listening: ${stderr}`)));
    });
    await listening;
    expect(statSync(socket).mode & 0o777).toBe(0o600);

    expect(await call(socket, 'POST', '/cni/add', JSON.stringify(podA))).toEqual({ status: 200, json: { ok: true } });
    const health = await call(socket, 'GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.json.inSync).toBe(true);
    expect(health.json.pods.map((p: { uid: string; inSync: boolean }) => [p.uid, p.inSync])).toEqual([['uid-a', true]]);

    const bad = await call(socket, 'POST', '/cni/add', JSON.stringify({ ...podA, uid: 'uid-b', ips: ['not-an-ip'] }));
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument: 'pod.ips[0]' });
    const noWorkload = await call(socket, 'POST', '/cni/add', JSON.stringify({ uid: 'uid-c', netns: '/run/netns/cni-c', ips: ['10.244.0.9'] }));
    expect(noWorkload.status).toBe(400);
    expect(noWorkload.json.error.argument).toBe('pod.workload');
    expect((await call(socket, 'POST', '/cni/add', '{not json')).json.error.code).toBe('ERR_BAD_JSON');
    expect((await call(socket, 'GET', '/nope')).status).toBe(404);
    // Only uid-a is enrolled: the refused requests changed nothing.
    expect((await call(socket, 'GET', '/healthz')).json.pods.map((p: { uid: string }) => p.uid)).toEqual(['uid-a']);

    expect(await call(socket, 'POST', '/cni/del', JSON.stringify({ uid: 'uid-a', netns: podA.netns, ips: podA.ips }))).toEqual({
      status: 200,
      json: { ok: true },
    });
    expect((await call(socket, 'GET', '/healthz')).json.pods).toEqual([]);

    agent.kill('SIGTERM');
    const [code, signal] = await exited;
    expect({ code, signal, stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    expect(lines).toEqual([
      'agent: node network started (on FakeNode)',
      `agent: listening on ${socket}`,
      'agent: ADD uid-a 10.244.0.5',
      'agent: DEL uid-a',
      'agent: SIGTERM: stopping',
      'agent: fake node: probe sets left 0, pods still enrolled 0, open namespace handles 0',
      'agent: stopped',
    ]);
    expect(existsSync(socket)).toBe(false);
  } finally {
    if (agent.exitCode === null && agent.signalCode === null) agent.kill('SIGKILL');
    await exited;
  }
});
