/**
 * installCniPlugin / uninstallCniPlugin: the podnet-cni binary in the runtime's plugin dir and podnet's entry chained
 * into the primary network's config, kept there while the primary CNI rewrites its file, and taken out again.
 *
 * Every file is written whole under a temporary name in its own directory (a name no runtime reads as a config), made
 * durable and renamed over the final name, so a runtime sees the old file or the new one, never a part. What install
 * did that uninstall must undo without guessing (a `.conf` it turned into a `.conflist`, the binary it copied) is
 * kept in a state file in the config dir, also under a name no runtime reads.
 */
import { EventEmitter } from 'node:events';
import { watch, type FSWatcher } from 'node:fs';
import { lstat, mkdir, readFile, rm, stat, unlink } from 'node:fs/promises';
import { isAbsolute, join } from 'node:path';

import { toLogger, type Logger } from '../logger.js';
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import {
  chainPodnet,
  configFileKind,
  conflistFromConf,
  conflistNameFor,
  conflistRevertsToConf,
  PODNET_PLUGIN_TYPE,
  primaryConfigName,
  unchainPodnet,
  type PodnetConfEntry,
} from './conflist.js';
import { CniInstallError } from './install-errors.js';
import {
  configNames,
  decodeConfig,
  isOwnFile,
  readIfExists,
  readState,
  readVersion,
  sha256,
  STATE_FILE,
  syncDir,
  unchangedSince,
  writeAtomic,
  writeState,
  type InstallState,
} from './install-files.js';
import { cniPluginPath } from './plugin-path.js';

/** DEFAULT_CNI_SOCKET_PATH is the agent socket podnet-cni uses when its entry names none. */
export const DEFAULT_CNI_SOCKET_PATH = '/var/run/podnet/cni.sock';
/** DEFAULT_CNI_TIMEOUT_MS is podnet-cni's deadline when its entry sets none. */
export const DEFAULT_CNI_TIMEOUT_MS = 10_000;

const BINARY_MODE = 0o755;
const DEFAULT_DEBOUNCE_MS = 100;
const STALE_RETRIES = 5;
// sun_path holds 108 bytes with the terminating NUL.
const MAX_SOCKET_PATH_BYTES = 107;
const MAX_PATH_BYTES = 4095;

/** InstallCniPluginOptions are the options of installCniPlugin. */
export interface InstallCniPluginOptions {
  /** The runtime's CNI plugin dir (absolute), such as `/opt/cni/bin`; made when missing. */
  binDir: string;
  /** The runtime's CNI config dir (absolute), such as `/etc/cni/net.d`; made when missing. */
  confDir: string;
  /** The agent's CniServer socket (absolute, at most 107 bytes) written into the entry (default `/var/run/podnet/cni.sock`). */
  socketPath?: string;
  /** The plugin's deadline in ms, 1..600000, written into the entry (default 10000). */
  timeoutMs?: number;
  /** The plugin binary to copy (absolute; default cniPluginPath()). */
  pluginPath?: string;
  /** How long the watcher waits in ms, 0..60000, for a burst of changes in confDir to end before it chains (default 100). */
  debounceMs?: number;
  /** Where the watcher's failures go when the handle has no `error` listener. */
  logger?: Partial<Logger>;
}

/** UninstallCniPluginOptions are the options of uninstallCniPlugin. */
export interface UninstallCniPluginOptions {
  /** The runtime's CNI plugin dir (absolute) the binary was copied to. */
  binDir: string;
  /** The runtime's CNI config dir (absolute). */
  confDir: string;
}

/** UninstallOutcome says what uninstallCniPlugin took out. */
export interface UninstallOutcome {
  /** The config files podnet's entry was taken out of (or that were removed, being podnet's own conversion). */
  configFiles: string[];
  /** The `.conf` (or `.json`) put back in place of the conflist install made of it, if any. */
  restoredConf: string | undefined;
  /** Whether the binary was removed (false: absent, or not the one podnet installed). */
  binaryRemoved: boolean;
}

/**
 * CniPluginInstallationEvents are the events of a CniPluginInstallation, emitted from its watcher; a listener that
 * throws is logged and does not stop the watcher.
 */
export interface CniPluginInstallationEvents {
  /** podnet's entry was written into file (a conflist path): chained, updated, or a `.conf` converted. */
  chained: [file: string];
  /** Chaining failed (a config that does not parse, a failed write); the watcher goes on and tries on the next change. */
  error: [Error];
}


// ---- the binary ---------------------------------------------------------------------------------------------------

/** installBinary copies source to binDir/podnet-cni unless an identical 0755 copy is there; it returns the sha256. */
async function installBinary(source: string, binDir: string): Promise<string> {
  const data = await readFile(source);
  const digest = sha256(data);
  const dest = join(binDir, PODNET_PLUGIN_TYPE);
  const current = await lstat(dest).catch(() => undefined);
  if (current?.isFile() === true && (current.mode & 0o7777) === BINARY_MODE) {
    const existing = await readIfExists(dest);
    if (existing !== undefined && sha256(existing) === digest) return digest;
  }
  await writeAtomic(binDir, PODNET_PLUGIN_TYPE, data, BINARY_MODE);
  return digest;
}

// ---- chaining -----------------------------------------------------------------------------------------------------

type Plan =
  | { kind: 'none' }
  | { kind: 'unchanged'; file: string }
  | { kind: 'edit'; file: string; name: string; text: string; mode: number; id: string }
  | { kind: 'convert'; file: string; from: string; to: string; original: Buffer; text: string; mode: number; id: string };

/** planChain reads the primary config of confDir and works out what chaining entry into it takes; it writes nothing. */
async function planChain(confDir: string, entry: PodnetConfEntry, state: InstallState): Promise<Plan> {
  const name = primaryConfigName(await configNames(confDir));
  if (name === undefined) return { kind: 'none' };
  const path = join(confDir, name);
  const version = await readVersion(path);
  // The primary CNI removed it between the listing and the read: the change that follows triggers another pass.
  if (version === undefined) return { kind: 'none' };
  const { data, id, mode } = version;
  const text = decodeConfig(data, path);
  if (configFileKind(name) === 'conflist') {
    const edit = chainPodnet(text, entry, path);
    return edit.changed ? { kind: 'edit', file: path, name, text: edit.text, mode, id } : { kind: 'unchanged', file: path };
  }
  const to = conflistNameFor(name);
  const converted = conflistFromConf(text, entry, path);
  const taken = await lstat(join(confDir, to)).catch(() => undefined);
  if (taken !== undefined && state.converted?.to !== to) {
    throw new CniInstallError(
      `network config '${path}' cannot become '${join(confDir, to)}': that file exists and podnet did not write it`,
      'ERR_CNI_CONFIG_CONFLICT',
      { file: path },
    );
  }
  return { kind: 'convert', file: join(confDir, to), from: name, to, original: data, text: converted, mode, id };
}

/**
 * applyPlan writes what planChain worked out; it returns the conflist it wrote, undefined when there was nothing to
 * write, or 'stale' when the primary CNI changed the file since it was read (nothing written: plan again). The check
 * and the rename are two steps, so a rewrite landing between them can still be replaced; the window is the rename's.
 */
async function applyPlan(confDir: string, plan: Plan, state: InstallState): Promise<string | 'stale' | undefined> {
  if (plan.kind === 'edit') {
    const path = join(confDir, plan.name);
    const wrote = await writeAtomic(confDir, plan.name, Buffer.from(plan.text), plan.mode, unchangedSince(path, plan.id));
    return wrote ? plan.file : 'stale';
  }
  if (plan.kind === 'convert') {
    const source = join(confDir, plan.from);
    if (!(await unchangedSince(source, plan.id)())) return 'stale';
    // The record comes first: a conflist podnet made is never on disk without it.
    state.converted = { from: plan.from, to: plan.to, original: plan.original.toString('base64') };
    await writeState(confDir, state);
    const wrote = await writeAtomic(confDir, plan.to, Buffer.from(plan.text), plan.mode, unchangedSince(source, plan.id));
    if (!wrote) return 'stale';
    await unlink(source).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
    await syncDir(confDir);
    return plan.file;
  }
  return undefined;
}

// ---- the handle ---------------------------------------------------------------------------------------------------

/**
 * CniPluginInstallation is the handle installCniPlugin returns. It watches the config dir and chains podnet's entry
 * again (after `debounceMs` of quiet) when the primary CNI rewrites or replaces its file or a new lexically first
 * config appears; a pass that finds the entry in place writes nothing, so its own writes never start a loop. Failures
 * go to `error` listeners, else to the logger; nothing is thrown from the watcher. Neither the watcher nor its timer
 * keeps the process alive. close() it (or `using` / `await using` it); closing leaves the installed files in place
 * (uninstallCniPlugin takes them out).
 */
export class CniPluginInstallation extends EventEmitter<CniPluginInstallationEvents> implements Disposable, AsyncDisposable {
  /** CniPluginInstallation.binDir is the plugin dir the binary was copied to. */
  readonly binDir: string;
  /** CniPluginInstallation.confDir is the watched config dir. */
  readonly confDir: string;
  /** CniPluginInstallation.entry is podnet's conflist entry as written. */
  readonly entry: Readonly<PodnetConfEntry>;
  readonly #debounceMs: number;
  readonly #logger: Logger;
  readonly #state: InstallState;
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #file: string | undefined;
  #writes = 0;

  /** @internal installCniPlugin builds the handle. */
  constructor(binDir: string, confDir: string, entry: PodnetConfEntry, debounceMs: number, logger: Logger, state: InstallState) {
    super();
    this.binDir = binDir;
    this.confDir = confDir;
    this.entry = Object.freeze({ ...entry });
    this.#debounceMs = debounceMs;
    this.#logger = logger;
    this.#state = state;
  }

  /** CniPluginInstallation.file is the conflist podnet's entry is in, or undefined while confDir has no config yet. */
  get file(): string | undefined {
    return this.#file;
  }

  /** CniPluginInstallation.configWrites counts the config files this handle has written (install's first pass included). */
  get configWrites(): number {
    return this.#writes;
  }

  /** CniPluginInstallation.closed tells whether close() was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** @internal startWatching starts the confDir watcher; installCniPlugin calls it before the first pass. */
  startWatching(): void {
    const watcher = watch(this.confDir, { persistent: false }, (_event, name) => {
      if (name !== null && isOwnFile(name)) return;
      this.#schedule();
    });
    watcher.on('error', (err) => this.#report(err));
    this.#watcher = watcher;
  }

  /**
   * @internal chainOnce plans and applies one pass (planning again while the primary CNI keeps changing the file
   * under it); install's first pass throws, the watcher's are reported.
   */
  async chainOnce(): Promise<void> {
    for (let attempt = 0; attempt < STALE_RETRIES; attempt++) {
      const plan = await planChain(this.confDir, this.entry, this.#state);
      if (plan.kind !== 'none') this.#file = plan.file;
      const wrote = await applyPlan(this.confDir, plan, this.#state);
      if (wrote === 'stale') continue;
      if (wrote !== undefined) {
        this.#writes++;
        this.#emitSafely('chained', wrote);
      }
      return;
    }
    // Still changing: the change events that follow start another pass.
  }

  #schedule(): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#run(), this.#debounceMs);
    this.#timer.unref();
  }

  #run(): void {
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.chainOnce();
        } catch (err) {
          this.#report(err instanceof Error ? err : new Error(String(err)));
        }
      } while (this.#again && !this.#closed);
    })().finally(() => {
      this.#running = undefined;
    });
  }

  #report(err: Error): void {
    if (this.listenerCount('error') > 0) {
      this.#emitSafely('error', err);
      return;
    }
    this.#logger.error(`podnet-cni install: ${err.message}`, { confDir: this.confDir, code: (err as { code?: unknown }).code });
  }

  #emitSafely<K extends keyof CniPluginInstallationEvents>(event: K, ...args: CniPluginInstallationEvents[K]): void {
    try {
      (this.emit as (e: K, ...a: CniPluginInstallationEvents[K]) => boolean)(event, ...args);
    } catch (err) {
      this.#logger.error(`podnet-cni install: a '${event}' listener threw: ${String(err)}`, { confDir: this.confDir });
    }
  }

  /**
   * CniPluginInstallation.close stops watching; the promise settles when a pass in flight has finished (no write
   * starts after it settles). Calling it again does nothing more.
   */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#watcher?.close();
    this.#watcher = undefined;
    await this.#running;
  }

  /** Symbol.dispose stops watching at once, for `using`; a pass in flight finishes on its own. */
  [Symbol.dispose](): void {
    void this.close();
  }

  /** Symbol.asyncDispose is close(), for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

// ---- validation ---------------------------------------------------------------------------------------------------

function checkAbsolutePath(name: string, value: unknown, maxBytes = MAX_PATH_BYTES): string {
  const path = checkString(name, value, maxBytes);
  if (!isAbsolute(path)) throw invalidValue(name, 'an absolute path', value);
  return path;
}

function checkLogger(value: unknown): Partial<Logger> | undefined {
  if (value === undefined) return undefined;
  return checkOptions<Logger>('options.logger', value);
}

// ---- the entry points ---------------------------------------------------------------------------------------------

/**
 * installCniPlugin copies the podnet-cni binary into binDir (atomically, mode 0755) and chains podnet's entry
 * `{type: "podnet-cni", socketPath, timeoutMs}` at the end of the plugins of the primary network's config, the
 * lexically first `*.conflist` / `*.conf` / `*.json` in confDir (a `.conf` or `.json` becomes a `.conflist` of its
 * plugin and podnet's entry, the old file removed after the new one is in place). Installing again changes nothing;
 * an entry with other options is updated where it stands; the rest of the file is kept byte for byte. With no config
 * in confDir yet, the handle's watcher chains into the first one that appears. Rejects with InvalidArgumentError for
 * bad options, CniInstallError (`ERR_CNI_PLUGIN_NOT_FOUND`, `ERR_CNI_CONFIG_PARSE`, `ERR_CNI_CONFIG_INVALID`,
 * `ERR_CNI_CONFIG_CONFLICT`) before anything is changed, and Node's system errors (`code`, `errno`, `syscall`,
 * `path`) for failed file operations.
 */
export async function installCniPlugin(options: InstallCniPluginOptions): Promise<CniPluginInstallation> {
  if (options === undefined) throw invalidType('options', 'an object', options);
  const opts = checkOptions<InstallCniPluginOptions>('options', options);
  const binDir = checkAbsolutePath('options.binDir', opts.binDir);
  const confDir = checkAbsolutePath('options.confDir', opts.confDir);
  const socketPath =
    opts.socketPath === undefined ? DEFAULT_CNI_SOCKET_PATH : checkAbsolutePath('options.socketPath', opts.socketPath, MAX_SOCKET_PATH_BYTES);
  const timeoutMs = opts.timeoutMs === undefined ? DEFAULT_CNI_TIMEOUT_MS : checkInteger('options.timeoutMs', opts.timeoutMs, 1, 600_000);
  const pluginPath = opts.pluginPath === undefined ? undefined : checkAbsolutePath('options.pluginPath', opts.pluginPath);
  const debounceMs = opts.debounceMs === undefined ? DEFAULT_DEBOUNCE_MS : checkInteger('options.debounceMs', opts.debounceMs, 0, 60_000);
  const logger = toLogger(checkLogger(opts.logger));

  const source = pluginPath ?? cniPluginPath();
  await mkdir(confDir, { recursive: true, mode: 0o755 });
  const entry: PodnetConfEntry = { type: PODNET_PLUGIN_TYPE, socketPath, timeoutMs };
  const state = await readState(confDir);
  const installation = new CniPluginInstallation(binDir, confDir, entry, debounceMs, logger, state);
  // Watching starts before the first look, so a change made while it runs is not missed.
  installation.startWatching();
  try {
    // The config is judged before the binary is copied: a config podnet refuses leaves the node as it was.
    await planChain(confDir, entry, state);
    await mkdir(binDir, { recursive: true, mode: 0o755 });
    const digest = await installBinary(source, binDir);
    if (state.binarySha256 !== digest) {
      state.binarySha256 = digest;
      await writeState(confDir, state);
    }
    await installation.chainOnce();
  } catch (err) {
    await installation.close();
    throw err;
  }
  return installation;
}

/**
 * uninstallCniPlugin takes out what installCniPlugin put in: podnet's entry from every conflist in confDir that has
 * one; a conflist install made of a `.conf` goes back to that `.conf` when nothing but podnet's entry changed in it
 * (else it stays a conflist without podnet's entry); binDir/podnet-cni when it is the binary install copied (or this
 * package's own). Files podnet's code cannot parse are left alone. Uninstalling again changes nothing. Close the
 * installation's handle first, or its watcher chains the entry again. Rejects with InvalidArgumentError for bad
 * options and Node's system errors for failed file operations.
 */
export async function uninstallCniPlugin(options: UninstallCniPluginOptions): Promise<UninstallOutcome> {
  if (options === undefined) throw invalidType('options', 'an object', options);
  const opts = checkOptions<UninstallCniPluginOptions>('options', options);
  const binDir = checkAbsolutePath('options.binDir', opts.binDir);
  const confDir = checkAbsolutePath('options.confDir', opts.confDir);

  const state = await readState(confDir);
  const outcome: UninstallOutcome = { configFiles: [], restoredConf: undefined, binaryRemoved: false };
  for (const name of await configNames(confDir)) {
    if (configFileKind(name) !== 'conflist') continue;
    const path = join(confDir, name);
    const data = await readIfExists(path);
    if (data === undefined) continue;
    let text: string;
    let edit;
    try {
      text = decodeConfig(data, path);
      edit = unchainPodnet(text, path);
    } catch {
      continue;
    }
    const converted = state.converted;
    if (converted !== undefined && converted.to === name) {
      const original = Buffer.from(converted.original, 'base64');
      if (conflistRevertsToConf(text, original.toString('utf8'))) {
        const mode = (await stat(path)).mode & 0o7777;
        // A .conf the primary CNI wrote again since is newer than the recorded one: it stays.
        if ((await lstat(join(confDir, converted.from)).catch(() => undefined)) === undefined) {
          await writeAtomic(confDir, converted.from, original, mode);
          outcome.restoredConf = join(confDir, converted.from);
        }
        await unlink(path);
        await syncDir(confDir);
        outcome.configFiles.push(path);
        continue;
      }
    }
    if (edit.changed) {
      await writeAtomic(confDir, name, Buffer.from(edit.text), (await stat(path)).mode & 0o7777);
      outcome.configFiles.push(path);
    }
  }

  const dest = join(binDir, PODNET_PLUGIN_TYPE);
  const installed = await lstat(dest).catch(() => undefined);
  if (installed?.isFile() === true) {
    const digest = sha256(await readFile(dest));
    if (digest === state.binarySha256 || digest === (await ownBinaryDigest())) {
      await unlink(dest);
      outcome.binaryRemoved = true;
    }
  }
  await rm(join(confDir, STATE_FILE), { force: true });
  return outcome;
}

async function ownBinaryDigest(): Promise<string | undefined> {
  try {
    return sha256(await readFile(cniPluginPath()));
  } catch {
    return undefined;
  }
}
