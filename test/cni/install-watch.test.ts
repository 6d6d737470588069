// The installation's watcher on temp dirs: the entry chained again after the primary CNI rewrites its file in place,
// renames a new one over it, or a new lexically first config appears; a late primary; no loop on its own writes
// (writes counted, inodes compared); errors to listeners or the logger, never thrown; close() ends it all.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { installCniPlugin, uninstallCniPlugin, type CniPluginInstallation } from '../../lib/cni/install.js';
import type { CniInstallError } from '../../lib/cni/install-errors.js';

const DEBOUNCE_MS = 20;
// Long enough for several debounce periods on a loaded 2-core machine: what has not happened by then is not coming.
const QUIET_MS = 400;
const entry = { type: 'podnet-cni', socketPath: '/run/podnet-test/cni.sock', timeoutMs: 4000 };

const conflist = (name: string, types: string[]): string =>
  `${JSON.stringify({ cniVersion: '1.0.0', name, plugins: types.map((type) => ({ type })) }, null, 2)}\n`;

let root: string;
let binDir: string;
let confDir: string;
let plugin: string;
const handles: CniPluginInstallation[] = [];

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'podnet-install-watch-'));
  binDir = join(root, 'bin');
  confDir = join(root, 'net.d');
  mkdirSync(confDir);
  plugin = join(root, 'podnet-cni-fake');
  writeFileSync(plugin, randomBytes(1024));
});

afterEach(async () => {
  for (const h of handles.splice(0)) await h.close();
  rmSync(root, { recursive: true, force: true });
});

async function install(extra: Record<string, unknown> = {}): Promise<CniPluginInstallation> {
  const handle = await installCniPlugin({ binDir, confDir, socketPath: entry.socketPath, timeoutMs: entry.timeoutMs, pluginPath: plugin, debounceMs: DEBOUNCE_MS, ...extra });
  handles.push(handle);
  return handle;
}

function types(name: string): string[] {
  return (JSON.parse(readFileSync(join(confDir, name), 'utf8')) as { plugins: { type: string }[] }).plugins.map((p) => p.type);
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function chained(name: string): boolean {
  try {
    return types(name).at(-1) === 'podnet-cni';
  } catch {
    return false;
  }
}

describe('CniPluginInstallation watcher', () => {
  it('chains again after the primary rewrites its file in place, once per rewrite, and then stays quiet', async () => {
    writeFileSync(join(confDir, '10-flannel.conflist'), conflist('cbr0', ['flannel', 'portmap']));
    const handle = await install();
    const events: string[] = [];
    handle.on('chained', (file) => events.push(file));
    expect(handle.configWrites).toBe(1);
    await sleep(QUIET_MS);
    // Its own write (temp file, rename) was seen by the watcher and led to no second write.
    expect(handle.configWrites).toBe(1);
    const inode = statSync(join(confDir, '10-flannel.conflist')).ino;

    writeFileSync(join(confDir, '10-flannel.conflist'), conflist('cbr0', ['flannel', 'portmap', 'bandwidth']));
    await waitFor('the entry chained again', () => chained('10-flannel.conflist'));
    expect(types('10-flannel.conflist')).toEqual(['flannel', 'portmap', 'bandwidth', 'podnet-cni']);
    await sleep(QUIET_MS);
    expect(handle.configWrites).toBe(2);
    expect(events).toEqual([join(confDir, '10-flannel.conflist')]);
    const settled = statSync(join(confDir, '10-flannel.conflist'));
    expect(settled.ino).not.toBe(inode);
    await sleep(QUIET_MS);
    expect(statSync(join(confDir, '10-flannel.conflist')).ino).toBe(settled.ino);
    expect(handle.configWrites).toBe(2);
  });

  it('answers a burst of rewrites with one write after the burst', async () => {
    writeFileSync(join(confDir, '10-flannel.conflist'), conflist('cbr0', ['flannel']));
    const handle = await install({ debounceMs: 200 });
    for (let i = 0; i < 20; i++) writeFileSync(join(confDir, '10-flannel.conflist'), conflist(`cbr${i}`, ['flannel']));
    await waitFor('the entry chained again', () => chained('10-flannel.conflist'));
    expect((JSON.parse(readFileSync(join(confDir, '10-flannel.conflist'), 'utf8')) as { name: string }).name).toBe('cbr19');
    await sleep(QUIET_MS);
    expect(handle.configWrites).toBe(2);
  });

  it('chains again after the primary renames a new file over its own', async () => {
    writeFileSync(join(confDir, '10-calico.conflist'), conflist('k8s-pod-network', ['calico']));
    const handle = await install();
    const staged = join(confDir, 'calico.tmp');
    writeFileSync(staged, conflist('k8s-pod-network', ['calico', 'bandwidth']));
    renameSync(staged, join(confDir, '10-calico.conflist'));
    await waitFor('the entry chained again', () => chained('10-calico.conflist'));
    expect(types('10-calico.conflist')).toEqual(['calico', 'bandwidth', 'podnet-cni']);
    await sleep(QUIET_MS);
    expect(handle.configWrites).toBe(2);
  });

  it('waits for a primary that starts later, then follows a new lexically first file', async () => {
    const handle = await install();
    expect(handle.file).toBeUndefined();
    expect(existsSync(join(binDir, 'podnet-cni'))).toBe(true);
    await sleep(QUIET_MS);
    expect(handle.configWrites).toBe(0);

    writeFileSync(join(confDir, '20-bridge.conflist'), conflist('b', ['bridge']));
    await waitFor('the late primary chained', () => chained('20-bridge.conflist'));
    expect(handle.file).toBe(join(confDir, '20-bridge.conflist'));

    writeFileSync(join(confDir, '05-cilium.conflist'), conflist('cilium', ['cilium-cni']));
    await waitFor('the new first file chained', () => chained('05-cilium.conflist'));
    expect(handle.file).toBe(join(confDir, '05-cilium.conflist'));
    await sleep(QUIET_MS);
    expect(handle.configWrites).toBe(2);
  });

  it('converts a .conf the primary writes again after podnet converted the first one; uninstall restores the newest', async () => {
    writeFileSync(join(confDir, '10-bridge.conf'), '{"cniVersion": "1.0.0", "name": "n", "type": "bridge", "bridge": "cni0"}');
    const handle = await install();
    const second = '{"cniVersion": "1.0.0", "name": "n", "type": "bridge", "bridge": "cni1"}';
    writeFileSync(join(confDir, '10-bridge.conf'), second);
    await waitFor('the .conf converted again', () => !existsSync(join(confDir, '10-bridge.conf')) && readFileSync(join(confDir, '10-bridge.conflist'), 'utf8').includes('cni1'));
    expect(types('10-bridge.conflist')).toEqual(['bridge', 'podnet-cni']);
    await handle.close();
    const outcome = await uninstallCniPlugin({ binDir, confDir });
    expect(outcome.restoredConf).toBe(join(confDir, '10-bridge.conf'));
    expect(readFileSync(join(confDir, '10-bridge.conf'), 'utf8')).toBe(second);
    expect(existsSync(join(confDir, '10-bridge.conflist'))).toBe(false);
  });

  it('reports a rewrite it cannot parse through error listeners, leaves it alone, and chains once it is fixed', async () => {
    writeFileSync(join(confDir, '10-calico.conflist'), conflist('k8s-pod-network', ['calico']));
    const handle = await install();
    const errors: CniInstallError[] = [];
    handle.on('error', (err) => errors.push(err as CniInstallError));
    writeFileSync(join(confDir, '10-calico.conflist'), '{"plugins": [');
    await waitFor('the error reported', () => errors.length > 0);
    expect(errors[0]).toMatchObject({ code: 'ERR_CNI_CONFIG_PARSE', file: join(confDir, '10-calico.conflist') });
    expect(readFileSync(join(confDir, '10-calico.conflist'), 'utf8')).toBe('{"plugins": [');
    writeFileSync(join(confDir, '10-calico.conflist'), conflist('k8s-pod-network', ['calico']));
    await waitFor('the entry chained again', () => chained('10-calico.conflist'));
  });

  it('logs failures when nobody listens for errors, and survives a listener that throws', async () => {
    const logged: string[] = [];
    writeFileSync(join(confDir, '10-calico.conflist'), conflist('k8s-pod-network', ['calico']));
    const handle = await install({ logger: { error: (message: string) => logged.push(message) } });
    handle.on('chained', () => {
      throw new Error('listener broke');
    });
    writeFileSync(join(confDir, '10-calico.conflist'), '[]');
    await waitFor('the failure logged', () => logged.some((m) => m.includes('is not a JSON object')));
    writeFileSync(join(confDir, '10-calico.conflist'), conflist('k8s-pod-network', ['calico']));
    await waitFor('the entry chained again', () => chained('10-calico.conflist'));
    await waitFor('the listener failure logged', () => logged.some((m) => m.includes('listener broke')));
  });

  it('stops watching on close(), and on dispose', async () => {
    writeFileSync(join(confDir, '10-calico.conflist'), conflist('k8s-pod-network', ['calico']));
    const handle = await install();
    await handle.close();
    expect(handle.closed).toBe(true);
    writeFileSync(join(confDir, '10-calico.conflist'), conflist('k8s-pod-network', ['calico', 'bandwidth']));
    await sleep(QUIET_MS);
    expect(types('10-calico.conflist')).toEqual(['calico', 'bandwidth']);
    expect(handle.configWrites).toBe(1);

    {
      await using disposed = await install();
      expect(disposed.configWrites).toBe(1);
    }
    writeFileSync(join(confDir, '10-calico.conflist'), conflist('k8s-pod-network', ['calico']));
    await sleep(QUIET_MS);
    expect(types('10-calico.conflist')).toEqual(['calico']);
  });
});
