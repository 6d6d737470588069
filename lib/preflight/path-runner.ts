/**
 * PathRunner: the iptables programs looked up on a PATH the caller names (an agent image may install them
 * elsewhere than the standard folders), run as NetnsRunner runs them. The spawn layer itself never searches a
 * caller's PATH, so the lookup happens here and the program is started by its absolute path.
 */
import { accessSync, constants, statSync } from 'node:fs';

import { PodnetSystemError } from '../errors.js';
import { type IptablesRunResult, type IptablesRunner, NetnsRunner } from '../iptables/runner.js';
import type { Netns } from '../netns.js';

/** findProgram returns the first executable regular file named name in dirs, or undefined. */
export function findProgram(name: string, dirs: readonly string[]): string | undefined {
  for (const dir of dirs) {
    const candidate = `${dir.endsWith('/') ? dir.slice(0, -1) : dir}/${name}`;
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // Not here: the next folder.
    }
  }
  return undefined;
}

/**
 * PathRunner runs iptables programs found on its PATH inside a namespace. It is deliberately not a NetnsRunner:
 * the process-wide version cache of real runners would answer for programs of another PATH.
 */
export class PathRunner implements IptablesRunner {
  readonly #inner: NetnsRunner;
  readonly #dirs: string[];
  readonly #path: string;

  /** The constructor takes the namespace, the colon-separated PATH and each run's deadline. */
  constructor(netns: Netns, path: string, timeoutMs: number) {
    this.#inner = new NetnsRunner(netns, { timeoutMs });
    this.#path = path;
    this.#dirs = path.split(':');
  }

  /**
   * run runs argv with its program looked up on the PATH. Rejects with PodnetSystemError `ENOENT` (syscall
   * `execve`, the program as `path`) when no folder has it, otherwise as NetnsRunner.run does.
   */
  async run(argv: readonly string[], stdin?: string): Promise<IptablesRunResult> {
    const name = argv[0] ?? '';
    const program = name.includes('/') ? name : findProgram(name, this.#dirs);
    if (program === undefined) {
      throw new PodnetSystemError(`program '${name}' is not on the path '${this.#path}'`, 'ENOENT', -2, { syscall: 'execve', path: name });
    }
    return this.#inner.run([program, ...argv.slice(1)], stdin);
  }
}
