// A fabricated procfs for the kubelet uid detection: a temporary folder with one <pid>/ per process holding the
// three files detectKubeletUid reads (comm, cmdline, status) as the kernel writes them, plus non-pid entries, so a
// test never depends on what runs on the host. Removed on dispose.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** FakeProc is one process of a fabricated procfs; `missing` leaves out files (a process that exited mid-read). */
export interface FakeProc {
  pid: number;
  comm: string;
  cmdline: readonly string[];
  uid: number;
  missing?: readonly ('comm' | 'cmdline' | 'status')[];
}

/** FakeProcRoot is a fabricated procfs folder; add() puts more processes (or links to real ones) in. */
export interface FakeProcRoot extends Disposable {
  readonly path: string;
  add(...procs: FakeProc[]): void;
  /** link makes <pid> a symlink to the real /proc/<pid>, so the kernel's own files are read for just that process. */
  link(pid: number): void;
}

export function fakeProcRoot(procs: readonly FakeProc[] = []): FakeProcRoot {
  const path = mkdtempSync(join(tmpdir(), 'podnet-proc-'));
  // What a real /proc also has besides the pids.
  mkdirSync(join(path, 'sys'));
  writeFileSync(join(path, 'uptime'), '1.00 1.00\n');
  const root: FakeProcRoot = {
    path,
    add(...more) {
      for (const p of more) {
        const dir = join(path, String(p.pid));
        mkdirSync(dir);
        const skip = new Set(p.missing ?? []);
        if (!skip.has('comm')) writeFileSync(join(dir, 'comm'), `${p.comm.slice(0, 15)}\n`);
        if (!skip.has('cmdline')) writeFileSync(join(dir, 'cmdline'), p.cmdline.map((a) => `${a}\0`).join(''));
        if (!skip.has('status')) {
          writeFileSync(join(dir, 'status'), `Name:\t${p.comm}\nState:\tS (sleeping)\nPid:\t${p.pid}\nUid:\t${p.uid}\t${p.uid}\t${p.uid}\t${p.uid}\n`);
        }
      }
    },
    link(pid) {
      symlinkSync(`/proc/${pid}`, join(path, String(pid)));
    },
    [Symbol.dispose]() {
      rmSync(path, { recursive: true, force: true });
    },
  };
  root.add(...procs);
  return root;
}
