// Runs a compiled README block with node, as a user runs their program: on this machine, or (a root block) inside a
// network namespace, where "the current namespace" the block's defaults use is a throwaway one.
import { spawn } from 'node:child_process';

import { runInNetns } from '../../lib/index.js';

/** How a block's program ended. */
export interface NodeRun {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

const TIMEOUT_MS = 45_000;

/** runNode runs `node file` with this process's environment (the sanitizer run's preload included). */
export function runNode(file: string): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { env: process.env, stdio: ['ignore', 'pipe', 'pipe'], timeout: TIMEOUT_MS });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (exitCode, signal) => resolve({ exitCode, signal, stdout, stderr }));
  });
}

/**
 * runNodeIn runs `node file` inside the namespace at netnsPath. runInNetns gives a program only the variables it is
 * passed, so this process's are passed on (PATH aside: runInNetns sets its own).
 */
export async function runNodeIn(netnsPath: string, file: string): Promise<NodeRun> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => e[1] !== undefined && e[0] !== 'PATH' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(e[0]),
    ),
  );
  const r = await runInNetns(netnsPath, [process.execPath, file], { env, timeoutMs: TIMEOUT_MS });
  return { exitCode: r.exitCode, signal: r.signal ?? null, stdout: r.stdout, stderr: r.stderr };
}
