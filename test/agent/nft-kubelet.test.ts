// The kubelet's uid as the host SNAT rule needs it, read from the real /proc: processes named 'kubelet' (a copy of
// sleep under that name) are found by their comm and give their real uid; none, or several with different uids, is
// a KubeletUidError naming the option to set.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

import { KubeletUidError, detectKubeletUid } from '../../lib/agent/nft-kubelet.js';
import { CLI_ENV } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

const started: ChildProcess[] = [];
let folder: string | undefined;

/** Starts a process whose comm is 'kubelet' (optionally as another uid) and waits until /proc shows it. */
async function kubelet(uid?: number): Promise<ChildProcess> {
  if (!folder) {
    folder = mkdtempSync(join(tmpdir(), 'podnet-kubelet-'));
    chmodSync(folder, 0o755);
    copyFileSync('/bin/sleep', join(folder, 'kubelet'));
    chmodSync(join(folder, 'kubelet'), 0o755);
  }
  const child = spawn(join(folder, 'kubelet'), ['60'], { stdio: 'ignore', env: CLI_ENV, ...(uid === undefined ? {} : { uid }) });
  started.push(child);
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  return child;
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

function refusal(fn: () => unknown): KubeletUidError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(KubeletUidError);
    return err as KubeletUidError;
  }
  throw new Error('expected a KubeletUidError');
}

describe('detectKubeletUid on /proc', () => {
  it('fails naming the kubeletUid option when no kubelet runs', () => {
    const err = refusal(() => detectKubeletUid());
    expect(err).toMatchObject({ code: 'ERR_KUBELET_UID', option: 'kubeletUid', uids: [], procRoot: '/proc' });
    expect(err.message).toContain("set the 'kubeletUid' option");
  });

  it("finds a process named 'kubelet' by its comm and returns its real uid", async () => {
    await kubelet();
    expect(detectKubeletUid()).toBe(process.getuid!());
    await kubelet();
    expect(detectKubeletUid()).toBe(process.getuid!());
  });

  it('fails for a procfs that cannot be read, and refuses a bad path argument', () => {
    expect(refusal(() => detectKubeletUid('/nonexistent-proc'))).toMatchObject({ code: 'ERR_KUBELET_UID', procRoot: '/nonexistent-proc', uids: [] });
    expect(() => detectKubeletUid('')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE', argument: 'procRoot' }));
  });
});

describePrivileged('detectKubeletUid with kubelets of other uids', () => {
  it('returns the uid a kubelet runs as, and fails when kubelets run as different uids', async () => {
    await kubelet(4242);
    expect(detectKubeletUid()).toBe(4242);
    await kubelet(4343);
    expect(refusal(() => detectKubeletUid())).toMatchObject({ code: 'ERR_KUBELET_UID', uids: [4242, 4343] });
  });
});
