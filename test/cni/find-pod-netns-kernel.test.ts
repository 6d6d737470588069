// findPodNetns on the kernel's own /proc: real `sleep` processes started with nsenter (argv, no shell) in namespaces
// made by TestNetns, each with a veth holding a pod IP, and moved into cgroups with kubepods paths (cgroupfs and
// systemd driver shapes) made for the test under the cgroup v1 `pids` hierarchy (one pod under the hybrid layout's v2
// hierarchy instead) and removed afterwards. A TestNetns
// stands in for the host's netns (options.hostNetns), so nothing here runs in or reads the machine's own. Cases: the
// pod found through its oldest process; an older process of the pod in the host's netns skipped; a younger process
// of pod A that entered pod B's netns not deciding; a netns without the pod's IP rejected; a hostNetwork pod
// reported; the fds of this process the same before and after.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';

import { findPodNetns } from '../../lib/cni/find-pod-netns.js';
import { startTimeFromStat } from '../../lib/cni/proc-stat.js';
import { PodnetSystemError } from '../../lib/errors.js';
import { openFds } from '../helpers/fds.js';
import { CLI_ENV, TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

const PIDS_HIERARCHY = '/sys/fs/cgroup/pids';
const UNIFIED_HIERARCHY = '/sys/fs/cgroup/unified';
const cgroupGap =
  existsSync(join(PIDS_HIERARCHY, 'cgroup.procs')) && existsSync(join(UNIFIED_HIERARCHY, 'cgroup.procs'))
    ? undefined
    : `needs a hybrid cgroup layout: v1 pids at ${PIDS_HIERARCHY}, v2 at ${UNIFIED_HIERARCHY}`;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describePrivileged(
  'findPodNetns on the kernel /proc',
  () => {
    const topName = `podnet-t-${process.env.PODNET_TEST_RUN ?? 'x'}-${process.pid}`;
    const top = join(PIDS_HIERARCHY, topName);
    const topV2 = join(UNIFIED_HIERARCHY, topName);
    const uidA = randomUUID();
    const uidB = randomUUID();
    const uidWrong = randomUUID();
    const uidHostNet = randomUUID();
    const uidV2 = randomUUID();
    const cgroupA = join(top, 'kubepods', 'burstable', `pod${uidA}`, 'a'.repeat(64));
    const cgroupB = join(
      top,
      'kubepods.slice',
      'kubepods-besteffort.slice',
      `kubepods-besteffort-pod${uidB.replaceAll('-', '_')}.slice`,
      `cri-containerd-${'b'.repeat(64)}.scope`,
    );
    const cgroupWrong = join(top, 'kubepods', `pod${uidWrong}`, 'c'.repeat(64));
    const cgroupHostNet = join(top, 'kubepods', 'besteffort', `pod${uidHostNet}`, 'd'.repeat(64));
    // Only on the v2 line of the hybrid layout (its v1 lines stay at the root): systemd driver, CRI-O.
    const cgroupV2 = join(topV2, 'kubepods.slice', `kubepods-pod${uidV2.replaceAll('-', '_')}.slice`, `crio-${'e'.repeat(64)}.scope`);
    const made: TestNetns[] = [];
    const children: ChildProcess[] = [];
    const pids: Record<string, number> = {};
    let hostNs: TestNetns;
    let nsA: TestNetns;
    let nsB: TestNetns;
    let nsV2: TestNetns;

    const netnsWith = (tag: string, cidr?: string): TestNetns => {
      const ns = new TestNetns(tag);
      made.push(ns);
      if (cidr !== undefined) {
        ns.ip('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'peer0');
        ns.ip('addr', 'add', cidr, 'dev', 'eth0');
      }
      return ns;
    };

    /** Starts `sleep` in ns (nsenter execs it under its own PID), then moves it into cgroup. */
    async function startIn(name: string, ns: TestNetns, cgroup: string): Promise<number> {
      const child = spawn('nsenter', [`--net=${ns.path}`, 'sleep', '120'], { stdio: 'ignore', env: CLI_ENV });
      children.push(child);
      const pid = child.pid;
      if (pid === undefined) throw new Error(`nsenter for ${name} did not start`);
      mkdirSync(cgroup, { recursive: true });
      writeFileSync(join(cgroup, 'cgroup.procs'), String(pid));
      const target = statSync(ns.path).ino;
      // Until nsenter has entered the namespace and exec'd sleep, the process is not what the case lays out.
      for (let i = 0; i < 200; i++) {
        const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
        if (comm === 'sleep' && statSync(`/proc/${pid}/ns/net`).ino === target) break;
        await sleep(10);
      }
      pids[name] = pid;
      return pid;
    }

    const startTime = (pid: number): bigint => startTimeFromStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))!;

    beforeAll(async () => {
      hostNs = netnsWith('host', '192.168.51.10/24');
      nsA = netnsWith('a', '10.45.0.1/24');
      nsB = netnsWith('b', '10.45.0.2/24');
      const nsWrong = netnsWith('wrong', '10.45.0.99/24');
      nsV2 = netnsWith('v2', '10.45.0.3/24');
      // Start times count clock ticks (10 ms at USER_HZ 100): the gaps make the order of age certain.
      await startIn('aInHost', hostNs, cgroupA);
      await sleep(60);
      await startIn('a', nsA, cgroupA);
      await sleep(60);
      await startIn('b', nsB, cgroupB);
      await startIn('wrong', nsWrong, cgroupWrong);
      await startIn('hostNet', hostNs, cgroupHostNet);
      await startIn('v2', nsV2, cgroupV2);
      await sleep(60);
      await startIn('aInB', nsB, cgroupA);
    });

    afterAll(async () => {
      const exits = children.map((c) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', r))));
      for (const c of children) c.kill('SIGKILL');
      await Promise.all(exits);
      // Leaf to root: every cgroup below the tops, deepest first, so a parent goes after all its children.
      const dirs = new Set<string>();
      for (const leaf of [cgroupA, cgroupB, cgroupWrong, cgroupHostNet, cgroupV2]) {
        const root = leaf.startsWith(topV2) ? topV2 : top;
        for (let dir = leaf; dir.startsWith(root); dir = join(dir, '..')) dirs.add(dir);
      }
      for (const dir of [...dirs].sort((x, y) => y.split('/').length - x.split('/').length)) {
        // A killed process leaves its cgroup at once in practice; the retries cover the moment it has not.
        for (let i = 0; ; i++) {
          try {
            rmdirSync(dir);
            break;
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'ENOENT') break;
            if ((err as NodeJS.ErrnoException).code !== 'EBUSY' || i === 20) throw err;
            await sleep(50);
          }
        }
      }
      for (const ns of made) ns.delete();
      expect(existsSync(top)).toBe(false);
      expect(existsSync(topV2)).toBe(false);
    });

    it('lays out the processes in the order of age the cases need', () => {
      expect(startTime(pids.aInHost!)).toBeLessThan(startTime(pids.a!));
      expect(startTime(pids.a!)).toBeLessThan(startTime(pids.aInB!));
      expect(readFileSync(`/proc/${pids.aInB}/cgroup`, 'utf8')).toContain(`/kubepods/burstable/pod${uidA}/`);
      expect(readFileSync(`/proc/${pids.v2}/cgroup`, 'utf8')).toMatch(new RegExp(`^0::/${topName}/kubepods.slice/`, 'm'));
    });

    it("pairs each pod with its own netns; host, younger intruder and wrong IP do not count; no fd left open", async () => {
      const before = openFds();
      {
        using result = await findPodNetns({
          pods: [
            { uid: uidA, ips: ['10.45.0.1'] },
            { uid: uidB, ips: ['10.45.0.2'] },
            { uid: uidWrong, ips: ['10.45.0.4'] },
            { uid: uidHostNet, ips: ['192.168.51.10'] },
            { uid: uidV2, ips: ['10.45.0.3'] },
          ],
          hostNetns: hostNs.path,
        });
        using expectedA = nsA.open();
        using expectedB = nsB.open();
        const a = result.found.get(uidA)!;
        expect(a).toMatchObject({ pid: pids.a, ip: '10.45.0.1' });
        expect(a.netns.equals(expectedA)).toBe(true);
        // The process in the host's netns is older but skipped; the one in B's netns is younger and holds no A IP.
        expect(a.candidates.map((c) => [c.pid, c.inode, c.oldest, c.matchedIp])).toEqual([
          [pids.a, expectedA.inode, true, '10.45.0.1'],
          [pids.aInB, expectedB.inode, false, undefined],
        ]);
        const b = result.found.get(uidB)!;
        expect(b.pid).toBe(pids.b);
        expect(b.netns.equals(expectedB)).toBe(true);
        expect(result.missing.get(uidWrong)).toMatchObject({ reason: 'ip-mismatch' });
        expect(result.missing.get(uidWrong)!.candidates[0]!.addresses).toContain('10.45.0.99');
        expect(result.missing.get(uidHostNet)).toMatchObject({ reason: 'host-netns', candidates: [] });
        using expectedV2 = nsV2.open();
        expect(result.found.get(uidV2)?.netns.equals(expectedV2)).toBe(true);
        expect(result.stats).toMatchObject({ podProcesses: 7, netnsChecked: 4 });
        expect(result.stats.processes).toBeGreaterThanOrEqual(7);
      }
      await sleep(0);
      expect([...openFds().keys()].filter((fd) => !before.has(fd))).toEqual([]);
    });

    it("without hostNetns takes PID 1's ns/net, or refuses naming it when it cannot be stat'ed", async () => {
      let pid1: string | undefined;
      try {
        pid1 = `${statSync('/proc/1/ns/net').ino}`;
      } catch {
        pid1 = undefined;
      }
      const outcome = await findPodNetns({ pods: [{ uid: uidB, ips: ['10.45.0.2'] }] }).then(
        (r) => r,
        (e: unknown) => e,
      );
      if (pid1 === undefined) {
        // Sandboxes (and a procfs with hidepid) hide PID 1: then the scan cannot tell a pod's netns from the host's.
        expect(outcome).toBeInstanceOf(PodnetSystemError);
        expect(outcome).toMatchObject({ syscall: 'stat', path: '/proc/1/ns/net' });
      } else {
        using result = outcome as Awaited<ReturnType<typeof findPodNetns>>;
        // Pod B's one process is in B's netns, neither the host's nor shared with another pod asked for.
        expect(result.found.get(uidB)?.pid).toBe(pids.b);
      }
    });
  },
  cgroupGap,
);
