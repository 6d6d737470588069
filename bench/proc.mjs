// Running contender programs with argv (never a shell).
//
// run() launches them the way podnet launches programs (runInNetns: vfork + execve), not with child_process. Node's
// child_process forks, and a fork write-protects the whole parent for copy-on-write: the podnet sample that ran
// next paid a page fault for every 4 KiB it wrote (tens of ms for a 100k-entry batch in this VM), a cost of the
// benchmark's interleaving, not of podnet. Launching faster only makes the contenders look better.
// runForked() is child_process, kept for scenario 6, which compares launchers as a Node program would use them.
import { spawn } from 'node:child_process';

import { runInNetns } from '../dist/index.js';

/** run launches argv in this process's namespace, writes input (string/Buffer) to stdin, resolves { code, stdout, stderr }; rejects on a non-zero exit unless allowFail. */
export async function run(argv, { input, allowFail = false } = {}) {
  const r = await runInNetns(undefined, argv, { stdin: input, timeoutMs: 600_000 });
  const out = { code: r.exitCode, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
  if ((r.exitCode !== 0 || r.signal) && !allowFail) throw new Error(`${argv.join(' ')} exited ${r.exitCode ?? r.signal}: ${r.stderr.trim()}`);
  return out;
}

/** runForked is run() through child_process.spawn (fork + exec), as a Node program launches programs. */
export function runForked(argv, { allowFail = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const r = { code, signal, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
      if ((code !== 0 || signal) && !allowFail) reject(new Error(`${argv.join(' ')} exited ${code ?? signal}: ${r.stderr.trim()}`));
      else resolve(r);
    });
  });
}
