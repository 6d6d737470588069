// A small CNI runtime for tests: it runs a conflist's plugin binaries the way libcni does (ADD in order with the
// previous result injected as prevResult, DEL in reverse, CHECK with the cached result, STATUS, GC with
// `cni.dev/valid-attachments`, VERSION), each one as a program started by the addon inside the test's "host"
// namespace (runInNetns: argv and env, no shell), so a bridge and its host-side veth ends land there and never in
// the machine's own namespace. It keeps no CNI cache: the caller holds the ADD result and hands it back.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import type { Netns } from '../../../lib/netns.js';
import { runInNetns, type RunResult } from '../../../lib/spawn.js';

/** PluginConf is one entry of a conflist's `plugins`: its `type` names the binary, the rest is the plugin's own. */
export interface PluginConf {
  type: string;
  [key: string]: unknown;
}

/** Conflist is a network configuration list as a runtime reads it from its config dir. */
export interface Conflist {
  cniVersion: string;
  name: string;
  disableCheck?: boolean;
  disableGC?: boolean;
  plugins: PluginConf[];
}

/** Attachment is one container's attachment to the network: what becomes CNI_CONTAINERID, CNI_NETNS, ... */
export interface Attachment {
  containerId: string;
  /** CNI_NETNS: the pod's namespace file ('' when the runtime has none, as on some DELs). */
  netns: string;
  ifName: string;
  /** CNI_ARGS pairs, in this order. */
  args: [string, string][];
}

/** CniErrorDoc is a plugin's error document (stdout of a failed run). */
export interface CniErrorDoc {
  cniVersion?: string;
  code: number;
  msg: string;
  details?: string;
}

/** PluginRun is one execution of one plugin binary. */
export interface PluginRun {
  /** The plugin's `type`. */
  type: string;
  command: string;
  /** The exact config bytes given on stdin. */
  stdin: string;
  exitCode: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (undefined when empty). */
  output: unknown;
}

/** PluginFailure is thrown by the chain operations when a plugin exits non-zero: its error document and its run. */
export class PluginFailure extends Error {
  readonly run: PluginRun;
  readonly error: CniErrorDoc;

  constructor(run: PluginRun) {
    const doc = (run.output ?? {}) as Partial<CniErrorDoc>;
    const error: CniErrorDoc = { cniVersion: doc.cniVersion, code: typeof doc.code === 'number' ? doc.code : -1, msg: String(doc.msg ?? ''), details: doc.details };
    super(`plugin '${run.type}' ${run.command} failed with code ${error.code}: ${error.msg} (exit ${run.exitCode}, stderr: ${run.stderr.trim()})`);
    this.name = 'PluginFailure';
    this.run = run;
    this.error = error;
  }
}

/** CniRuntimeOptions configure a CniRuntime. */
export interface CniRuntimeOptions {
  /** Where the plugins run (the test's host namespace). */
  hostNetns: Netns | string;
  /** CNI_PATH: the folders a plugin `type` is looked up in, in order (also passed to the plugins, for IPAM). */
  pluginDirs: string[];
  conflist: Conflist;
  /** Deadline of each plugin run in ms (default 30000). */
  timeoutMs?: number;
}

/** CniRuntime runs one conflist as a runtime (libcni) does. Every plugin run is recorded in `runs`. */
export class CniRuntime {
  readonly conflist: Conflist;
  readonly runs: PluginRun[] = [];
  readonly #host: Netns | string;
  readonly #dirs: string[];
  readonly #timeoutMs: number;

  constructor(options: CniRuntimeOptions) {
    this.conflist = options.conflist;
    this.#host = options.hostNetns;
    this.#dirs = options.pluginDirs;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** pluginPath finds the binary of a plugin type in the plugin dirs (as libcni's FindInPath); throws when absent. */
  pluginPath(type: string): string {
    for (const dir of this.#dirs) {
      const candidate = join(dir, type);
      if (existsSync(candidate)) return candidate;
    }
    throw new Error(`cni runtime: plugin '${type}' is in none of ${this.#dirs.join(', ')}`);
  }

  /**
   * pluginConfig is the config one plugin gets, built as libcni's buildOneConfig does: the plugin's own keys, with
   * the list's name and cniVersion, and the extra keys (prevResult, cni.dev/valid-attachments) injected.
   */
  pluginConfig(plugin: PluginConf, extra: Record<string, unknown> = {}, cniVersion = this.conflist.cniVersion): string {
    return JSON.stringify({ ...plugin, name: this.conflist.name, cniVersion, ...extra });
  }

  /** exec runs one plugin with command, the attachment's variables and stdin, and records the run. */
  async exec(type: string, command: string, attachment: Attachment | undefined, stdin: string): Promise<PluginRun> {
    const env: Record<string, string> = {
      CNI_COMMAND: command,
      CNI_CONTAINERID: attachment?.containerId ?? '',
      CNI_NETNS: attachment?.netns ?? '',
      CNI_IFNAME: attachment?.ifName ?? '',
      CNI_ARGS: (attachment?.args ?? []).map(([k, v]) => `${k}=${v}`).join(';'),
      CNI_PATH: this.#dirs.join(':'),
    };
    const r: RunResult = await runInNetns(this.#host, [this.pluginPath(type)], { env, stdin, timeoutMs: this.#timeoutMs });
    let output: unknown;
    if (r.stdout.trim() !== '') {
      try {
        output = JSON.parse(r.stdout);
      } catch {
        output = { code: -1, msg: `stdout is not JSON: ${r.stdout}` };
      }
    }
    const run: PluginRun = { type, command, stdin, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, output };
    this.runs.push(run);
    return run;
  }

  async #must(type: string, command: string, attachment: Attachment | undefined, stdin: string): Promise<PluginRun> {
    const run = await this.exec(type, command, attachment, stdin);
    if (run.exitCode !== 0) throw new PluginFailure(run);
    return run;
  }

  /**
   * add runs ADD through the chain in order, each plugin getting the previous one's result as prevResult, and
   * resolves the last result (what the runtime caches). Rejects with PluginFailure at the first plugin that fails;
   * a runtime then runs del() for the whole chain, without a cached result.
   */
  async add(attachment: Attachment): Promise<unknown> {
    let prev: unknown;
    for (const plugin of this.conflist.plugins) {
      const run = await this.#must(plugin.type, 'ADD', attachment, this.pluginConfig(plugin, prev === undefined ? {} : { prevResult: prev }));
      prev = run.output;
    }
    return prev;
  }

  /** del runs DEL through the chain in reverse, each plugin getting the cached result (when given) as prevResult. */
  async del(attachment: Attachment, cached?: unknown): Promise<void> {
    for (const plugin of [...this.conflist.plugins].reverse()) {
      await this.#must(plugin.type, 'DEL', attachment, this.pluginConfig(plugin, cached === undefined ? {} : { prevResult: cached }));
    }
  }

  /** check runs CHECK through the chain in order with the cached result (nothing when the list disables CHECK). */
  async check(attachment: Attachment, cached: unknown): Promise<void> {
    if (this.conflist.disableCheck) return;
    for (const plugin of this.conflist.plugins) {
      await this.#must(plugin.type, 'CHECK', attachment, this.pluginConfig(plugin, { prevResult: cached }));
    }
  }

  /**
   * status runs STATUS on every plugin (libcni stops at the first failure; this runs them all so a test sees each
   * answer) and resolves each run, in list order.
   */
  async status(): Promise<PluginRun[]> {
    const runs: PluginRun[] = [];
    for (const plugin of this.conflist.plugins) runs.push(await this.exec(plugin.type, 'STATUS', undefined, this.pluginConfig(plugin)));
    return runs;
  }

  /** gc runs GC on every plugin with `cni.dev/valid-attachments` (libcni joins the errors) and resolves each run. */
  async gc(valid: { containerID: string; ifname: string }[]): Promise<PluginRun[]> {
    if (this.conflist.disableGC) return [];
    const runs: PluginRun[] = [];
    for (const plugin of this.conflist.plugins) {
      runs.push(await this.exec(plugin.type, 'GC', undefined, this.pluginConfig(plugin, { 'cni.dev/valid-attachments': valid })));
    }
    return runs;
  }

  /** version asks one plugin type which versions it supports (stdin `{cniVersion}` only, as libcni's GetVersionInfo). */
  async version(type: string, cniVersion = this.conflist.cniVersion): Promise<PluginRun> {
    return this.#must(type, 'VERSION', { containerId: '', netns: 'dummy', ifName: 'dummy', args: [] }, JSON.stringify({ cniVersion }));
  }
}
