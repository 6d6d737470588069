/**
 * The files behind installCniPlugin: whole-file writes that a reader sees entirely or not at all, versions of a file
 * told apart, the config dir's listing as libcni reads it, and the state file recording what install did.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

import { compareConfigNames, configFileKind, PODNET_PLUGIN_TYPE } from './conflist.js';
import { CniInstallError } from './install-errors.js';

/** STATE_FILE is the state file's name in the config dir (an extension no runtime reads as a config). */
export const STATE_FILE = `.${PODNET_PLUGIN_TYPE}.install-state`;
const TEMP_PREFIX = `.${PODNET_PLUGIN_TYPE}.`;
const TEMP_SUFFIX = '.tmp';

/** InstallState is what install did that uninstall undoes: the binary it copied, the .conf it converted. */
export interface InstallState {
  /** The SHA-256 (hex) of the binary install copied. */
  binarySha256?: string;
  /** The config file install turned into a conflist: its name, the conflist's, and its bytes (base64). */
  converted?: { from: string; to: string; original: string };
}


function tempName(): string {
  return `${TEMP_PREFIX}${randomBytes(8).toString('hex')}${TEMP_SUFFIX}`;
}

/** isOwnFile tells whether name (in the config dir) is one of the installer's own files: the state or a temp file. */
export function isOwnFile(name: string): boolean {
  return name === STATE_FILE || (name.startsWith(TEMP_PREFIX) && name.endsWith(TEMP_SUFFIX));
}

/** syncDir makes a directory's entries (a rename, an unlink) durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * writeAtomic puts data under dir/name with mode: written to a temp file in dir (libuv opens it O_CLOEXEC), synced,
 * renamed over the name, and the dir synced. On any failure the temp file is removed and the name keeps what it had.
 * stillCurrent, when given, is asked just before the rename whether what the data was made from is unchanged; when
 * it is not, nothing is renamed and writeAtomic answers false.
 */
export async function writeAtomic(
  dir: string,
  name: string,
  data: Uint8Array,
  mode: number,
  stillCurrent?: () => Promise<boolean>,
): Promise<boolean> {
  const temp = join(dir, tempName());
  const handle = await open(temp, 'wx', mode);
  try {
    try {
      await handle.writeFile(data);
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (stillCurrent !== undefined && !(await stillCurrent())) {
      await rm(temp, { force: true });
      return false;
    }
    await rename(temp, join(dir, name));
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncDir(dir);
  return true;
}

/** fileIdentity names one version of a file: a rename over it or a write into it gives another. */
function fileIdentity(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/** readVersion reads a file with the identity of the version read (both from one open fd), or undefined if absent. */
export async function readVersion(path: string): Promise<{ data: Buffer; id: string; mode: number } | undefined> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const st = await handle.stat({ bigint: true });
    const data = await handle.readFile();
    return { data, id: fileIdentity(st), mode: Number(st.mode & 0o7777n) };
  } finally {
    await handle.close();
  }
}

/** unchangedSince builds a stillCurrent check: path is still the version id names. */
export function unchangedSince(path: string, id: string): () => Promise<boolean> {
  return async () => {
    const st = await stat(path, { bigint: true }).catch(() => undefined);
    return st !== undefined && fileIdentity(st) === id;
  };
}

/** readIfExists reads a whole file, or answers undefined when it does not exist. */
export async function readIfExists(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** sha256 is the hex SHA-256 of data. */
export function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** decodeConfig decodes a config file's bytes; throws CniInstallError `ERR_CNI_CONFIG_PARSE` when they are not UTF-8. */
export function decodeConfig(data: Buffer, file: string): string {
  try {
    return utf8.decode(data);
  } catch (err) {
    throw new CniInstallError(`network config '${file}' is not UTF-8`, 'ERR_CNI_CONFIG_PARSE', { file }, { cause: err });
  }
}

/** configNames lists the files of dir a runtime may read as configs (directories are skipped, as libcni does). */
export async function configNames(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return entries
    .filter((e) => !e.isDirectory() && configFileKind(e.name) !== undefined)
    .map((e) => e.name)
    .sort(compareConfigNames);
}

/**
 * readState reads the state file; a missing one, one that does not parse, and fields of the wrong shape record
 * nothing podnet can rely on, and read as nothing recorded.
 */
export async function readState(confDir: string): Promise<InstallState> {
  const data = await readIfExists(join(confDir, STATE_FILE));
  if (data === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch {
    return {};
  }
  const state: InstallState = {};
  if (typeof value !== 'object' || value === null) return state;
  const { binarySha256, converted } = value as Record<string, unknown>;
  if (typeof binarySha256 === 'string') state.binarySha256 = binarySha256;
  if (typeof converted === 'object' && converted !== null) {
    const { from, to, original } = converted as Record<string, unknown>;
    if (typeof from === 'string' && typeof to === 'string' && typeof original === 'string') state.converted = { from, to, original };
  }
  return state;
}

/** writeState replaces the state file (mode 0600) atomically. */
export async function writeState(confDir: string, state: InstallState): Promise<void> {
  await writeAtomic(confDir, STATE_FILE, Buffer.from(`${JSON.stringify(state)}\n`), 0o600);
}
