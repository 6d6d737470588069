// The kubelet's uid as the host SNAT rule needs it. On fabricated procfs trees (never the host's /proc, which may run
// a kubelet of its own): the process hosting the kubelet is told as the reference tells it (comm 'kubelet' or
// 'kubelite' with 'kubelet' in an argument, comm 'k3s' running `server` or `agent`) and gives its real uid; none,
// several with different uids, or an unreadable folder is a KubeletUidError naming the option to set. Then the same
// on the kernel's own files: real processes under those names, linked into a private folder.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import { KubeletUidError, detectKubeletUid } from '../../lib/agent/nft-kubelet.js';
import { CLI_ENV } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { fakeProcRoot, type FakeProc } from './fake-proc.js';

function refusal(fn: () => unknown): KubeletUidError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(KubeletUidError);
    return err as KubeletUidError;
  }
  throw new Error('expected a KubeletUidError');
}

const sshd: FakeProc = { pid: 50, comm: 'sshd', cmdline: ['/usr/sbin/sshd', '-D'], uid: 0 };
const bash: FakeProc = { pid: 75, comm: 'bash', cmdline: ['/bin/bash'], uid: 1000 };
const kubelet = (pid: number, uid: number): FakeProc => ({
  pid,
  comm: 'kubelet',
  cmdline: ['/usr/bin/kubelet', '--config=/var/lib/kubelet/config.yaml'],
  uid,
});

describe('detectKubeletUid on a fabricated procfs', () => {
  const found: { name: string; procs: FakeProc[]; uid: number }[] = [
    { name: 'kubelet', procs: [kubelet(100, 1001)], uid: 1001 },
    {
      name: 'MicroK8s kubelite',
      procs: [
        {
          pid: 100,
          comm: 'kubelite',
          cmdline: ['/snap/microk8s/7394/kubelite', '--scheduler-args-file=/var/snap/microk8s/7394/args/kube-scheduler', '--kubelet-args-file=/var/snap/microk8s/7394/args/kubelet'],
          uid: 1002,
        },
      ],
      uid: 1002,
    },
    { name: 'k3s server', procs: [{ pid: 100, comm: 'k3s', cmdline: ['k3s', 'server'], uid: 1003 }], uid: 1003 },
    { name: 'k3s agent with flags', procs: [{ pid: 100, comm: 'k3s', cmdline: ['/usr/local/bin/k3s', 'agent', '--server', 'https://10.0.0.1:6443'], uid: 0 }], uid: 0 },
    // The title k3s gives itself: one argument, padded with NULs.
    { name: 'k3s server, as its process title', procs: [{ pid: 100, comm: 'k3s', cmdline: ['/usr/local/bin/k3s server', '', ''], uid: 1005 }], uid: 1005 },
    { name: 'a kubelet among other processes', procs: [sshd, bash, kubelet(100, 1004)], uid: 1004 },
    { name: 'several kubelet processes of one uid', procs: [kubelet(100, 0), kubelet(101, 0), { pid: 102, comm: 'k3s', cmdline: ['k3s', 'server'], uid: 0 }], uid: 0 },
    {
      name: 'k3s CLI runs of other users beside k3s server (same comm, not a kubelet)',
      procs: [
        { pid: 100, comm: 'k3s', cmdline: ['/usr/local/bin/k3s server'], uid: 0 },
        { pid: 200, comm: 'k3s', cmdline: ['k3s', 'kubectl', 'get', 'pods'], uid: 1000 },
        { pid: 201, comm: 'k3s', cmdline: ['k3s', 'ctr', 'images', 'ls'], uid: 1001 },
      ],
      uid: 0,
    },
    {
      name: "processes named so but not the kubelet (no 'kubelet' in argv, another comm), or gone mid-read",
      procs: [
        kubelet(100, 1006),
        { pid: 200, comm: 'kubelet', cmdline: ['/usr/bin/python3', 'monitor.py'], uid: 1000 },
        { pid: 201, comm: 'kubelite', cmdline: ['/opt/kubelite'], uid: 1000 },
        { pid: 202, comm: 'kubelet-wrapper', cmdline: ['/usr/bin/kubelet-wrapper'], uid: 1000 },
        { pid: 203, comm: 'kubelet', cmdline: ['/usr/bin/kubelet'], uid: 1000, missing: ['status'] },
        { pid: 204, comm: 'kubelet', cmdline: [], uid: 1000, missing: ['cmdline', 'status'] },
        { pid: 205, comm: 'kubelet', cmdline: ['/usr/bin/kubelet'], uid: 1000, missing: ['comm'] },
      ],
      uid: 1006,
    },
  ];
  for (const { name, procs, uid } of found) {
    it(`finds ${name}`, () => {
      using root = fakeProcRoot(procs);
      expect(detectKubeletUid(root.path)).toBe(uid);
    });
  }

  const refused: { name: string; procs: FakeProc[]; uids: number[] }[] = [
    { name: 'no process hosts the kubelet', procs: [sshd, bash], uids: [] },
    { name: 'only a k3s that runs no kubelet', procs: [{ pid: 100, comm: 'k3s', cmdline: ['k3s', 'kubectl', 'version'], uid: 0 }], uids: [] },
    { name: 'an empty procfs', procs: [], uids: [] },
    {
      name: 'kubelets of different uids',
      procs: [kubelet(100, 1000), { pid: 101, comm: 'k3s', cmdline: ['k3s', 'agent'], uid: 0 }],
      uids: [0, 1000],
    },
  ];
  for (const { name, procs, uids } of refused) {
    it(`fails naming the kubeletUid option when ${name}`, () => {
      using root = fakeProcRoot(procs);
      const err = refusal(() => detectKubeletUid(root.path));
      expect(err).toMatchObject({ code: 'ERR_KUBELET_UID', option: 'kubeletUid', uids, procRoot: root.path });
      expect(err.cause).toBeUndefined();
      expect(err.message).toContain("set the 'kubeletUid' option");
    });
  }

  it('fails, keeping the cause, for a procfs that cannot be read; refuses a procRoot that is not an absolute path', () => {
    const err = refusal(() => detectKubeletUid('/nonexistent-proc'));
    expect(err).toMatchObject({ code: 'ERR_KUBELET_UID', procRoot: '/nonexistent-proc', uids: [] });
    expect(err.cause).toMatchObject({ code: 'ENOENT' });
    const bad: [unknown, string][] = [
      ['', 'ERR_INVALID_ARG_VALUE'],
      ['proc', 'ERR_INVALID_ARG_VALUE'],
      ['host/proc', 'ERR_INVALID_ARG_VALUE'],
      [42, 'ERR_INVALID_ARG_TYPE'],
    ];
    for (const [procRoot, code] of bad) {
      expect(() => detectKubeletUid(procRoot as string)).toThrow(expect.objectContaining({ code, argument: 'procRoot' }));
    }
  });
});

const started: ChildProcess[] = [];
let folder: string | undefined;

/** Starts a copy of sleep under name (optionally as another uid, with another argv[0]) and resolves its pid. */
async function program(name: string, options: { uid?: number; argv0?: string } = {}): Promise<number> {
  if (!folder) {
    folder = mkdtempSync(join(tmpdir(), 'podnet-kubelet-'));
    chmodSync(folder, 0o755);
  }
  const path = join(folder, name);
  if (!existsSync(path)) {
    // Once per name: a copy over a running one would fail with ETXTBSY.
    copyFileSync('/bin/sleep', path);
    chmodSync(path, 0o755);
  }
  const child = spawn(path, ['60'], { stdio: 'ignore', env: CLI_ENV, ...options });
  started.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  return child.pid!;
}

afterEach(async () => {
  for (const child of started.splice(0)) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
  if (folder) rmSync(folder, { recursive: true, force: true });
  folder = undefined;
});

describe("detectKubeletUid on the kernel's procfs files", () => {
  it('finds real processes by the comm and command line the kernel reports, and returns their real uid', async () => {
    using root = fakeProcRoot([sshd]);
    // A copy of sleep named kubelet: its argv[0], a path ending in 'kubelet', names the kubelet.
    root.link(await program('kubelet'));
    expect(detectKubeletUid(root.path)).toBe(process.getuid!());
    using k3s = fakeProcRoot();
    // k3s without its subcommand is no kubelet; 'k3s server' as argv[0] is the title k3s sets.
    k3s.link(await program('k3s'));
    expect(refusal(() => detectKubeletUid(k3s.path))).toMatchObject({ uids: [] });
    k3s.link(await program('k3s', { argv0: 'k3s server' }));
    expect(detectKubeletUid(k3s.path)).toBe(process.getuid!());
  });
});

describePrivileged('detectKubeletUid with kubelets of other uids', () => {
  it('returns the uid a kubelet runs as, and fails when kubelets run as different uids', async () => {
    using root = fakeProcRoot();
    root.link(await program('kubelite', { uid: 4242, argv0: '/snap/microk8s/1/kubelite --kubelet-args-file=x' }));
    expect(detectKubeletUid(root.path)).toBe(4242);
    root.link(await program('kubelet', { uid: 4343 }));
    expect(refusal(() => detectKubeletUid(root.path))).toMatchObject({ code: 'ERR_KUBELET_UID', uids: [4242, 4343] });
  });
});
