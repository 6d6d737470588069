// How the example tests start an example: `node <file>` as a child process, from the package root so that the
// examples' imports of 'podnet' and 'podnet/testing' resolve by package self-reference to dist/.
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { CLI_ENV } from '../helpers/netns.js';

export const root = fileURLToPath(new URL('../../', import.meta.url));

/** exampleEnv is CLI_ENV (no sanitizer preload) without an addon override: the examples load the plain build. */
export function exampleEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...CLI_ENV, ...extra };
  delete env.PODNET_ADDON_PATH;
  return env;
}

function checkDist(): void {
  if (!existsSync(`${root}dist/index.js`)) throw new Error(`${root}dist/index.js is missing: the examples import the built package (npm run build:ts)`);
}

/** runExample runs node [...nodeArgs, file] to its end and resolves its exit code and output (it never rejects on exit code). */
export async function runExample(
  file: string,
  options: { nodeArgs?: string[]; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  checkDist();
  const args = [...(options.nodeArgs ?? []), file];
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, {
      cwd: root,
      env: exampleEnv(options.env),
      timeout: options.timeoutMs ?? 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== 'number' && e.stdout === undefined) throw err;
    return { code: typeof e.code === 'number' ? e.code : null, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** startExample starts node file ...args and leaves it running; the caller ends it. */
export function startExample(file: string, args: string[], env: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  checkDist();
  return spawn(process.execPath, [file, ...args], { cwd: root, env: exampleEnv(env), stdio: 'pipe' });
}
