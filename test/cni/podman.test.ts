// A real container runtime through podnet-cni: podman 4.3 with its CNI backend runs busybox containers on a bridge
// network whose conflist chains podnet-cni (put there by installCniPlugin), and the agent end is podnet's own: a
// CniServer whose ADD enrolls the container with NodeNetwork (iptables backend, probe set in ipset) and a
// ZtunnelServer, with the ztunnel player as the node proxy listening on 15001 (the outbound capture port) inside each
// pod netns it is handed. Everything runs inside one test namespace: podman is entered into it with nsenter, so the
// bridge, the host-side rules and the probe set live there. podman passes no pod UID (CNI_ARGS names the container
// only), so the container id is the pod's uid. What podman leaves outside the temp dir is recorded before and removed
// after (test/cni/helpers/podman-host.ts), and the test fails when any of it is left.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { NodeNetwork } from '../../lib/index.js';
import { installCniPlugin } from '../../lib/cni/install.js';
import { CniServer, type CniRequest } from '../../lib/cni/server.js';
import { ZtunnelServer } from '../../lib/proxy/ztunnel-server.js';
import { CLI_ENV, TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { startZtunnelPlayer, type PlayerEvent, type ZtunnelPlayer } from '../helpers/ztunnel-player.js';
import { PLUGIN } from './helpers/plugin-run.js';
import { attempter, leftovers, restoreHost, runtimeNetnsFiles, snapshotHost, type HostSnapshot } from './helpers/podman-host.js';
import { BUSYBOX, describeExit, Podman, PODMAN_TIMEOUT_MS } from './helpers/podman-run.js';

const execFileAsync = promisify(execFile);
const DEADLINE_MS = 20_000;
const IMAGE = 'localhost/busybox:test';
const NETWORK = 'podnet-podman';
const PROBE_SET = 'istio-inpod-probes-v4';
const OUTBOUND_PORT = 15001;
// Any subnet does: it exists only inside the test namespace.
const SUBNET_OCTET = 100 + (process.pid % 150);
const GATEWAY = `10.89.${SUBNET_OCTET}.1`;

/** One CNI call as the agent saw it, with the probe set's kernel entries around the agent's work. */
interface AgentCall {
  command: string;
  uid: string;
  podName: string | undefined;
  /** CNI_NETNS as podman gave it. */
  netnsPath: string | undefined;
  ips: string[];
  netnsInode: number | undefined;
  /** ADD: the entries after addPod; DEL: the entries before removePod (the container has run by then). */
  probes: ProbeEntry[];
}

interface ProbeEntry {
  ip: string;
  owner: string;
}

const isEvent =
  (event: string, fields: Record<string, unknown> = {}) =>
  (e: PlayerEvent): boolean =>
    e.event === event && Object.entries(fields).every(([k, v]) => e[k] === v);

/** waitUntil polls check until it returns a value, rejecting with what at the deadline. */
async function waitUntil<T>(what: string, check: () => T | undefined, timeoutMs = DEADLINE_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Why this suite cannot run here beyond root: a missing program, or no static busybox to make the image of. */
function extraGap(): string | undefined {
  const missing = missingBinary('podman', 'runc', 'nsenter', 'conmon', 'tar', 'ipset', 'iptables-nft-restore', 'python3');
  if (missing !== undefined) return missing;
  if (!existsSync(BUSYBOX)) return `needs a static busybox at ${BUSYBOX} (busybox-static)`;
  return undefined;
}

describePrivileged(
  'podman (CNI backend) runs containers through podnet-cni into the agent',
  () => {
    let ns: TestNetns | undefined;
    let dir: string | undefined;
    let before: HostSnapshot | undefined;
    let cgroupParent = '';
    let podman!: Podman;
    let cni: CniServer | undefined;
    let ztunnel: ZtunnelServer | undefined;
    let network: NodeNetwork | undefined;
    let player: ZtunnelPlayer | undefined;
    let conflistPath = '';
    const calls: AgentCall[] = [];
    const agentErrors: unknown[] = [];

    /** The probe set's entries as the kernel holds them in the test namespace (`ipset save`). */
    const probeEntries = async (): Promise<ProbeEntry[]> => {
      const { stdout } = await execFileAsync('ip', ['netns', 'exec', ns!.name, 'ipset', 'save', PROBE_SET], {
        env: CLI_ENV,
        timeout: DEADLINE_MS,
      });
      const out: ProbeEntry[] = [];
      for (const line of stdout.split('\n')) {
        const m = /^add \S+ (\S+)(?: .*comment "([^"]*)")?/.exec(line);
        if (m) out.push({ ip: m[1]!, owner: m[2] ?? '' });
      }
      return out;
    };

    const podOf = (req: CniRequest, ips: string[]) => ({ uid: req.containerId, ips });

    /** The agent's end: ADD enrolls the container (id as uid), DEL removes it; both record what they saw. */
    const listenCni = (path: string): Promise<CniServer> =>
      CniServer.listen({
        path,
        add: async (req) => {
          try {
            await network!.addPod({
              ...podOf(req, req.ips),
              netns: req.netns!,
              workload: { name: req.pod?.name ?? req.containerId, namespace: 'podman', serviceAccount: 'default' },
            });
          } catch (err) {
            agentErrors.push(err);
            throw err;
          }
          calls.push({
            command: 'ADD',
            uid: req.containerId,
            podName: req.pod?.name,
            netnsPath: req.netnsPath,
            ips: req.ips,
            netnsInode: req.netns?.inode,
            probes: await probeEntries(),
          });
        },
        del: async (req) => {
          // DEL carries the prevResult under podman; an ADD's addresses stand in when it does not.
          const ips = req.ips.length > 0 ? req.ips : (calls.find((c) => c.command === 'ADD' && c.uid === req.containerId)?.ips ?? []);
          const probes = await probeEntries();
          try {
            await network!.removePod(podOf(req, ips), { deleted: true });
          } catch (err) {
            agentErrors.push(err);
            throw err;
          }
          calls.push({ command: 'DEL', uid: req.containerId, podName: req.pod?.name, netnsPath: req.netnsPath, ips, netnsInode: req.netns?.inode, probes });
        },
      });

    beforeAll(async () => {
      before = snapshotHost();
      const run = process.env.PODNET_TEST_RUN ?? 'x';
      cgroupParent = `podnet-t-${run}-${process.pid}-podman`;
      dir = mkdtempSync(join(tmpdir(), 'podnet-podman-'));
      ns = new TestNetns('podman');
      const binDir = join(dir, 'bin');
      const confDir = join(dir, 'net.d');
      mkdirSync(confDir);
      const socketPath = join(dir, 'cni.sock');
      conflistPath = join(confDir, '10-podnet-podman.conflist');
      writeFileSync(
        conflistPath,
        JSON.stringify({
          cniVersion: '1.0.0',
          name: NETWORK,
          plugins: [
            {
              type: 'bridge',
              bridge: 'podnet-br0',
              isGateway: true,
              ipMasq: false,
              ipam: {
                type: 'host-local',
                ranges: [[{ subnet: `10.89.${SUBNET_OCTET}.0/24`, gateway: GATEWAY }]],
                routes: [{ dst: '0.0.0.0/0' }],
                dataDir: join(dir, 'host-local'),
              },
            },
          ],
        }),
      );
      const installation = await installCniPlugin({ binDir, confDir, socketPath, timeoutMs: 10_000, pluginPath: PLUGIN });
      // The files stay; only the watcher goes (nobody rewrites this config).
      await installation.close();

      podman = new Podman({ netnsPath: ns.path, dir, cniPluginDirs: [binDir, '/usr/lib/cni'], cniConfigDir: confDir, cgroupParent });
      await podman.importBusybox(IMAGE);

      ztunnel = await ZtunnelServer.listen({ path: join(dir, 'ztunnel.sock') });
      network = new NodeNetwork({ hostNetns: ns.path, proxy: ztunnel });
      await network.start();
      player = startZtunnelPlayer({ socketPath: ztunnel.path, port: OUTBOUND_PORT, netns: ns.name });
      await player.waitFor(isEvent('ack', { request: 'snapshotSent' }), DEADLINE_MS);
      cni = await listenCni(socketPath);
    }, 4 * PODMAN_TIMEOUT_MS);

    afterAll(async () => {
      const problems: string[] = [];
      const attempt = attempter(problems);
      if ((podman as Podman | undefined) !== undefined) {
        // Containers a failed case left behind (their DEL may fail with the agent down; the files go below anyway).
        await attempt('podman rm -af', () => podman.call(['rm', '-a', '-f', '-t', '0']));
      }
      if (cni) await attempt('closing the CniServer', () => cni!.close());
      if (network) await attempt('network.stop()', () => network!.stop());
      if (player) await attempt('stopping the player', () => player!.stop());
      if (ztunnel) await attempt('closing the ZtunnelServer', () => ztunnel!.close());
      if (before !== undefined && dir !== undefined) {
        problems.push(...(await restoreHost(before, cgroupParent, dir)));
      }
      if (dir !== undefined) await attempt(`removing ${dir}`, () => rmSync(dir!, { recursive: true, force: true }));
      if (ns) await attempt(`deleting ${ns.name}`, () => ns!.delete());
      if (before !== undefined) {
        const left = leftovers(before, cgroupParent);
        if (left.length > 0) problems.push(`left on the host: ${left.join(', ')}`);
      }
      if (problems.length > 0) throw new Error(`cleanup failed:\n${problems.join('\n')}`);
    }, 4 * PODMAN_TIMEOUT_MS);

    it("a container's very first connection is already redirected to the proxy; DEL takes the pod out again", async () => {
      // installCniPlugin chained podnet-cni after the bridge, pointing it at the agent's socket.
      const conflist = JSON.parse(readFileSync(conflistPath, 'utf8')) as { plugins: Record<string, unknown>[] };
      expect(conflist.plugins.map((p) => p.type)).toEqual(['bridge', 'podnet-cni']);
      expect(conflist.plugins[1]).toMatchObject({ socketPath: cni!.path });

      const from = player!.events.length;
      const exit = await podman.call(['run', '--rm', ...podman.runFlags, '--network', NETWORK, IMAGE, 'nc', '-w', '5', GATEWAY, '80']);
      expect(exit.code, describeExit(exit)).toBe(0);

      const add = calls.find((c) => c.command === 'ADD');
      if (add === undefined) throw new Error(`no ADD reached the agent\n${describeExit(exit)}`);
      // The one line the player's listener inside the pod answers, naming the original destination.
      expect(exit.stdout).toBe(`ztunnel-player ${add.uid} ${GATEWAY}:80\n`);
      expect(add.uid).toMatch(/^[0-9a-f]{64}$/);
      // podman names the container; the netns is one it made in /run/netns and removes with the container.
      expect(add.podName).toMatch(/^\w+_\w+$/);
      expect(add.netnsPath).toMatch(/^\/run\/netns\/netns-[0-9a-f-]{36}$/);
      expect(add.ips).toHaveLength(1);
      const [ip] = add.ips;
      expect(ip).toMatch(new RegExp(`^10\\.89\\.${SUBNET_OCTET}\\.\\d+$`));
      expect(add.probes).toContainEqual({ ip, owner: add.uid });
      expect(await player!.waitFor(isEvent('conn', { uid: add.uid }), DEADLINE_MS, from)).toEqual({
        event: 'conn',
        uid: add.uid,
        origDst: `${GATEWAY}:80`,
        origDstSource: 'SO_ORIGINAL_DST',
        peer: expect.stringMatching(new RegExp(`^${ip!.replaceAll('.', '\\.')}:\\d+$`)),
      });
      expect(player!.events.slice(from).find(isEvent('listening', { uid: add.uid }))).toMatchObject({ port: OUTBOUND_PORT, netnsInode: add.netnsInode });

      // --rm: podman tears the network down, which runs DEL; the entry was still there when it came.
      const del = await waitUntil('DEL', () => calls.find((c) => c.command === 'DEL' && c.uid === add.uid));
      expect(del.ips).toEqual(add.ips);
      expect(del.probes).toContainEqual({ ip, owner: add.uid });
      expect((await probeEntries()).filter((e) => e.owner === add.uid)).toEqual([]);
      expect(ztunnel!.workloads.map((w) => w.uid)).not.toContain(add.uid);
      await player!.waitFor(isEvent('del', { uid: add.uid, known: true }), DEADLINE_MS, from);
      expect(calls.filter((c) => c.uid === add.uid).map((c) => c.command)).toEqual(['ADD', 'DEL']);
      expect(existsSync(add.netnsPath!)).toBe(false);
      expect(agentErrors).toEqual([]);
    });

    /**
     * enrolledThenRemoved checks that the running container `id` is enrolled (ADD seen, probe entry in the kernel, the
     * player listening in its netns and answering its connections), then removes it with `podman rm -f` and checks
     * that DEL took it out again. `from` is the player's first event of the case.
     */
    const enrolledThenRemoved = async (id: string, from: number): Promise<void> => {
      const add = calls.find((c) => c.command === 'ADD' && c.uid === id);
      if (add === undefined) throw new Error(`no ADD for ${id} reached the agent`);
      const ip = (await podman.ok(['inspect', '-f', `{{(index .NetworkSettings.Networks "${NETWORK}").IPAddress}}`, id])).trim();
      expect(add.ips).toEqual([ip]);
      expect(await probeEntries()).toContainEqual({ ip, owner: id });
      expect(ztunnel!.workloads.map((w) => w.uid)).toContain(id);
      expect(await player!.waitFor(isEvent('listening', { uid: id }), DEADLINE_MS, from)).toEqual({
        event: 'listening',
        uid: id,
        port: OUTBOUND_PORT,
        netnsInode: add.netnsInode,
      });
      // While it runs, its connections go to the proxy too.
      const probe = await podman.call(['exec', id, 'nc', '-w', '5', GATEWAY, '80']);
      expect(probe.stdout, describeExit(probe)).toBe(`ztunnel-player ${id} ${GATEWAY}:80\n`);

      const removed = await podman.call(['rm', '-f', '-t', '0', id]);
      expect(removed.code, describeExit(removed)).toBe(0);
      const del = await waitUntil('DEL', () => calls.find((c) => c.command === 'DEL' && c.uid === id));
      expect(del.ips).toEqual([ip]);
      expect(del.probes).toContainEqual({ ip, owner: id });
      expect((await probeEntries()).filter((e) => e.owner === id)).toEqual([]);
      expect(ztunnel!.workloads.map((w) => w.uid)).not.toContain(id);
      await player!.waitFor(isEvent('del', { uid: id, known: true }), DEADLINE_MS, from);
      expect((await podman.ok(['ps', '-a', '-q', '--no-trunc'])).trim()).toBe('');
      expect(add.netnsPath).toMatch(/^\/run\/netns\/netns-[0-9a-f-]{36}$/);
      expect(existsSync(add.netnsPath!)).toBe(false);
      expect(agentErrors).toEqual([]);
    };

    it('a detached container is enrolled while it runs; podman rm -f reaches the agent and takes it out', async () => {
      const from = player!.events.length;
      const started = await podman.call(['run', '-d', ...podman.runFlags, '--network', NETWORK, IMAGE, 'sleep', '300']);
      expect(started.code, describeExit(started)).toBe(0);
      const id = started.stdout.trim();
      expect(id).toMatch(/^[0-9a-f]{64}$/);
      try {
        await enrolledThenRemoved(id, from);
      } finally {
        // Already gone when the case got that far; otherwise it must not outlive the case.
        await podman.call(['rm', '-f', '-t', '0', '--ignore', id]);
      }
    });

    it('with the agent down, podman run fails closed and leaves no container running', async () => {
      const socket = cni!.path;
      await cni!.close();
      const before = calls.length;
      const netnsBefore = runtimeNetnsFiles();
      const name = `podnet-refused-${process.pid}`;
      const exit = await podman.call(['run', '--rm', '--name', name, ...podman.runFlags, '--network', NETWORK, IMAGE, 'sleep', '300']);
      expect(exit.code, describeExit(exit)).not.toBe(0);
      expect(exit.code, describeExit(exit)).not.toBeNull();
      expect(exit.stdout + exit.stderr, describeExit(exit)).toContain(`podnet agent not reachable at ${socket}`);
      expect(calls.length).toBe(before);
      const running = await podman.ok(['ps', '-q', '--no-trunc', '--filter', `name=^${name}$`]);
      const all = await podman.ok(['ps', '-a', '--no-trunc', '--format', '{{.ID}} {{.Names}} {{.State}}', '--filter', `name=^${name}$`]);
      expect(running.trim(), all).toBe('');
      expect(all.trim()).toBe('');
      // The netns podman made for it went with it.
      expect([...runtimeNetnsFiles()].filter((n) => !netnsBefore.has(n))).toEqual([]);
    });
  },
  extraGap(),
);
