// SimulatedNode builds what it says (addresses, routes, forwarding only inside its host namespace) and leaves
// no namespace behind: after destroy, after a build that failed half way, and after a synchronous dispose.
import { existsSync, readdirSync } from 'node:fs';
import { expect, it } from 'vitest';

import { runInNetns } from '../../lib/index.js';
import { SimulatedNode, echoWho, startEchoWho } from '../../lib/testing/index.js';
import { describePrivileged } from '../helpers/privileged.js';

const tag = `t-${process.env.PODNET_TEST_RUN ?? 'x'}`;

function ownNamespaces(prefix: string): string[] {
  return readdirSync('/run/netns').filter((n) => n.startsWith(prefix));
}

async function out(netns: string, argv: string[]): Promise<string> {
  const r = await runInNetns(netns, argv, { timeoutMs: 10_000 });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout;
}

describePrivileged('SimulatedNode', () => {
  it('builds a host and pods joined by veths with /32 point-to-point routes, and deletes every namespace', async () => {
    const sim = await SimulatedNode.create({ tag, pods: 2 });
    const prefix = sim.host.name.replace(/host$/, '');
    try {
      expect(sim.names).toEqual([sim.host.name, ...sim.pods.map((p) => p.name)]);
      expect(sim.pods.map((p) => p.ip)).toEqual(['10.244.0.10', '10.244.0.11']);
      expect(new Set(sim.pods.map((p) => p.uid)).size).toBe(2);

      const hostRoutes = await out(sim.host.path, ['ip', '-4', 'route', 'show']);
      expect(hostRoutes).toMatch(/^10\.244\.0\.10 dev vp0 /m);
      expect(hostRoutes).toMatch(/^10\.244\.0\.11 dev vp1 /m);
      expect(await out(sim.host.path, ['ip', '-4', '-o', 'addr', 'show', 'dev', 'vp1'])).toContain('inet 10.244.0.1/32');
      expect(await out(sim.host.path, ['sysctl', '-n', 'net.ipv4.ip_forward'])).toBe('1\n');
      expect(await out(sim.host.path, ['sysctl', '-n', 'net.ipv4.conf.all.rp_filter'])).toBe('0\n');

      const podRoutes = await out(sim.pods[1]!.path, ['ip', '-4', 'route', 'show']);
      expect(podRoutes).toMatch(/^default via 10\.244\.0\.1 dev eth0/m);
      expect(podRoutes).toMatch(/^10\.244\.0\.1 dev eth0/m);
      expect(await out(sim.pods[1]!.path, ['ip', '-4', '-o', 'addr', 'show', 'dev', 'eth0'])).toContain('inet 10.244.0.11/32');
      expect(await out(sim.pods[0]!.path, ['ip', '-o', 'link', 'show', 'lo'])).toMatch(/<LOOPBACK,UP,LOWER_UP>/);
      const viaRun = await sim.run(sim.pods[0]!.path, ['ip', '-o', 'link', 'show', 'eth0'], { timeoutMs: 10_000 });
      expect(viaRun.stdout).toMatch(/eth0@if\d+: .*UP/);

      // Pod to pod through the host's forwarding, and the client sees the echo-who answer, not a guess.
      const server = await startEchoWho(sim.pods[0]!.path, { ports: [8080], lifetimeMs: 30_000 });
      try {
        expect(await echoWho(sim.pods[1]!.path, '10.244.0.10', 8080)).toBe('8080 10.244.0.11');
        expect(await echoWho(sim.pods[1]!.path, '10.244.0.10', 8081)).toBe('refused');
        // A server that cannot listen is reported at once, not after its lifetime.
        const started = Date.now();
        await expect(startEchoWho(sim.pods[0]!.path, { ports: [8080], controlPort: 19998, lifetimeMs: 30_000 })).rejects.toThrow(
          /on ports 8080 not ready.*EADDRINUSE/s,
        );
        // At once means long before the server's 30 s lifetime, which is all this bounds.
        expect(Date.now() - started).toBeLessThan(10_000);
      } finally {
        expect((await server.stop()).stdout).toContain('exit stopped');
      }
    } finally {
      await sim.destroy();
    }
    expect(ownNamespaces(prefix)).toEqual([]);
    expect(sim.names).toEqual([]);
    await sim.destroy(); // idempotent
  });

  it('deletes what it made when the build stops half way', async () => {
    let checks = 0;
    // Aborts at the second check: after the host namespace is made, before the first pod's.
    const signal = {
      throwIfAborted() {
        if (++checks >= 2) throw new Error('stop here');
      },
    } as unknown as AbortSignal;
    const before = readdirSync('/run/netns');
    await expect(SimulatedNode.create({ tag, pods: 2, signal })).rejects.toThrow('stop here');
    expect(checks).toBe(2);
    expect(readdirSync('/run/netns').filter((n) => !before.includes(n) && n.startsWith(`podnet-${tag}-`))).toEqual([]);
  });

  it('refuses bad options before making anything', async () => {
    await expect(SimulatedNode.create({ tag: 'a/b', pods: 1 })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
    await expect(SimulatedNode.create({ tag, pods: 0 })).rejects.toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
  });

  it('deletes its namespaces on synchronous dispose', async () => {
    const sim = await SimulatedNode.create({ tag, pods: 1 });
    const paths = sim.namespaces.map((n) => n.path);
    try {
      expect(paths.every((p) => existsSync(p))).toBe(true);
    } finally {
      sim[Symbol.dispose]();
    }
    expect(paths.filter((p) => existsSync(p))).toEqual([]);
  });
});
