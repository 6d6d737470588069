// Netns.create on the real kernel: an anonymous namespace of its own with loopback up, made without changing the
// namespace of any thread that lives on, and gone once its last handle closes.
import { execFileSync } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { expect, it } from 'vitest';

import { Netns, Rtnetlink } from '../lib/index.js';
import { native } from '../lib/native.js';
import { isCloexec } from './helpers/fds.js';
import { threadNamespaces, withNetns } from './helpers/netns.js';
import { describePrivileged } from './helpers/privileged.js';

function namedInodes(): number[] {
  try {
    return readdirSync('/run/netns').flatMap((name) => {
      try {
        using ns = Netns.named(name);
        return [ns.inode];
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describePrivileged('Netns.create', () => {
  it('makes a namespace that is not this process\'s, anonymous, close-on-exec, with loopback up', async () => {
    using ns = await Netns.create();
    using here = Netns.current();
    expect(ns.equals(here)).toBe(false);
    expect(ns.path).toBe(`/proc/self/fd/${ns.fd}`);
    expect(readlinkSync(ns.path)).toBe(`net:[${ns.inode}]`);
    expect(isCloexec(ns.fd)).toBe(true);
    expect(namedInodes()).not.toContain(ns.inode);

    const rt = await Rtnetlink.open({ netns: ns });
    try {
      const links = await rt.links();
      expect(links.find((l) => l.name === 'lo')).toMatchObject({ up: true });
      const addresses = await rt.addresses({ link: 'lo', family: 4 });
      expect(addresses.map((a) => `${a.address}/${a.prefixLength}`)).toEqual(['127.0.0.1/8']);
    } finally {
      rt.close();
    }
    // Native work entered through the handle runs in it.
    await expect(native.netnsInodeInside(ns.fd)).resolves.toBe(ns.inode);
  });

  it('makes a new namespace each call, concurrent calls too, and leaves every thread where it was', async () => {
    const original = readlinkSync('/proc/self/ns/net');
    const made = await Promise.all(Array.from({ length: 16 }, () => Netns.create()));
    try {
      expect(new Set(made.map((ns) => ns.id)).size).toBe(16);
      for (const [tid, netns] of threadNamespaces()) expect(`${tid} ${netns}`).toBe(`${tid} ${original}`);
    } finally {
      for (const ns of made) ns.close();
    }
    expect(readlinkSync('/proc/self/ns/net')).toBe(original);
  });

  it('lets the namespace go once its last handle is closed: a veth with an end inside goes with it', async () => {
    await withNetns(async (outside) => {
      const ns = await Netns.create();
      try {
        // iproute2 opens a netns given as a path; this process's fd is reachable to it through /proc/<pid>/fd.
        outside.ip('link', 'add', 'pf-out', 'type', 'veth', 'peer', 'name', 'pf-in', 'netns', `/proc/${process.pid}/fd/${ns.fd}`);
        const rt = await Rtnetlink.open({ netns: ns });
        try {
          expect((await rt.links()).map((l) => l.name)).toContain('pf-in');
        } finally {
          rt.close();
        }
        // A duplicate keeps it: closing one of two handles changes nothing.
        const copy = ns.reopen();
        ns.close();
        await new Promise((r) => setTimeout(r, 200));
        expect(outside.ip('-o', 'link', 'show')).toContain('pf-out');
        copy.close();
      } finally {
        ns.close();
      }
      await until('the veth end outside goes', () => !outside.ip('-o', 'link', 'show').includes('pf-out'));
    });
  });

  it('rejects with EPERM from unshare, naming the operation, in a process without CAP_SYS_ADMIN, leaking no fd', () => {
    const dist = new URL('../dist/index.js', import.meta.url);
    const script = `
      const { Netns, PodnetSystemError } = await import(${JSON.stringify(dist.href)});
      const { readdirSync } = await import('node:fs');
      const before = readdirSync('/proc/self/fd').length;
      let out;
      try {
        await Netns.create();
        out = { resolved: true };
      } catch (err) {
        out = { system: err instanceof PodnetSystemError, code: err.code, errno: err.errno, syscall: err.syscall, operation: err.operation, message: err.message, stack: err.stack.includes('--- async call site ---') };
      }
      out.fdsLeft = readdirSync('/proc/self/fd').length - before;
      console.log(JSON.stringify(out));
    `;
    // Root without CAP_SYS_ADMIN in its bounding set: execve grants it every other capability, not this one.
    const stdout = execFileSync('setpriv', ['--bounding-set', '-sys_admin', process.execPath, '--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: process.env,
    });
    expect(JSON.parse(stdout)).toEqual({
      system: true,
      code: 'EPERM',
      errno: -1,
      syscall: 'unshare',
      operation: 'create',
      message: 'EPERM: operation not permitted, unshare',
      stack: true,
      fdsLeft: 0,
    });
  });
});
