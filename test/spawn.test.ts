import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import {
  InvalidArgumentError,
  Netns,
  PodnetSystemError,
  ProcessOutputLimitError,
  ProcessTimeoutError,
  SAFE_PATH,
  runInNetns,
  startInNetns,
} from '../lib/index.js';
import { openFds } from './helpers/fds.js';
import { withNetns } from './helpers/netns.js';
import { describePrivileged } from './helpers/privileged.js';
import { rejection } from './helpers/rejection.js';
import { alive, until } from './helpers/processes.js';

function childPids(): string[] {
  const pids: string[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      pids.push(...readFileSync(`/proc/self/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
    } catch {
      // thread ended meanwhile
    }
  }
  return pids.sort();
}



describe('runInNetns (any user, own namespace)', () => {
  it('writes stdin, closes it, and collects stdout exactly', async () => {
    const result = await runInNetns(undefined, ['cat'], { stdin: 'hello\nworld\0bytes' });
    expect(result).toMatchObject({ exitCode: 0, signal: null, stdout: 'hello\nworld\0bytes', stderr: '' });
    expect(result.path).toMatch(/^\/(usr\/)?bin\/cat$/);
  });

  it('closes stdin at once when none is given', async () => {
    const result = await runInNetns(undefined, ['cat'], { timeoutMs: 5000 });
    expect(result).toMatchObject({ exitCode: 0, stdout: '' });
  });

  it('moves megabytes through stdin and stdout without deadlock', async () => {
    const big = 'x'.repeat(4 * 1024 * 1024 - 3) + 'end';
    const result = await runInNetns(undefined, ['cat'], { stdin: big });
    expect(result.stdout.length).toBe(big.length);
    expect(result.stdout === big).toBe(true);
  });

  it('reports the exit status and stderr of a failing program', async () => {
    const result = await runInNetns(undefined, [process.execPath, '-e', 'process.stderr.write("bad"); process.exit(7)']);
    expect(result).toMatchObject({ exitCode: 7, signal: null, stdout: '', stderr: 'bad' });
  });

  it('tells a program that exits 127 from one that could not start', async () => {
    const exited = await runInNetns(undefined, [process.execPath, '-e', 'process.exit(127)']);
    expect(exited.exitCode).toBe(127);
    const err = await rejection(runInNetns(undefined, ['podnet-no-such-program']));
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ENOENT', errno: -2, syscall: 'execve', path: 'podnet-no-such-program' });
  });

  it('reports execve errors for absolute paths', async () => {
    expect(await rejection(runInNetns(undefined, ['/nonexistent/prog']))).toMatchObject({
      code: 'ENOENT',
      syscall: 'execve',
      path: '/nonexistent/prog',
    });
    const dir = mkdtempSync(join(tmpdir(), 'podnet-noexec-'));
    try {
      const file = join(dir, 'data');
      writeFileSync(file, 'not a program\n', { mode: 0o644 });
      expect(await rejection(runInNetns(undefined, [file]))).toMatchObject({ code: 'EACCES', syscall: 'execve', path: file });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports the signal that killed the program', async () => {
    const result = await runInNetns(undefined, [process.execPath, '-e', 'process.kill(process.pid, "SIGTERM")']);
    expect(result).toMatchObject({ exitCode: null, signal: 'SIGTERM' });
  });

  it('looks programs up on the safe PATH only and passes only the given environment', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podnet-path-'));
    const saved = process.env.PATH;
    try {
      writeFileSync(join(dir, 'podnet-planted'), '#!/bin/sh\necho planted\n');
      chmodSync(join(dir, 'podnet-planted'), 0o755);
      process.env.PATH = `${dir}:${saved ?? ''}`;
      process.env.PODNET_SECRET_PROBE = 'leak';
      expect(await rejection(runInNetns(undefined, ['podnet-planted']))).toMatchObject({ code: 'ENOENT' });
      const env = await runInNetns(undefined, ['env'], { env: { LC_ALL: 'C', A_B: 'x y' } });
      expect(env.stdout.trim().split('\n').sort()).toEqual(['A_B=x y', 'LC_ALL=C', `PATH=${SAFE_PATH}`]);
    } finally {
      process.env.PATH = saved;
      delete process.env.PODNET_SECRET_PROBE;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('leaks no fd of the parent into the child', async () => {
    using held = Netns.current();
    expect(readlinkSync(`/proc/self/fd/${held.fd}`)).toMatch(/^net:/);
    // ls opens one directory fd (3) to list its own fds.
    const result = await runInNetns(undefined, ['ls', '/proc/self/fd']);
    expect(result.stdout.trim().split('\n').sort()).toEqual(['0', '1', '2', '3']);
  });

  it('starts the program with default signal dispositions and nothing blocked', async () => {
    const status = (await runInNetns(undefined, ['cat', '/proc/self/status'])).stdout;
    expect(status).toMatch(/^SigBlk:\s+0+$/m);
    expect(status).toMatch(/^SigIgn:\s+0+$/m);
  });

  it('kills the program and its process group at the deadline and reaps it', async () => {
    const before = childPids();
    // sh starts in a millisecond where python3 took over 500 ms on a loaded machine: the pid must be out before the
    // deadline for the test to see the grandchild.
    const script = 'sleep 60 & echo $!; exec sleep 60';
    const started = Date.now();
    const err = await rejection(runInNetns(undefined, ['/bin/sh', '-c', script], { timeoutMs: 2000 }));
    const took = Date.now() - started;
    expect(err).toBeInstanceOf(ProcessTimeoutError);
    expect(err).toMatchObject({ code: 'ETIMEDOUT', timeoutMs: 2000, argv: ['/bin/sh', '-c', script] });
    expect(took).toBeGreaterThanOrEqual(1950);
    // Bounds how late the deadline fires, with a wide margin: the program would otherwise run for 60 s.
    expect(took).toBeLessThan(30_000);
    const grandchild = Number((err as ProcessTimeoutError).stdout.trim());
    expect(grandchild).toBeGreaterThan(0);
    expect(await until(() => !alive(grandchild), 3000)).toBe(true);
    expect(childPids()).toEqual(before);
  });

  it('kills a program that writes past the output limit', async () => {
    const err = await rejection(
      runInNetns(undefined, ['python3', '-c', 'import sys\nwhile True: sys.stdout.write("y" * 65536)'], {
        maxOutputBytes: 1 << 20,
      }),
    );
    expect(err).toBeInstanceOf(ProcessOutputLimitError);
    expect(err).toMatchObject({ code: 'ERR_OUTPUT_LIMIT', limitBytes: 1 << 20 });
  });

  it('leaves no zombie after many runs', async () => {
    const before = childPids();
    await Promise.all(Array.from({ length: 40 }, () => runInNetns(undefined, ['true'])));
    expect(childPids()).toEqual(before);
  });

  it('never blocks the event loop while a program runs', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    try {
      await runInNetns(undefined, ['sleep', '0.3']);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThanOrEqual(10);
  });

  it.each([
    ['argv', () => runInNetns(undefined, 'ls' as unknown as string[]), 'ERR_INVALID_ARG_TYPE'],
    ['argv', () => runInNetns(undefined, []), 'ERR_INVALID_ARG_VALUE'],
    ['argv[0]', () => runInNetns(undefined, ['']), 'ERR_INVALID_ARG_VALUE'],
    ['argv[0]', () => runInNetns(undefined, ['./relative']), 'ERR_INVALID_ARG_VALUE'],
    ['argv[1]', () => runInNetns(undefined, ['ls', 'a\0b']), 'ERR_INVALID_ARG_VALUE'],
    ['argv[1]', () => runInNetns(undefined, ['ls', 3 as unknown as string]), 'ERR_INVALID_ARG_TYPE'],
    ['env', () => runInNetns(undefined, ['ls'], { env: { 'A=B': 'x' } }), 'ERR_INVALID_ARG_VALUE'],
    ['env.A', () => runInNetns(undefined, ['ls'], { env: { A: 'x\0' } }), 'ERR_INVALID_ARG_VALUE'],
    ['timeoutMs', () => runInNetns(undefined, ['ls'], { timeoutMs: 0 }), 'ERR_INVALID_ARG_VALUE'],
    ['stdin', () => runInNetns(undefined, ['ls'], { stdin: 5 as unknown as string }), 'ERR_INVALID_ARG_TYPE'],
    ['netns', () => runInNetns(42 as unknown as string, ['ls']), 'ERR_INVALID_ARG_VALUE'],
  ])('checks %s before starting anything (%#)', async (argument, call, code) => {
    const err = await rejection(call());
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ code, argument });
  });
});

describe('startInNetns (input written after the start)', () => {
  it('runs the program before its input exists, then feeds what is written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'podnet-start-'));
    try {
      const marker = join(dir, 'started');
      const program = startInNetns(undefined, [
        process.execPath,
        '-e',
        `require('fs').writeFileSync(${JSON.stringify(marker)}, ''); process.stdin.pipe(process.stdout)`,
      ]);
      // The program is running (it wrote its marker) while its stdin is still open and empty.
      for (let i = 0; i < 500 && !existsSync(marker); i++) await new Promise((r) => setTimeout(r, 10));
      expect(existsSync(marker)).toBe(true);
      program.write('a');
      program.write(Buffer.from('b'));
      program.end('c');
      const result = await program.result;
      expect(result).toMatchObject({ exitCode: 0, stdout: 'abc' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('moves megabytes written in pieces, and end() without data closes stdin', async () => {
    const program = startInNetns(undefined, ['wc', '-c']);
    const piece = Buffer.alloc(64 * 1024, 0x61);
    for (let i = 0; i < 64; i++) program.write(piece);
    program.end();
    expect((await program.result).stdout.trim()).toBe(String(64 * 64 * 1024));
    const empty = startInNetns(undefined, ['wc', '-c']);
    empty.end();
    expect((await empty.result).stdout.trim()).toBe('0');
  });

  it('releases its eventfd when the program ends or its arguments are refused, not at some later GC', async () => {
    const eventfds = () => [...openFds().values()].filter((target) => target === 'anon_inode:[eventfd]').length;
    const before = eventfds();
    // cat waits for its input: both feeds are in use until end().
    const programs = [startInNetns(undefined, ['cat']), startInNetns(undefined, ['cat'])];
    expect(eventfds()).toBe(before + 2);
    programs[0]!.end('x');
    programs[1]!.end();
    for (const p of programs) expect((await p.result).exitCode).toBe(0);
    expect(eventfds()).toBe(before);
    // A program that ends without reading its input releases its feed all the same.
    const quick = startInNetns(undefined, ['true']);
    expect((await quick.result).exitCode).toBe(0);
    expect(eventfds()).toBe(before);
    expect(() => startInNetns(undefined, [])).toThrow(InvalidArgumentError);
    expect(eventfds()).toBe(before);
    // Writing to a feed whose program is over is ignored (its eventfd is gone).
    quick.write('late');
    programs[1]!.end('later');
  });

  it('resolves for a program that ends before its input, and ignores what comes after', async () => {
    const program = startInNetns(undefined, ['true']);
    expect((await program.result).exitCode).toBe(0);
    program.write('late');
    program.end('later');
  });

  it('a program left waiting for its input runs into its deadline and is reaped', async () => {
    const before = childPids();
    const program = startInNetns(undefined, ['cat'], { timeoutMs: 200 });
    const err = await rejection(program.result);
    expect(err).toBeInstanceOf(ProcessTimeoutError);
    expect(childPids()).toEqual(before);
  });

  it('checks its arguments before starting anything', () => {
    expect(() => startInNetns(undefined, [])).toThrow(InvalidArgumentError);
    expect(() => startInNetns(undefined, ['cat'], { stdin: 'x' } as never)).toThrow(InvalidArgumentError);
    const program = startInNetns(undefined, ['cat']);
    expect(() => program.write(5 as unknown as string)).toThrow(InvalidArgumentError);
    program.end();
    return program.result;
  });
});

describePrivileged('runInNetns (root, real namespaces)', () => {
  it('runs the program inside the given namespace, by handle or by path', async () => {
    await withNetns(async (tns) => {
      using ns = tns.open();
      const byHandle = await runInNetns(ns, ['readlink', '/proc/self/ns/net']);
      const byPath = await runInNetns(tns.path, ['readlink', '/proc/self/ns/net']);
      expect(byHandle.stdout.trim()).toBe(`net:[${ns.inode}]`);
      expect(byPath.stdout.trim()).toBe(`net:[${ns.inode}]`);
      const links = await runInNetns(ns, ['ip', '-o', 'link', 'show']);
      expect(links.stdout.trim().split('\n').map((l) => l.split(':')[1]!.trim())).toEqual(['lo']);
      expect(readlinkSync('/proc/self/ns/net')).not.toBe(`net:[${ns.inode}]`);
    });
  });

  it('keeps its own reference: closing the handle right after the call does not move the run', async () => {
    await withNetns(async (tns) => {
      const ns = tns.open();
      const inode = ns.inode;
      const running = runInNetns(ns, ['readlink', '/proc/self/ns/net']);
      ns.close();
      // Reuse the fd number for another namespace file: the run must not pick it up.
      using other = Netns.current();
      expect(other.fd).toBeGreaterThan(0);
      expect((await running).stdout.trim()).toBe(`net:[${inode}]`);
    });
  });

  it('keeps concurrent runs in their own namespaces', async () => {
    await withNetns(async (a, b) => {
      using nsA = a.open();
      using nsB = b.open();
      const jobs = Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? nsA : nsB));
      const seen = await Promise.all(jobs.map((ns) => runInNetns(ns, ['readlink', '/proc/self/ns/net'])));
      expect(seen.map((r) => r.stdout.trim())).toEqual(jobs.map((ns) => `net:[${ns.inode}]`));
    }, 2);
  });

  it('fails with ENOENT for a namespace path that does not exist', async () => {
    const err = await rejection(runInNetns('/run/netns/podnet-surely-missing', ['true']));
    expect(err).toMatchObject({ code: 'ENOENT', syscall: 'open', path: '/run/netns/podnet-surely-missing' });
    expect(existsSync('/run/netns/podnet-surely-missing')).toBe(false);
  });
});
