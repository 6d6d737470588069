import { spawn } from 'node:child_process';
import { readdirSync, readlinkSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Netns, PodnetError, PodnetSystemError } from '../lib/index.js';
import { native } from '../lib/native.js';
import { isCloexec } from './helpers/fds.js';
import { threadNamespaces, withNetns } from './helpers/netns.js';
import { describePrivileged } from './helpers/privileged.js';
import { thrown } from './helpers/rejection.js';

describe('Netns (any user)', () => {
  it('opens the current namespace with its device and inode as identity', () => {
    using ns = Netns.current();
    const st = statSync('/proc/self/ns/net');
    expect(ns.path).toBe('/proc/self/ns/net');
    expect(ns.id).toBe(`${st.dev}:${st.ino}`);
    expect(ns.inode).toBe(st.ino);
    expect(readlinkSync('/proc/self/ns/net')).toBe(`net:[${st.ino}]`);
  });

  it('recognises the same namespace opened twice, by other paths too', () => {
    using a = Netns.current();
    using b = Netns.fromPid(process.pid);
    using c = Netns.open(`/proc/${process.pid}/task/${process.pid}/ns/net`);
    expect(a.fd).not.toBe(b.fd);
    expect(a.equals(b)).toBe(true);
    expect(b.equals(c)).toBe(true);
    expect(a.id).toBe(c.id);
  });

  it('opens every fd close-on-exec', () => {
    using ns = Netns.current();
    expect(isCloexec(ns.fd)).toBe(true);
  });

  it('fails with ENOENT naming the path for a missing file', () => {
    const err = thrown(() => Netns.open('/nonexistent/podnet-netns'));
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ENOENT', errno: -2, syscall: 'open', path: '/nonexistent/podnet-netns' });
    expect((err as Error).message).toBe("ENOENT: no such file or directory, open '/nonexistent/podnet-netns'");
  });

  it.each([
    ['a regular file', '/proc/self/status'],
    ['a mount namespace', '/proc/self/ns/mnt'],
    ['a user namespace', '/proc/self/ns/user'],
    ['a directory', '/proc/self/ns'],
  ])('refuses %s with ERR_NOT_NETNS naming the path', (_name, path) => {
    const err = thrown(() => Netns.open(path));
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ERR_NOT_NETNS', errno: -22, path });
    expect((err as Error).message).toContain(path);
  });

  it('does not leak an fd when opening fails', () => {
    const before = readdirSync('/proc/self/fd').length;
    for (let i = 0; i < 50; i++) thrown(() => Netns.open('/proc/self/ns/mnt'));
    expect(readdirSync('/proc/self/fd').length).toBe(before);
  });

  it('fromPid fails with ENOENT for a process that does not exist', () => {
    const err = thrown(() => Netns.fromPid(0x7ffffff0));
    expect(err).toMatchObject({ code: 'ENOENT', path: `/proc/${0x7ffffff0}/ns/net` });
  });

  it.each([
    ['pid', () => Netns.fromPid(0), 'ERR_INVALID_ARG_VALUE'],
    ['pid', () => Netns.fromPid(1.5), 'ERR_INVALID_ARG_VALUE'],
    ['pid', () => Netns.fromPid('1' as unknown as number), 'ERR_INVALID_ARG_TYPE'],
    ['name', () => Netns.named('../etc'), 'ERR_INVALID_ARG_VALUE'],
    ['name', () => Netns.named(''), 'ERR_INVALID_ARG_VALUE'],
    ['name', () => Netns.named('a\0b'), 'ERR_INVALID_ARG_VALUE'],
    ['path', () => Netns.open(42 as unknown as string), 'ERR_INVALID_ARG_TYPE'],
  ])('checks %s before touching the system (%#)', (argument, call, code) => {
    const err = thrown(call);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ code, argument });
  });

  it('named() looks under /run/netns', () => {
    const err = thrown(() => Netns.named('podnet-surely-missing'));
    expect(err).toMatchObject({ code: 'ENOENT', path: '/run/netns/podnet-surely-missing' });
  });

  it('closes idempotently and refuses the fd afterwards', () => {
    const ns = Netns.current();
    const fd = ns.fd;
    ns.close();
    ns.close();
    expect(ns.closed).toBe(true);
    expect(() => readlinkSync(`/proc/self/fd/${fd}`)).toThrow();
    expect(thrown(() => ns.fd)).toMatchObject({ code: 'ERR_NETNS_CLOSED' });
    expect(thrown(() => ns.fd)).toBeInstanceOf(PodnetError);
  });

  it('closes on dispose (using)', () => {
    let fd: number;
    let handle: Netns;
    {
      using ns = Netns.current();
      handle = ns;
      fd = ns.fd;
      expect(readlinkSync(`/proc/self/fd/${fd}`)).toMatch(/^net:\[\d+\]$/);
    }
    expect(handle.closed).toBe(true);
    expect(() => readlinkSync(`/proc/self/fd/${fd}`)).toThrow();
  });

  it('runs native work in the current namespace through the netns mechanism', async () => {
    using ns = Netns.current();
    await expect(native.netnsInodeInside(ns.fd)).resolves.toBe(ns.inode);
  });
});

describePrivileged('Netns (root, real namespaces)', () => {
  it('opens a named namespace, distinct from ours, equal across paths', async () => {
    await withNetns((tns) => {
      using named = Netns.named(tns.name);
      using byPath = Netns.open(tns.path);
      using here = Netns.current();
      expect(named.equals(byPath)).toBe(true);
      expect(named.equals(here)).toBe(false);
      expect(named.id).not.toBe(here.id);
      expect(named.inode).toBe(statSync(tns.path).ino);
    });
  });

  it('fromPid finds the namespace a process runs in', async () => {
    await withNetns(async (tns) => {
      const child = spawn('ip', ['netns', 'exec', tns.name, 'sleep', '30'], { stdio: 'ignore' });
      try {
        // ip netns exec execs sleep in place, so the pid is the sleeper's once it has joined.
        using named = tns.open();
        let same = false;
        for (let i = 0; i < 200 && !same; i++) {
          using byPid = Netns.fromPid(child.pid!);
          same = byPid.equals(named);
          if (!same) await new Promise((r) => setTimeout(r, 10));
        }
        expect(same).toBe(true);
      } finally {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    });
  });

  it('keeps a namespace usable through a handle after `ip netns delete`', async () => {
    let handle: Netns | undefined;
    await withNetns((tns) => {
      handle = tns.open();
    });
    expect(handle!.closed).toBe(false);
    await expect(native.netnsInodeInside(handle!.fd)).resolves.toBe(handle!.inode);
    handle!.close();
  });

  it('leaves every thread in the original namespace after thousands of netns-scoped operations', async () => {
    const original = readlinkSync('/proc/self/ns/net');
    await withNetns(async (a, b) => {
      using nsA = a.open();
      using nsB = b.open();
      const rounds = 5;
      const perRound = 1000;
      for (let round = 0; round < rounds; round++) {
        const jobs: Promise<number>[] = [];
        const expected: number[] = [];
        for (let i = 0; i < perRound; i++) {
          const ns = i % 2 === 0 ? nsA : nsB;
          jobs.push(native.netnsInodeInside(ns.fd));
          expected.push(ns.inode);
        }
        expect(await Promise.all(jobs)).toEqual(expected);
        for (const [tid, netns] of threadNamespaces()) expect(`${tid} ${netns}`).toBe(`${tid} ${original}`);
      }
      // The libuv pool and the JS thread did the queuing: more than one thread took part.
      expect(threadNamespaces().size).toBeGreaterThan(1);
    }, 2);
    expect(readlinkSync('/proc/self/ns/net')).toBe(original);
  });
});

describe('Netns finalizer', () => {
  it('closes a handle nobody closed once it is collected', async () => {
    // A child with --expose-gc runs the built package: forgotten handles must not keep their fds.
    const { execFileSync } = await import('node:child_process');
    const { existsSync } = await import('node:fs');
    const dist = new URL('../dist/index.js', import.meta.url);
    expect(existsSync(dist), 'dist/ is built by npm install').toBe(true);
    const script = `
      const { Netns } = await import(${JSON.stringify(dist.href)});
      const { readdirSync } = await import('node:fs');
      const count = () => readdirSync('/proc/self/fd').length;
      const before = count();
      (() => { for (let i = 0; i < 100; i++) Netns.current(); })();
      const opened = count() - before;
      for (let i = 0; i < 20 && count() > before; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 10)); }
      console.log(JSON.stringify({ opened, left: count() - before }));
    `;
    const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ opened: 100, left: 0 });
  });
});

describe('Netns.reopen', () => {
  it('gives an independent handle on the same namespace, keeping the path', () => {
    using ns = Netns.current();
    const copy = ns.reopen();
    expect(copy.equals(ns)).toBe(true);
    expect(copy.path).toBe(ns.path);
    expect(copy.fd).not.toBe(ns.fd);
    expect({ id: copy.id, inode: copy.inode }).toEqual({ id: ns.id, inode: ns.inode });
    expect(isCloexec(copy.fd)).toBe(true);
    ns.close();
    expect(readlinkSync(`/proc/self/fd/${copy.fd}`)).toMatch(/^net:\[\d+\]$/);
    copy.close();
  });

  it('refuses a closed handle with ERR_NETNS_CLOSED, opening nothing', () => {
    const ns = Netns.current();
    ns.close();
    const before = readdirSync('/proc/self/fd').length;
    expect(() => ns.reopen()).toThrow(expect.objectContaining({ code: 'ERR_NETNS_CLOSED' }));
    expect(readdirSync('/proc/self/fd').length).toBe(before);
  });
});

describe('Netns.duplicate', () => {
  it("takes a close-on-exec handle of its own on an fd's namespace, leaving the fd the caller's", () => {
    using ns = Netns.current();
    const copy = Netns.duplicate(ns.fd);
    expect(copy.equals(ns)).toBe(true);
    expect(copy.fd).not.toBe(ns.fd);
    expect(isCloexec(copy.fd)).toBe(true);
    copy.close();
    expect(readlinkSync(`/proc/self/fd/${ns.fd}`)).toMatch(/^net:\[\d+\]$/);
  });

  it('refuses an fd that is not a network namespace or not open, leaking no fd', async () => {
    const before = readdirSync('/proc/self/fd').length;
    const { openSync, closeSync } = await import('node:fs');
    const file = openSync('/proc/self/stat', 'r');
    try {
      expect(() => Netns.duplicate(file)).toThrow(expect.objectContaining({ code: 'ERR_NOT_NETNS' }));
    } finally {
      closeSync(file);
    }
    expect(() => Netns.duplicate(1_000_000)).toThrow(expect.objectContaining({ code: 'EBADF', syscall: 'fcntl' }));
    expect(() => Netns.duplicate(-1)).toThrow(InvalidArgumentError);
    expect(readdirSync('/proc/self/fd').length).toBe(before);
  });
});
