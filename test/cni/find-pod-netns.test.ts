// findPodNetns on fabricated procfs trees: each process's cgroup, stat and ns/net are written by the test, ns/net a
// symlink to a real namespace made by TestNetns (a veth link there holding the pod's IP), so the pairing logic runs
// on laid-out cases while the namespaces opened and the addresses read are the kernel's. Cases: pods found (the
// oldest process's handle), the fabricated host netns skipped, a younger process in another pod's netns not
// deciding, a netns without the pod's IPs rejected, several netns claiming one pod reported, one netns claiming two
// pods reported, broken and vanishing entries, each netns opened once, and no fd left open on any path. Bad options
// are refused before anything is read. The handles returned are close-on-exec.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { InvalidArgumentError, PodnetSystemError } from '../../lib/errors.js';
import { findPodNetns, type FindPodNetnsOptions, type PodNetnsScan } from '../../lib/cni/find-pod-netns.js';
import { isCloexec, openFds } from '../helpers/fds.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { FakeProcfs, SYSTEM_CGROUP, podCgroup } from './helpers/fake-procfs.js';

const A = '11111111-2222-3333-4444-555555555555';
const B = '66666666-7777-8888-9999-aaaaaaaaaaaa';
const C = 'bbbbbbbb-cccc-dddd-eeee-ffffffffffff';
const STATIC = '0123456789abcdef0123456789abcdef';

async function refusal(options: unknown): Promise<InvalidArgumentError> {
  try {
    await findPodNetns(options as FindPodNetnsOptions);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidArgumentError);
    return err as InvalidArgumentError;
  }
  throw new Error('expected an InvalidArgumentError');
}

describe('findPodNetns refuses bad options before reading anything', () => {
  // procRoot names a folder that does not exist: a refusal that reached the filesystem would be ENOENT instead.
  const procRoot = '/nonexistent-podnet-procfs';
  const pod = { uid: A, ips: ['10.0.0.1'] };
  const holey: unknown[] = [pod];
  holey.length = 2;
  const holeyIps: unknown[] = [];
  holeyIps[1] = '10.0.0.1';
  const cases: { name: string; options: unknown; argument: string; code: string }[] = [
    { name: 'no options', options: undefined, argument: 'options', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'options not an object', options: 'x', argument: 'options', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'a relative procRoot', options: { procRoot: 'proc', pods: [pod] }, argument: 'options.procRoot', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'procRoot not a string', options: { procRoot: 5, pods: [pod] }, argument: 'options.procRoot', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'procRoot empty', options: { procRoot: '', pods: [pod] }, argument: 'options.procRoot', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'procRoot with NUL', options: { procRoot: '/pr\0c', pods: [pod] }, argument: 'options.procRoot', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'pods missing', options: { procRoot }, argument: 'options.pods', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'pods not an array', options: { procRoot, pods: { uid: A } }, argument: 'options.pods', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'a hole in pods', options: { procRoot, pods: holey }, argument: 'options.pods[1]', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a pod that is null', options: { procRoot, pods: [null] }, argument: 'options.pods[0]', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'a pod without uid', options: { procRoot, pods: [{ ips: ['10.0.0.1'] }] }, argument: 'options.pods[0].uid', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'a uid that is a number', options: { procRoot, pods: [{ uid: 7, ips: ['10.0.0.1'] }] }, argument: 'options.pods[0].uid', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'a uid that is no UID', options: { procRoot, pods: [pod, { uid: 'web-0', ips: ['10.0.0.1'] }] }, argument: 'options.pods[1].uid', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a uid with underscores', options: { procRoot, pods: [{ uid: A.replaceAll('-', '_'), ips: ['10.0.0.1'] }] }, argument: 'options.pods[0].uid', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a uid given twice (case aside)', options: { procRoot, pods: [pod, { uid: A.toUpperCase(), ips: ['10.0.0.2'] }] }, argument: 'options.pods[1].uid', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'ips missing', options: { procRoot, pods: [{ uid: A }] }, argument: 'options.pods[0].ips', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'no ips', options: { procRoot, pods: [{ uid: A, ips: [] }] }, argument: 'options.pods[0].ips', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a hole in ips', options: { procRoot, pods: [{ uid: A, ips: holeyIps }] }, argument: 'options.pods[0].ips[0]', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'an ip that is no address', options: { procRoot, pods: [{ uid: A, ips: ['10.0.0.1', '10.0.0.256'] }] }, argument: 'options.pods[0].ips[1]', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'an ip with a prefix', options: { procRoot, pods: [{ uid: A, ips: ['10.0.0.1/24'] }] }, argument: 'options.pods[0].ips[0]', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'an ip that is a number', options: { procRoot, pods: [{ uid: A, ips: [167772161] }] }, argument: 'options.pods[0].ips[0]', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'hostNetns a number', options: { procRoot, pods: [pod], hostNetns: 3 }, argument: 'options.hostNetns', code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'hostNetns relative', options: { procRoot, pods: [pod], hostNetns: 'ns/net' }, argument: 'options.hostNetns', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'timeoutMs zero', options: { procRoot, pods: [pod], timeoutMs: 0 }, argument: 'options.timeoutMs', code: 'ERR_INVALID_ARG_VALUE' },
  ];
  for (const { name, options, argument, code } of cases) {
    it(`refuses ${name}`, async () => {
      const err = await refusal(options);
      expect(err.argument).toBe(argument);
      expect(err.code).toBe(code);
    });
  }

  it('reads each option once: a getter cannot answer one value to the check and another to the scan', async () => {
    const reads = { procRoot: 0, uid: 0, ips: 0 };
    const options = {
      get procRoot() {
        reads.procRoot++;
        return reads.procRoot === 1 ? procRoot : 'relative';
      },
      pods: [
        {
          get uid() {
            reads.uid++;
            return reads.uid === 1 ? A : 'not-a-uid';
          },
          get ips() {
            reads.ips++;
            return reads.ips === 1 ? ['10.0.0.1'] : [];
          },
        },
      ],
    };
    const err = await findPodNetns(options as unknown as FindPodNetnsOptions).catch((e: unknown) => e);
    // Past the checks, the scan reads the procfs it was given and finds no host netns there.
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect((err as PodnetSystemError).path).toBe(`${procRoot}/1/ns/net`);
    expect(reads).toEqual({ procRoot: 1, uid: 1, ips: 1 });
  });

  it('accepts an empty pod list and a static pod UID (validation only: the procfs is then missing)', async () => {
    for (const pods of [[], [{ uid: STATIC, ips: ['fd00::1'] }]]) {
      const err = await findPodNetns({ procRoot, pods }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PodnetSystemError);
      expect((err as PodnetSystemError).code).toBe('ENOENT');
    }
  });
});

describe('findPodNetns fails clearly when it cannot tell the host from a pod', () => {
  it("rejects when PID 1's ns/net cannot be stat'ed, naming the path and the option", async () => {
    using procfs = new FakeProcfs();
    procfs.add({ pid: 1, cgroup: SYSTEM_CGROUP, startTime: 1 }); // no ns/net
    const err = (await findPodNetns({ procRoot: procfs.root, pods: [] }).catch((e: unknown) => e)) as PodnetSystemError;
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ENOENT', syscall: 'stat', path: join(procfs.root, '1', 'ns', 'net') });
    expect(err.message).toContain('options.hostNetns');
  });

  it('rejects when procRoot cannot be listed', async () => {
    const err = (await findPodNetns({ procRoot: '/nonexistent-podnet-procfs', pods: [], hostNetns: '/proc/self/ns/net' }).catch(
      (e: unknown) => e,
    )) as PodnetSystemError;
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ENOENT', syscall: 'scandir', path: '/nonexistent-podnet-procfs' });
  });
});

describePrivileged('findPodNetns on fabricated procfs trees', () => {
  let host: TestNetns;
  let nsA: TestNetns;
  let nsB: TestNetns;
  let nsAB: TestNetns;
  let bare: TestNetns;
  const made: TestNetns[] = [];
  const withIps = (tag: string, ...cidrs: string[]): TestNetns => {
    const ns = new TestNetns(tag);
    made.push(ns);
    // A veth pair as a pod's interface (this kernel has no dummy driver); the peer stays in the namespace.
    if (cidrs.length > 0) ns.ip('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'peer0');
    for (const cidr of cidrs) ns.ip('addr', 'add', cidr, 'dev', 'eth0', ...(cidr.includes(':') ? ['nodad'] : []));
    return ns;
  };

  beforeAll(() => {
    host = withIps('host', '192.168.50.10/24');
    nsA = withIps('a', '10.44.0.1/24', 'fd00:44::1/64');
    nsB = withIps('b', '10.44.0.2/24');
    nsAB = withIps('ab', '10.44.0.1/24', '10.44.0.2/24');
    bare = withIps('bare');
  });
  afterAll(() => {
    for (const ns of made) ns.delete();
  });

  /** A procfs with a host PID 1 and whatever processes the case adds. */
  const procfsWithHost = (): FakeProcfs =>
    new FakeProcfs().add({ pid: 1, cgroup: '0::/init.scope\n', startTime: 1, netns: host.path }).file('meminfo', 'MemTotal: 1 kB\n');

  /** Runs a scan, checking it opened nothing it did not return and that close() releases what it did. */
  async function scan(procfs: FakeProcfs, pods: { uid: string; ips: string[] }[]): Promise<PodNetnsScan> {
    const before = openFds();
    const result = await findPodNetns({ procRoot: procfs.root, pods });
    // Rtnetlink.close releases its socket once its queue drains: one turn of the loop.
    await new Promise((resolve) => setImmediate(resolve));
    const added = [...openFds().keys()].filter((fd) => !before.has(fd)).sort((x, y) => x - y);
    expect(added).toEqual([...result.found.values()].map((f) => f.netns.fd).sort((x, y) => x - y));
    for (const fd of added) expect(isCloexec(fd)).toBe(true);
    return result;
  }
  function expectNoNewFds(before: Map<number, string>): void {
    expect([...openFds().keys()].filter((fd) => !before.has(fd))).toEqual([]);
  }

  it("finds each pod's netns through its oldest process and reports a pod with no process", async () => {
    using procfs = procfsWithHost();
    procfs.add(
      { pid: 300, cgroup: podCgroup(A, { containerId: 'a'.repeat(64) }), startTime: 5000, netns: nsA.path },
      { pid: 200, cgroup: podCgroup(A, { containerId: 'b'.repeat(64), v2: true }), startTime: 4000, netns: nsA.path },
      { pid: 410, cgroup: podCgroup(B, { driver: 'cgroupfs', qos: 'guaranteed' }), startTime: 4100, netns: nsB.path },
      { pid: 50, cgroup: SYSTEM_CGROUP, startTime: 10, netns: host.path },
      // A pod not asked for: its netns is never opened.
      { pid: 500, cgroup: podCgroup(STATIC, { driver: 'cgroupfs' }), startTime: 100, netns: nsAB.path },
    );
    const before = openFds();
    {
      using result = await scan(procfs, [
        { uid: A, ips: ['10.44.0.1'] },
        { uid: B.toUpperCase(), ips: ['fd00::9', '10.44.0.2'] },
        { uid: C, ips: ['10.44.0.3'] },
      ]);
      const a = result.found.get(A)!;
      expect(a).toMatchObject({ uid: A, pid: 200, ip: '10.44.0.1' });
      using expectedA = nsA.open();
      expect(a.netns.equals(expectedA)).toBe(true);
      expect(a.candidates).toHaveLength(1);
      expect(a.candidates[0]).toMatchObject({ inode: expectedA.inode, netnsId: expectedA.id, pid: 200, startTime: 4000n, processes: 2, oldest: true });
      const b = result.found.get(B)!;
      expect(b).toMatchObject({ uid: B, pid: 410, ip: '10.44.0.2' });
      using expectedB = nsB.open();
      expect(b.netns.equals(expectedB)).toBe(true);
      expect([...result.missing.values()]).toEqual([
        { uid: C, reason: 'no-process', message: expect.stringContaining(C), candidates: [] },
      ]);
      expect(result.stats).toEqual({ processes: 6, podProcesses: 3, vanished: 0, unreadable: 0, netnsChecked: 2 });
    }
    expectNoNewFds(before);
  });

  it('pairs by an IPv6 address written in any spelling', async () => {
    using procfs = procfsWithHost();
    procfs.add({ pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: nsA.path });
    using result = await scan(procfs, [{ uid: A, ips: ['FD00:0044:0:0:0:0:0:0001'] }]);
    expect(result.found.get(A)?.ip).toBe('fd00:44::1');
  });

  it("skips the host's netns: an older process of the pod there neither decides nor is opened", async () => {
    using procfs = procfsWithHost();
    procfs.add(
      // CRI-O's conmon or a process moved into the pod's cgroup: older than the pod's own, in the host's netns.
      { pid: 90, cgroup: podCgroup(A), startTime: 100, netns: host.path },
      { pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: nsA.path },
      // A hostNetwork pod: every process in the host's netns, whose interface holds the IP asked for.
      { pid: 300, cgroup: podCgroup(B), startTime: 200, netns: host.path },
    );
    using result = await scan(procfs, [
      { uid: A, ips: ['10.44.0.1'] },
      { uid: B, ips: ['192.168.50.10'] },
    ]);
    expect(result.found.get(A)).toMatchObject({ pid: 200, ip: '10.44.0.1' });
    expect(result.found.get(A)!.candidates.map((c) => c.pid)).toEqual([200]);
    expect(result.missing.get(B)).toMatchObject({ reason: 'host-netns', candidates: [] });
    expect(result.stats.netnsChecked).toBe(1);
  });

  it("does not let a younger process of pod A that entered pod B's netns decide", async () => {
    using procfs = procfsWithHost();
    procfs.add(
      { pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: nsA.path },
      { pid: 210, cgroup: podCgroup(B), startTime: 4100, netns: nsB.path },
      { pid: 900, cgroup: podCgroup(A), startTime: 9000, netns: nsB.path }, // nsenter --net=<B's> later
    );
    using result = await scan(procfs, [
      { uid: A, ips: ['10.44.0.1'] },
      { uid: B, ips: ['10.44.0.2'] },
    ]);
    using expectedA = nsA.open();
    using expectedB = nsB.open();
    const a = result.found.get(A)!;
    expect(a.netns.equals(expectedA)).toBe(true);
    expect(a.candidates.map((c) => [c.pid, c.oldest, c.matchedIp])).toEqual([
      [200, true, '10.44.0.1'],
      [900, false, undefined],
    ]);
    expect(result.found.get(B)!.netns.equals(expectedB)).toBe(true);
    // Both pods had processes in B's netns: it was opened once.
    expect(result.stats.netnsChecked).toBe(2);
  });

  it("reports, not guesses, when only a younger process's netns holds the pod's IP", async () => {
    using procfs = procfsWithHost();
    procfs.add(
      { pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: bare.path },
      { pid: 900, cgroup: podCgroup(A), startTime: 9000, netns: nsA.path },
    );
    using result = await scan(procfs, [{ uid: A, ips: ['10.44.0.1'] }]);
    const miss = result.missing.get(A)!;
    expect(miss.reason).toBe('ambiguous');
    expect(miss.candidates.map((c) => [c.pid, c.oldest, c.matchedIp])).toEqual([
      [200, true, undefined],
      [900, false, '10.44.0.1'],
    ]);
    expect(result.found.size).toBe(0);
  });

  it("rejects a netns that holds none of the pod's IPs, listing what it holds", async () => {
    using procfs = procfsWithHost();
    procfs.add({ pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: nsB.path });
    using result = await scan(procfs, [{ uid: A, ips: ['10.44.0.1'] }]);
    const miss = result.missing.get(A)!;
    expect(miss.reason).toBe('ip-mismatch');
    expect(miss.candidates).toHaveLength(1);
    expect(miss.candidates[0]!.addresses).toContain('10.44.0.2');
    expect(miss.candidates[0]).toMatchObject({ pid: 200, matchedIp: undefined, error: undefined });
    expect(miss.message).toContain(`net:[${miss.candidates[0]!.inode}]`);
  });

  it('reports a pod whose IPs two of its netns hold', async () => {
    using procfs = procfsWithHost();
    procfs.add(
      { pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: nsA.path },
      { pid: 201, cgroup: podCgroup(A), startTime: 4000, netns: nsAB.path },
    );
    using result = await scan(procfs, [{ uid: A, ips: ['10.44.0.1'] }]);
    expect(result.missing.get(A)).toMatchObject({ reason: 'ambiguous' });
    expect(result.missing.get(A)!.candidates.map((c) => c.matchedIp)).toEqual(['10.44.0.1', '10.44.0.1']);
  });

  it('reports both pods when one netns holds the IPs of each', async () => {
    using procfs = procfsWithHost();
    procfs.add(
      { pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: nsAB.path },
      { pid: 300, cgroup: podCgroup(B), startTime: 4000, netns: nsAB.path },
    );
    using result = await scan(procfs, [
      { uid: A, ips: ['10.44.0.1'] },
      { uid: B, ips: ['10.44.0.2'] },
    ]);
    expect(result.found.size).toBe(0);
    expect(result.missing.get(A)).toMatchObject({ reason: 'shared-netns', message: expect.stringContaining(B) });
    expect(result.missing.get(B)).toMatchObject({ reason: 'shared-netns', message: expect.stringContaining(A) });
    expect(result.stats.netnsChecked).toBe(1);
  });

  it('counts vanished and unreadable entries, and reports a netns that cannot be opened', async () => {
    using procfs = procfsWithHost();
    const notNetns = join(procfs.root, '..', 'not-a-netns');
    writeFileSync(notNetns, 'x');
    procfs.add(
      { pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: nsA.path },
      { pid: 201 }, // ended before its cgroup was read
      { pid: 202, cgroup: podCgroup(A), startTime: 4100 }, // ended before its ns/net was read
      { pid: 203, cgroup: podCgroup(A), startTime: 4200, netns: '/run/netns/podnet-t-gone' }, // dangling
      { pid: 204, cgroup: podCgroup(A), netns: nsA.path }, // ended before its stat was read
      { pid: 205, cgroup: podCgroup(A), stat: 'garbage\n', netns: nsA.path }, // stat that is not one
      { pid: 300, cgroup: podCgroup(B), startTime: 4000, netns: notNetns }, // ns/net that is no namespace
      { pid: 400, cgroup: 'garbage', startTime: 1, netns: nsA.path },
    );
    using result = await scan(procfs, [
      { uid: A, ips: ['10.44.0.1'] },
      { uid: B, ips: ['10.44.0.2'] },
    ]);
    expect(result.found.get(A)).toMatchObject({ pid: 200 });
    const miss = result.missing.get(B)!;
    expect(miss.reason).toBe('unreadable');
    expect(miss.candidates[0]!.error).toMatchObject({ code: 'ERR_NOT_NETNS' });
    expect(result.stats).toEqual({ processes: 9, podProcesses: 6, vanished: 4, unreadable: 1, netnsChecked: 2 });
  });

  it('hands a taken handle to the caller: close() leaves it open', async () => {
    using procfs = procfsWithHost();
    procfs.add({ pid: 200, cgroup: podCgroup(A), startTime: 4000, netns: nsA.path });
    const result = await scan(procfs, [{ uid: A, ips: ['10.44.0.1'] }]);
    const taken = result.take(A.toUpperCase())!;
    expect(result.take(A)).toBeUndefined();
    result.close();
    expect(taken.closed).toBe(false);
    taken.close();
    expect(result.found.get(A)!.netns.closed).toBe(true);
  });
});
