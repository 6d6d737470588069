// installCniPlugin / uninstallCniPlugin on temp dirs: which file gets the entry, .conf conversion and back,
// idempotence, refusals that change nothing, the binary's mode and content, rename semantics, option checks, and
// where cniPluginPath looks. A fake plugin binary stands in for build/Release/podnet-cni.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, closeSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../lib/errors.js';
import { installCniPlugin, uninstallCniPlugin, type CniPluginInstallation } from '../../lib/cni/install.js';
import { CniInstallError } from '../../lib/cni/install-errors.js';
import { cniPluginCandidates, cniPluginPath, cniPluginPathIn } from '../../lib/cni/plugin-path.js';

const entry = { type: 'podnet-cni', socketPath: '/run/podnet-test/cni.sock', timeoutMs: 4000 };

const calico = `{
  "name": "k8s-pod-network",
  "cniVersion": "0.3.1",
  "plugins": [
    {"type": "calico", "mtu": 1440, "ipam": {"type": "calico-ipam"}},
    {"type": "portmap", "snat": true, "capabilities": {"portMappings": true}}
  ],
  "zz": 1.50
}
`;
const bridge = '{\n  "cniVersion": "1.0.0",\n  "name": "podnet-test",\n  "type": "bridge",\n  "bridge": "cni0",\n  "ipam": {"type": "host-local"}\n}\n';

let root: string;
let binDir: string;
let confDir: string;
let plugin: string;
let pluginBytes: Buffer;
const handles: CniPluginInstallation[] = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'podnet-install-'));
  binDir = join(root, 'bin');
  confDir = join(root, 'net.d');
  mkdirSync(confDir);
  plugin = join(root, 'podnet-cni-fake');
  pluginBytes = Buffer.concat([Buffer.from('#!/bin/false\n'), randomBytes(4096)]);
  writeFileSync(plugin, pluginBytes, { mode: 0o600 });
});

afterEach(async () => {
  for (const h of handles.splice(0)) await h.close();
  rmSync(root, { recursive: true, force: true });
});

async function install(extra: Record<string, unknown> = {}): Promise<CniPluginInstallation> {
  const handle = await installCniPlugin({ binDir, confDir, socketPath: entry.socketPath, timeoutMs: entry.timeoutMs, pluginPath: plugin, ...extra });
  handles.push(handle);
  return handle;
}

function read(name: string): string {
  return readFileSync(join(confDir, name), 'utf8');
}

function plugins(name: string): { type: string }[] {
  return (JSON.parse(read(name)) as { plugins: { type: string }[] }).plugins;
}

/** snapshot maps each file of a dir to its bytes, inode and mtime, to prove a step changed nothing. */
function snapshot(dir: string): Record<string, string> {
  if (!existsSync(dir)) return {};
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = statSync(path);
    out[name] = st.isDirectory() ? 'dir' : `${st.ino}:${st.mtimeMs}:${st.mode}:${readFileSync(path).toString('base64')}`;
  }
  return out;
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('installCniPlugin: the primary config', () => {
  it('chains into the lexically first .conflist/.conf/.json only, skipping directories and other files', async () => {
    mkdirSync(join(confDir, '00-dir.conflist'));
    writeFileSync(join(confDir, '05-notes.txt'), 'not a config');
    writeFileSync(join(confDir, '10-calico.conflist'), calico);
    writeFileSync(join(confDir, '20-bridge.conf'), bridge);
    writeFileSync(join(confDir, '30-x.json'), '{"name": "x", "type": "bridge"}');
    const before = snapshot(confDir);
    const handle = await install();
    expect(handle.file).toBe(join(confDir, '10-calico.conflist'));
    expect(handle.configWrites).toBe(1);
    expect(plugins('10-calico.conflist')).toEqual([...(JSON.parse(calico) as { plugins: unknown[] }).plugins, entry]);
    expect(read('10-calico.conflist')).toContain('"zz": 1.50\n}\n');
    const after = snapshot(confDir);
    for (const name of ['05-notes.txt', '20-bridge.conf', '30-x.json']) expect(after[name]).toBe(before[name]);
    expect(readdirSync(confDir).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  });

  it('chains into a .json that sorts first, converting it', async () => {
    writeFileSync(join(confDir, '10-a.json'), '{"name": "a", "type": "ptp"}');
    writeFileSync(join(confDir, '10-b.conflist'), calico);
    await install();
    expect(existsSync(join(confDir, '10-a.json'))).toBe(false);
    expect(plugins('10-a.conflist')).toEqual([{ type: 'ptp' }, entry]);
    expect(read('10-b.conflist')).toBe(calico);
  });

  it('turns a .conf into a .conflist with the same mode, and uninstall puts the .conf back byte for byte', async () => {
    writeFileSync(join(confDir, '10-bridge.conf'), bridge, { mode: 0o640 });
    chmodSync(join(confDir, '10-bridge.conf'), 0o640);
    const handle = await install();
    await handle.close();
    expect(existsSync(join(confDir, '10-bridge.conf'))).toBe(false);
    const conflist = JSON.parse(read('10-bridge.conflist')) as Record<string, unknown>;
    expect(conflist).toEqual({
      cniVersion: '1.0.0',
      name: 'podnet-test',
      plugins: [{ type: 'bridge', bridge: 'cni0', ipam: { type: 'host-local' } }, entry],
    });
    expect(statSync(join(confDir, '10-bridge.conflist')).mode & 0o777).toBe(0o640);

    const outcome = await uninstallCniPlugin({ binDir, confDir });
    expect(outcome).toEqual({
      configFiles: [join(confDir, '10-bridge.conflist')],
      restoredConf: join(confDir, '10-bridge.conf'),
      binaryRemoved: true,
    });
    expect(readdirSync(confDir)).toEqual(['10-bridge.conf']);
    expect(read('10-bridge.conf')).toBe(bridge);
    expect(statSync(join(confDir, '10-bridge.conf')).mode & 0o777).toBe(0o640);
    expect(readdirSync(binDir)).toEqual([]);
  });

  it('keeps a converted conflist someone else changed, without podnet, on uninstall', async () => {
    writeFileSync(join(confDir, '10-bridge.conf'), bridge);
    const handle = await install();
    await handle.close();
    const edited = read('10-bridge.conflist').replace('"cni0"', '"cni9"');
    writeFileSync(join(confDir, '10-bridge.conflist'), edited);
    const outcome = await uninstallCniPlugin({ binDir, confDir });
    expect(outcome.restoredConf).toBeUndefined();
    expect(readdirSync(confDir)).toEqual(['10-bridge.conflist']);
    expect(plugins('10-bridge.conflist')).toEqual([{ type: 'bridge', bridge: 'cni9', ipam: { type: 'host-local' } }]);
  });

  it('changes nothing when installed twice with the same options', async () => {
    writeFileSync(join(confDir, '10-calico.conflist'), calico);
    await (await install()).close();
    const conf = snapshot(confDir);
    const bin = snapshot(binDir);
    const again = await install();
    expect(again.configWrites).toBe(0);
    expect(again.file).toBe(join(confDir, '10-calico.conflist'));
    expect(snapshot(confDir)).toEqual(conf);
    expect(snapshot(binDir)).toEqual(bin);
  });

  it('updates an entry with other options in place, keeping the rest of the file', async () => {
    writeFileSync(join(confDir, '10-calico.conflist'), calico);
    await (await install({ timeoutMs: 1234 })).close();
    const first = read('10-calico.conflist');
    expect(plugins('10-calico.conflist')[2]).toEqual({ ...entry, timeoutMs: 1234 });
    await install();
    const second = read('10-calico.conflist');
    expect(plugins('10-calico.conflist').map((p) => p.type)).toEqual(['calico', 'portmap', 'podnet-cni']);
    expect(plugins('10-calico.conflist')[2]).toEqual(entry);
    expect(second.replace('4000', '1234')).toBe(first);
  });

  it.each([
    ['broken JSON', '10-calico.conflist', '{"name": "x", "plugins": [', 'ERR_CNI_CONFIG_PARSE'],
    ['not UTF-8', '10-calico.conflist', Buffer.from([0x7b, 0xff, 0x7d]), 'ERR_CNI_CONFIG_PARSE'],
    ['no plugins list', '10-calico.conflist', '{"name": "x"}', 'ERR_CNI_CONFIG_INVALID'],
    ['a .conf without type', '10-bridge.conf', '{"name": "x"}', 'ERR_CNI_CONFIG_INVALID'],
  ])('refuses %s with a typed error naming the file and changes nothing', async (_name, file, content, code) => {
    writeFileSync(join(confDir, file), content);
    const conf = snapshot(confDir);
    const err = await rejection(install());
    expect(err).toBeInstanceOf(CniInstallError);
    expect((err as CniInstallError).code).toBe(code);
    expect((err as CniInstallError).file).toBe(join(confDir, file));
    expect(snapshot(confDir)).toEqual(conf);
    expect(existsSync(binDir)).toBe(false);
  });

  it('refuses to turn a .conf into a .conflist name another file holds', async () => {
    // 10-x.conf sorts before 10-x.conflist, so the .conf is primary; the conflist is not podnet's.
    writeFileSync(join(confDir, '10-x.conf'), bridge);
    writeFileSync(join(confDir, '10-x.conflist'), calico);
    const conf = snapshot(confDir);
    const err = (await rejection(install())) as CniInstallError;
    expect(err.code).toBe('ERR_CNI_CONFIG_CONFLICT');
    expect(err.file).toBe(join(confDir, '10-x.conf'));
    expect(snapshot(confDir)).toEqual(conf);
  });
});

describe('installCniPlugin: the binary', () => {
  it('copies the plugin with mode 0755 and its exact content', async () => {
    await install();
    const dest = join(binDir, 'podnet-cni');
    expect(statSync(dest).mode & 0o7777).toBe(0o755);
    expect(readFileSync(dest).equals(pluginBytes)).toBe(true);
    expect(readdirSync(binDir)).toEqual(['podnet-cni']);
  });

  it('replaces a file by rename: a reader of the old file keeps it whole, the name shows only the new one', async () => {
    mkdirSync(binDir);
    const dest = join(binDir, 'podnet-cni');
    const old = Buffer.alloc(8192, 0x61);
    writeFileSync(dest, old, { mode: 0o755 });
    writeFileSync(join(confDir, '10-calico.conflist'), calico);
    const oldBinIno = statSync(dest).ino;
    const oldConfIno = statSync(join(confDir, '10-calico.conflist')).ino;
    const fd = openSync(dest, 'r');
    try {
      await install();
      const seen = Buffer.alloc(old.length + 1);
      expect(readSync(fd, seen, 0, seen.length, 0)).toBe(old.length);
      expect(seen.subarray(0, old.length).equals(old)).toBe(true);
    } finally {
      closeSync(fd);
    }
    expect(statSync(dest).ino).not.toBe(oldBinIno);
    expect(readFileSync(dest).equals(pluginBytes)).toBe(true);
    expect(statSync(join(confDir, '10-calico.conflist')).ino).not.toBe(oldConfIno);
  });

  it('leaves no temp file and no config change when the final rename fails', async () => {
    mkdirSync(join(binDir, 'podnet-cni', 'inside'), { recursive: true });
    writeFileSync(join(confDir, '10-calico.conflist'), calico);
    const conf = snapshot(confDir);
    const err = (await rejection(install())) as NodeJS.ErrnoException;
    expect(['EISDIR', 'ENOTEMPTY', 'EEXIST']).toContain(err.code);
    expect(err.syscall).toBe('rename');
    expect(readdirSync(binDir)).toEqual(['podnet-cni']);
    expect(snapshot(confDir)).toEqual(conf);
  });

  it('refuses a missing plugin file with ENOENT and changes nothing', async () => {
    writeFileSync(join(confDir, '10-calico.conflist'), calico);
    const conf = snapshot(confDir);
    const err = (await rejection(install({ pluginPath: join(root, 'absent') }))) as NodeJS.ErrnoException;
    expect(err.code).toBe('ENOENT');
    expect(snapshot(confDir)).toEqual(conf);
  });
});

describe('uninstallCniPlugin', () => {
  it("takes podnet's entry out of every conflist, byte for byte, and is idempotent", async () => {
    writeFileSync(join(confDir, '10-calico.conflist'), calico);
    writeFileSync(join(confDir, '20-other.conflist'), '{"name":"o","plugins":[{"type":"bridge"},{"type":"podnet-cni"}]}');
    writeFileSync(join(confDir, '30-broken.conflist'), '{');
    await (await install()).close();
    const outcome = await uninstallCniPlugin({ binDir, confDir });
    expect(outcome).toEqual({
      configFiles: [join(confDir, '10-calico.conflist'), join(confDir, '20-other.conflist')],
      restoredConf: undefined,
      binaryRemoved: true,
    });
    expect(read('10-calico.conflist')).toBe(calico);
    expect(read('20-other.conflist')).toBe('{"name":"o","plugins":[{"type":"bridge"}]}');
    expect(read('30-broken.conflist')).toBe('{');
    expect(readdirSync(confDir).sort()).toEqual(['10-calico.conflist', '20-other.conflist', '30-broken.conflist']);

    const conf = snapshot(confDir);
    expect(await uninstallCniPlugin({ binDir, confDir })).toEqual({ configFiles: [], restoredConf: undefined, binaryRemoved: false });
    expect(snapshot(confDir)).toEqual(conf);
  });

  it('leaves a podnet-cni binary that is not the one it installed', async () => {
    mkdirSync(binDir);
    writeFileSync(join(binDir, 'podnet-cni'), 'someone else', { mode: 0o755 });
    const outcome = await uninstallCniPlugin({ binDir, confDir });
    expect(outcome.binaryRemoved).toBe(false);
    expect(readFileSync(join(binDir, 'podnet-cni'), 'utf8')).toBe('someone else');
  });

  it('succeeds on dirs that do not exist', async () => {
    expect(await uninstallCniPlugin({ binDir: join(root, 'no-bin'), confDir: join(root, 'no-conf') })).toEqual({
      configFiles: [],
      restoredConf: undefined,
      binaryRemoved: false,
    });
  });
});

describe('option checks', () => {
  const cases: [string, Record<string, unknown> | undefined, string, string][] = [
    ['no options', undefined, 'options', 'ERR_INVALID_ARG_TYPE'],
    ['options an array', [] as unknown as Record<string, unknown>, 'options', 'ERR_INVALID_ARG_TYPE'],
    ['binDir missing', { binDir: undefined }, 'options.binDir', 'ERR_INVALID_ARG_TYPE'],
    ['binDir relative', { binDir: 'opt/cni/bin' }, 'options.binDir', 'ERR_INVALID_ARG_VALUE'],
    ['confDir a number', { confDir: 5 }, 'options.confDir', 'ERR_INVALID_ARG_TYPE'],
    ['confDir with NUL', { confDir: '/etc/cni\0' }, 'options.confDir', 'ERR_INVALID_ARG_VALUE'],
    ['socketPath relative', { socketPath: 'cni.sock' }, 'options.socketPath', 'ERR_INVALID_ARG_VALUE'],
    ['socketPath over 107 bytes', { socketPath: `/${'s'.repeat(107)}` }, 'options.socketPath', 'ERR_INVALID_ARG_VALUE'],
    ['timeoutMs 0', { timeoutMs: 0 }, 'options.timeoutMs', 'ERR_INVALID_ARG_VALUE'],
    ['timeoutMs over 600000', { timeoutMs: 600_001 }, 'options.timeoutMs', 'ERR_INVALID_ARG_VALUE'],
    ['timeoutMs fractional', { timeoutMs: 1.5 }, 'options.timeoutMs', 'ERR_INVALID_ARG_VALUE'],
    ['timeoutMs a string', { timeoutMs: '10' }, 'options.timeoutMs', 'ERR_INVALID_ARG_TYPE'],
    ['pluginPath relative', { pluginPath: 'build/podnet-cni' }, 'options.pluginPath', 'ERR_INVALID_ARG_VALUE'],
    ['debounceMs negative', { debounceMs: -1 }, 'options.debounceMs', 'ERR_INVALID_ARG_VALUE'],
    ['logger a string', { logger: 'console' }, 'options.logger', 'ERR_INVALID_ARG_TYPE'],
  ];

  it.each(cases)('installCniPlugin refuses %s before touching anything', async (_name, patch, argument, code) => {
    writeFileSync(join(confDir, '10-calico.conflist'), calico);
    const conf = snapshot(confDir);
    const options = patch === undefined ? undefined : Array.isArray(patch) ? patch : { binDir, confDir, pluginPath: plugin, ...patch };
    const err = await rejection(installCniPlugin(options as never));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).argument).toBe(argument);
    expect((err as InvalidArgumentError).code).toBe(code);
    expect(existsSync(binDir)).toBe(false);
    expect(snapshot(confDir)).toEqual(conf);
  });

  it.each([
    ['no options', undefined, 'options'],
    ['binDir relative', { binDir: 'bin', confDir: '/etc/cni/net.d' }, 'options.binDir'],
    ['confDir missing', { binDir: '/opt/cni/bin' }, 'options.confDir'],
  ])('uninstallCniPlugin refuses %s', async (_name, options, argument) => {
    const err = await rejection(uninstallCniPlugin(options as never));
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).argument).toBe(argument);
  });
});

describe('cniPluginPath', () => {
  it('prefers prebuilds/linux-<arch>/podnet-cni, then build/Release/podnet-cni', () => {
    const pkg = join(root, 'pkg');
    const [prebuild, release] = cniPluginCandidates(pkg);
    expect(prebuild).toBe(join(pkg, 'prebuilds', `linux-${process.arch}`, 'podnet-cni'));
    expect(release).toBe(join(pkg, 'build', 'Release', 'podnet-cni'));
    mkdirSync(join(pkg, 'build', 'Release'), { recursive: true });
    writeFileSync(release!, 'x');
    expect(cniPluginPathIn(pkg)).toBe(release);
    mkdirSync(join(pkg, 'prebuilds', `linux-${process.arch}`), { recursive: true });
    writeFileSync(prebuild!, 'x');
    expect(cniPluginPathIn(pkg)).toBe(prebuild);
  });

  it('refuses with ERR_CNI_PLUGIN_NOT_FOUND naming the places it looked (a directory does not count)', () => {
    const pkg = join(root, 'pkg');
    mkdirSync(join(pkg, 'build', 'Release', 'podnet-cni'), { recursive: true });
    let err: unknown;
    try {
      cniPluginPathIn(pkg);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CniInstallError);
    expect((err as CniInstallError).code).toBe('ERR_CNI_PLUGIN_NOT_FOUND');
    expect((err as CniInstallError).paths).toEqual(cniPluginCandidates(pkg));
  });

  it("finds this package's binary from its own location, or says where it looked", () => {
    const candidates = cniPluginCandidates();
    expect(candidates[1]).toBe(join(process.cwd(), 'build', 'Release', 'podnet-cni'));
    const present = candidates.find((p) => existsSync(p) && statSync(p).isFile());
    if (present !== undefined) {
      expect(cniPluginPath()).toBe(present);
    } else {
      expect(() => cniPluginPath()).toThrow(expect.objectContaining({ code: 'ERR_CNI_PLUGIN_NOT_FOUND', paths: candidates }));
    }
  });
});
