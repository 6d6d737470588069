// Running contender programs with argv (never a shell), as a Node program would with child_process.
import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';

/**
 * run spawns argv, writes input (string/Buffer) to stdin, resolves { code, stdout, stderr }; rejects when the
 * program exits non-zero (unless allowFail). devNull: stdout goes to /dev/null (not read by this process).
 */
export function run(argv, { input, devNull = false, allowFail = false } = {}) {
  return new Promise((resolve, reject) => {
    const nullFd = devNull ? openSync('/dev/null', 'w') : undefined;
    const child = spawn(argv[0], argv.slice(1), { stdio: [input === undefined ? 'ignore' : 'pipe', devNull ? nullFd : 'pipe', 'pipe'] });
    if (nullFd !== undefined) closeSync(nullFd);
    const out = [];
    const err = [];
    child.stdout?.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const r = { code, signal, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
      if ((code !== 0 || signal) && !allowFail) reject(new Error(`${argv.join(' ')} exited ${code ?? signal}: ${r.stderr.trim()}`));
      else resolve(r);
    });
    if (input !== undefined) {
      child.stdin.on('error', () => {});
      child.stdin.end(input);
    }
  });
}
