// The real podnet-cni binary against a stand-in agent (lib/unix's SeqpacketServer in a temp dir): VERSION answered
// by the plugin, the agent's absence per command, the deadline, the request exactly as docs/cni-protocol.md says,
// the answer reproduced exactly, and every broken answer treated as no answer.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { cniPluginPath } from '../../lib/cni/plugin-path.js';
import { encodeAnswer } from '../../lib/cni/wire.js';
import { Netns } from '../../lib/netns.js';
import { cniEnv, config, parseError, PLUGIN, runPlugin, StandInAgent } from './helpers/plugin-run.js';

const SUPPORTED = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'];

describe('podnet-cni binary', () => {
  it('is statically linked as the package ships it', () => {
    // ldd exits 1 for a static executable, saying so.
    const run = spawnSync('ldd', [cniPluginPath()], { encoding: 'utf8' });
    expect(`${run.stdout}${run.stderr}`).toMatch(/not a dynamic executable/);
  });
});

describe('podnet-cni VERSION', () => {
  it.each([
    { name: 'the config version', stdin: '{"cniVersion":"0.4.0"}', version: '0.4.0' },
    { name: 'the default for an empty stdin', stdin: '', version: '1.1.0' },
    { name: 'the default for a config without cniVersion', stdin: '{}', version: '1.1.0' },
    { name: 'the default for stdin that is not JSON', stdin: 'nope', version: '1.1.0' },
  ])('answers with $name and the supported versions', async ({ stdin, version }) => {
    const run = await runPlugin(cniEnv('VERSION', { CNI_NETNS: 'dummy', CNI_IFNAME: 'dummy' }), stdin);
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout.toString())).toEqual({ cniVersion: version, supportedVersions: SUPPORTED });
    expect(run.stderr.toString()).toBe('');
  });

  it('never contacts the agent', async () => {
    using agent = new StandInAgent();
    const run = await runPlugin(cniEnv('VERSION'), config({ socketPath: agent.socketPath }));
    expect(run.status).toBe(0);
    await expect(agent.accept(200)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  });

  it('echoes a cniVersion with quotes, controls and non-ASCII as valid JSON', async () => {
    const odd = 'v"1\\\n\t\u0001\u007f é 😀';
    const run = await runPlugin(cniEnv('VERSION'), JSON.stringify({ cniVersion: odd }));
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout.toString()).cniVersion).toBe(odd);
  });
});

describe('podnet-cni CNI_COMMAND', () => {
  it.each([
    { name: 'unset', command: undefined, says: 'CNI_COMMAND is not set' },
    { name: 'unknown', command: 'FROB', says: "CNI_COMMAND is 'FROB'" },
    { name: 'lower case', command: 'add', says: "CNI_COMMAND is 'add'" },
  ])('$name: code 4 naming CNI_COMMAND, exit 1', async ({ command, says }) => {
    using agent = new StandInAgent();
    const run = await runPlugin(cniEnv('ADD', { CNI_COMMAND: command }), config({ socketPath: agent.socketPath }));
    expect(run.status).toBe(1);
    const err = parseError(run.stdout);
    expect(err).toMatchObject({ cniVersion: '1.0.0', code: 4, msg: 'invalid CNI_COMMAND' });
    expect(err.details).toContain(says);
    await expect(agent.accept(100)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  });

  it('a CNI_ variable set twice is code 4 naming it (the agent could read the other value)', async () => {
    using agent = new StandInAgent();
    // Neither spawn's env object nor env(1) holds a name twice: python's ctypes calls execve with such an environ.
    const pairs = [...Object.entries(cniEnv('ADD')).map(([k, v]) => `${k}=${v}`), 'CNI_IFNAME=eth1'];
    const exec = 'import ctypes, sys\n' +
      'e = [a.encode() for a in sys.argv[2:]] + [None]\n' +
      'ctypes.CDLL(None).execve(sys.argv[1].encode(), (ctypes.c_char_p * 2)(sys.argv[1].encode(), None), (ctypes.c_char_p * len(e))(*e))\n' +
      'sys.exit(127)\n';
    const run = spawnSync('python3', ['-c', exec, PLUGIN, ...pairs], { input: config({ socketPath: agent.socketPath }) });
    expect(run.status).toBe(1);
    expect(parseError(run.stdout)).toMatchObject({ code: 4, msg: 'invalid CNI environment', details: 'CNI_IFNAME is set more than once' });
    await expect(agent.accept(100)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  });
});

describe('podnet-cni environment limits', () => {
  const many = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`CNI_X${i}`, 'v']));
  const big = Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`CNI_BIG${i}`, 'b'.repeat(16000)]));
  it.each([
    { name: 'an entry over 16384 bytes', extra: { CNI_ARGS: 'a'.repeat(16384) }, says: 'environment variable CNI_ARGS is 16393 bytes, over 16384' },
    { name: 'more than 64 CNI_ variables', extra: many, says: '66 CNI_ environment variables, over 64' },
    { name: 'a header over one message', extra: big, says: 'the CNI_ environment variables take 80261 bytes, over one 65536-byte message' },
  ])('$name: code 4 without contacting the agent (DEL: exit 0)', async ({ extra, says }) => {
    using agent = new StandInAgent();
    const add = await runPlugin(cniEnv('ADD', extra), config({ socketPath: agent.socketPath }));
    expect(add.status).toBe(1);
    expect(parseError(add.stdout)).toMatchObject({ code: 4, msg: 'invalid CNI environment', details: says });
    const del = await runPlugin(cniEnv('DEL', extra), config({ socketPath: agent.socketPath }));
    expect(del.status).toBe(0);
    expect(del.stderr.toString()).toContain(says);
    await expect(agent.accept(100)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  });

  it('64 entries, the most a request carries, are forwarded', async () => {
    using agent = new StandInAgent();
    // 58 entries next to the 6 usual ones: 64, the most a request carries, in about 55 KiB.
    const extra = Object.fromEntries(Array.from({ length: 58 }, (_, i) => [`CNI_E${String(i).padStart(2, '0')}`, 'e'.repeat(900)]));
    const served = agent.serveOnce({ exitStatus: 0, stdout: new Uint8Array(), stderr: new Uint8Array() });
    const run = await runPlugin(cniEnv('ADD', extra), config({ socketPath: agent.socketPath }));
    const request = await served;
    expect(run.status).toBe(0);
    expect(request.header.env).toHaveLength(64);
  });
});

describe('podnet-cni environment encoding', () => {
  it('a CNI_ value that is not UTF-8 is code 4 naming it (the agent reads entries as UTF-8)', async () => {
    using agent = new StandInAgent();
    // spawn's env takes strings only: the same ctypes execve as above passes the raw bytes.
    const exec = 'import ctypes, sys\n' +
      'e = [a.encode() for a in sys.argv[2:]] + [b"CNI_ARGS=K8S_POD_NAME=\\xff", None]\n' +
      'ctypes.CDLL(None).execve(sys.argv[1].encode(), (ctypes.c_char_p * 2)(sys.argv[1].encode(), None), (ctypes.c_char_p * len(e))(*e))\n' +
      'sys.exit(127)\n';
    const pairs = Object.entries(cniEnv('ADD', { CNI_ARGS: undefined })).map(([k, v]) => `${k}=${v}`);
    const run = spawnSync('python3', ['-c', exec, PLUGIN, ...pairs], { input: config({ socketPath: agent.socketPath }) });
    expect(run.status).toBe(1);
    expect(parseError(run.stdout)).toMatchObject({ code: 4, msg: 'invalid CNI environment', details: 'CNI_ARGS is not UTF-8' });
    await expect(agent.accept(100)).rejects.toMatchObject({ code: 'ETIMEDOUT' });
  });
});

describe('podnet-cni without an agent', () => {
  const missing = '/nonexistent-podnet-test/cni.sock';

  it.each(['ADD', 'CHECK'])('%s prints code 11 naming the socket and exits 1', async (command) => {
    const run = await runPlugin(cniEnv(command), config({ socketPath: missing }));
    expect(run.status).toBe(1);
    const err = parseError(run.stdout);
    expect(err.cniVersion).toBe('1.0.0');
    expect(err.code).toBe(11);
    expect(err.msg).toBe(`podnet agent not reachable at ${missing}: connect: No such file or directory (ENOENT)`);
    expect(err.details).toContain('ENOENT');
  });

  it('STATUS prints code 50 and exits 1', async () => {
    const run = await runPlugin(cniEnv('STATUS'), config({ cniVersion: '1.1.0', socketPath: missing }));
    expect(run.status).toBe(1);
    expect(parseError(run.stdout)).toMatchObject({ cniVersion: '1.1.0', code: 50 });
    expect(parseError(run.stdout).msg).toContain(missing);
  });

  it.each(['DEL', 'GC'])('%s exits 0 with nothing on stdout and a line on stderr', async (command) => {
    const run = await runPlugin(cniEnv(command), config({ socketPath: missing }));
    expect(run.status).toBe(0);
    expect(run.stdout.toString()).toBe('');
    expect(run.stderr.toString()).toMatch(new RegExp(`^podnet-cni: ${command}: podnet agent not reachable at ${missing}: .*\\n$`));
  });

  it.skipIf(existsSync('/var/run/podnet/cni.sock'))('uses /var/run/podnet/cni.sock when the config names no socket', async () => {
    const run = await runPlugin(cniEnv('ADD'), config({}));
    expect(run.status).toBe(1);
    expect(parseError(run.stdout).msg).toBe('podnet agent not reachable at /var/run/podnet/cni.sock: connect: No such file or directory (ENOENT)');
  });

  it('a stream socket at socketPath (a listener of another type) is EPROTOTYPE', async () => {
    using agent = new StandInAgent();
    const path = join(agent.dir, 'stream.sock');
    const stream = createServer();
    await new Promise<void>((resolve) => stream.listen(path, resolve));
    try {
      const run = await runPlugin(cniEnv('ADD'), config({ socketPath: path }));
      expect(run.status).toBe(1);
      expect(parseError(run.stdout).msg).toBe(`podnet agent not reachable at ${path}: connect: Protocol wrong type for socket (EPROTOTYPE)`);
    } finally {
      await new Promise((resolve) => stream.close(resolve));
    }
  });
});

describe('podnet-cni deadline', () => {
  it('an agent that accepts and never answers gives code 11 after timeoutMs', async () => {
    using agent = new StandInAgent();
    const accepted = agent.accept();
    const run = await runPlugin(cniEnv('ADD'), config({ socketPath: agent.socketPath, timeoutMs: 300 }));
    using conn = await accepted;
    expect(run.status).toBe(1);
    const err = parseError(run.stdout);
    expect(err.code).toBe(11);
    expect(err.msg).toBe(`podnet agent not reachable at ${agent.socketPath}: no answer within 300 ms`);
    expect(run.elapsedMs).toBeGreaterThanOrEqual(300);
    // Lateness bounded with a wide margin: the machine is small and shared.
    expect(run.elapsedMs).toBeLessThan(5000);
    expect(conn.closed).toBe(false);
  });

  it('an agent that never accepts (nothing reads the request) still ends at the deadline', async () => {
    using agent = new StandInAgent();
    const run = await runPlugin(cniEnv('DEL'), config({ socketPath: agent.socketPath, timeoutMs: 300 }));
    expect(run.status).toBe(0);
    expect(run.stderr.toString()).toContain('no answer within 300 ms');
    expect(run.elapsedMs).toBeLessThan(5000);
  });
});

describe('podnet-cni request', () => {
  it('forwards the CNI_ entries in environ order, nothing else, and stdin unchanged', async () => {
    using agent = new StandInAgent();
    const stdin = config({ socketPath: agent.socketPath, prevResult: { cniVersion: '1.0.0', ips: [] } });
    const env = { HOME: '/root', CNI_COMMAND: 'ADD', PATH: '/usr/bin', CNI_CONTAINERID: 'abc', CNI_NETNS: '', CNI_IFNAME: 'eth0', CNI_ARGS: 'A=1;B=2', XCNI_NOT: 'x', CNI_PATH: '/opt/cni/bin' };
    const served = agent.serveOnce({ exitStatus: 0, stdout: Buffer.from('{}'), stderr: new Uint8Array() });
    const run = await runPlugin(env, stdin);
    const request = await served;
    expect(run.status).toBe(0);
    expect(request.header.env).toEqual([
      ['CNI_COMMAND', 'ADD'],
      ['CNI_CONTAINERID', 'abc'],
      ['CNI_NETNS', ''],
      ['CNI_IFNAME', 'eth0'],
      ['CNI_ARGS', 'A=1;B=2'],
      ['CNI_PATH', '/opt/cni/bin'],
    ]);
    expect(request.header).toMatchObject({ hasNetnsFd: false, netnsErrno: 0, stdinLength: Buffer.byteLength(stdin) });
    expect(request.fds).toHaveLength(0);
    expect(request.config.equals(Buffer.from(stdin))).toBe(true);
  });

  it('sends a 300 KiB config in 64 KiB chunks, byte for byte', async () => {
    using agent = new StandInAgent();
    const padding = Array.from({ length: 300 * 1024 }, (_, i) => String.fromCharCode(0x61 + (i % 26))).join('');
    const stdin = Buffer.from(config({ socketPath: agent.socketPath, padding, note: 'é😀' }));
    const served = agent.serveOnce({ exitStatus: 0, stdout: new Uint8Array(), stderr: new Uint8Array() });
    const run = await runPlugin(cniEnv('ADD'), stdin);
    const request = await served;
    expect(run.status).toBe(0);
    expect(request.header.stdinLength).toBe(stdin.byteLength);
    expect(request.chunks.map((c) => c.byteLength)).toEqual([65536, 65536, 65536, 65536, stdin.byteLength - 4 * 65536]);
    expect(request.config.equals(stdin)).toBe(true);
  });

  it('sends no config messages for an empty-looking but valid config and a 1 MiB config whole', async () => {
    using agent = new StandInAgent();
    const base = config({ socketPath: agent.socketPath, pad: '' });
    const stdin = Buffer.from(base.replace('"pad":""', `"pad":"${'x'.repeat(1024 * 1024 - base.length)}"`));
    expect(stdin.byteLength).toBe(1024 * 1024);
    const served = agent.serveOnce({ exitStatus: 0, stdout: new Uint8Array(), stderr: new Uint8Array() });
    const run = await runPlugin(cniEnv('ADD'), stdin);
    const request = await served;
    expect(run.status).toBe(0);
    expect(request.chunks).toHaveLength(16);
    expect(request.config.equals(stdin)).toBe(true);
  });

  it('a CNI_NETNS path that does not exist: no fd, netnsErrno ENOENT', async () => {
    using agent = new StandInAgent();
    const served = agent.serveOnce({ exitStatus: 0, stdout: new Uint8Array(), stderr: new Uint8Array() });
    const run = await runPlugin(cniEnv('DEL', { CNI_NETNS: join(agent.dir, 'gone') }), config({ socketPath: agent.socketPath }));
    const request = await served;
    expect(run.status).toBe(0);
    expect(request.header).toMatchObject({ hasNetnsFd: false, netnsErrno: osConstants.errno.ENOENT });
    expect(request.fds).toHaveLength(0);
  });

  it('a FIFO at CNI_NETNS does not block the plugin: its fd goes to the agent, which judges it', async () => {
    using agent = new StandInAgent();
    const fifo = join(agent.dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const served = agent.serveOnce({ exitStatus: 0, stdout: new Uint8Array(), stderr: new Uint8Array() });
    const run = await runPlugin(cniEnv('ADD', { CNI_NETNS: fifo }), config({ socketPath: agent.socketPath, timeoutMs: 5000 }));
    const request = await served;
    try {
      expect(run.status).toBe(0);
      expect(request.header).toMatchObject({ hasNetnsFd: true, netnsErrno: 0 });
      expect(request.fds).toHaveLength(1);
      expect(() => Netns.fromFd(request.fds[0]!.fd)).toThrow(expect.objectContaining({ code: 'ERR_NOT_NETNS' }));
    } finally {
      for (const fd of request.fds) fd.close();
    }
  });
});

describe('podnet-cni answer', () => {
  it.each([
    { name: 'a result and exit 0', exitStatus: 0, stdout: Buffer.from('{"cniVersion":"1.0.0","ips":[]}\n'), stderr: Buffer.alloc(0) },
    { name: 'an error and exit 1 with logs', exitStatus: 1, stdout: Buffer.from('{"code":7,"msg":"x"}'), stderr: Buffer.from('log line\n') },
    { name: 'exit 255 and no output', exitStatus: 255, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) },
    { name: 'binary bytes, stdout of 200 KiB and stderr of 64 KiB', exitStatus: 3, stdout: Buffer.from(Array.from({ length: 200 * 1024 }, (_, i) => (i * 7) & 255)), stderr: Buffer.alloc(65536, 0xff) },
    { name: 'stdout of exactly 1 MiB', exitStatus: 0, stdout: Buffer.alloc(1024 * 1024, 0x7b), stderr: Buffer.from('e') },
  ])('reproduces $name exactly', async (answer) => {
    using agent = new StandInAgent();
    const served = agent.serveOnce(answer);
    const run = await runPlugin(cniEnv('ADD'), config({ socketPath: agent.socketPath }));
    await served;
    expect(run.status).toBe(answer.exitStatus);
    expect(run.stdout.equals(answer.stdout)).toBe(true);
    expect(run.stderr.equals(answer.stderr)).toBe(true);
  });

  it('answers for DEL and GC are reproduced too, failures included', async () => {
    using agent = new StandInAgent();
    const served = agent.serveOnce({ exitStatus: 1, stdout: Buffer.from('{"code":11}'), stderr: Buffer.from('busy') });
    const run = await runPlugin(cniEnv('GC'), config({ socketPath: agent.socketPath }));
    await served;
    expect(run.status).toBe(1);
    expect(run.stdout.toString()).toBe('{"code":11}');
    expect(run.stderr.toString()).toBe('busy');
  });
});

function header(f: { magic?: string; version?: number; flags?: number; exit?: number; out?: number; err?: number; size?: number }): Buffer {
  const b = Buffer.alloc(20);
  b.write(f.magic ?? 'PNCA', 0, 'latin1');
  b.writeUInt16LE(f.version ?? 1, 4);
  b.writeUInt16LE(f.flags ?? 0, 6);
  b.writeUInt32LE(f.exit ?? 0, 8);
  b.writeUInt32LE(f.out ?? 0, 12);
  b.writeUInt32LE(f.err ?? 0, 16);
  return f.size === undefined ? b : Buffer.concat([b, Buffer.alloc(Math.max(0, f.size - 20))]).subarray(0, f.size);
}

describe('podnet-cni broken answers', () => {
  // Each case is what the agent sends after reading the request; then it closes. The plugin prints code 11.
  const cases: { name: string; messages: Buffer[]; fd?: boolean; says: string }[] = [
    { name: 'bad magic', messages: [header({ magic: 'PNCQ' })], says: 'bad magic' },
    { name: 'version 2', messages: [header({ version: 2 })], says: 'answer version 2' },
    { name: 'nonzero flags', messages: [header({ flags: 1 })], says: 'answer flags 1' },
    { name: 'exit status 256', messages: [header({ exit: 256 })], says: 'exit status 256' },
    { name: 'stdout over 1 MiB', messages: [header({ out: 1024 * 1024 + 1 })], says: 'stdout of 1048577 bytes' },
    { name: 'stderr over 64 KiB', messages: [header({ err: 65537 })], says: 'stderr of 65537 bytes' },
    { name: 'a 19-byte header', messages: [header({ size: 19 })], says: 'answer header of 19 bytes' },
    { name: 'a 21-byte header', messages: [header({ size: 21 })], says: 'answer header of 21 bytes' },
    { name: 'truncated stdout', messages: [header({ out: 10 }), Buffer.from('12345')], says: 'closed the connection before the answer was complete' },
    { name: 'stdout longer than announced', messages: [header({ out: 4 }), Buffer.from('12345')], says: 'stdout longer than the 4 bytes' },
    { name: 'a chunk spanning stdout and stderr', messages: [header({ out: 2, err: 2 }), Buffer.from('abcd')], says: 'stdout longer than the 2 bytes' },
    { name: 'stderr longer than announced', messages: [header({ out: 1, err: 1 }), Buffer.from('a'), Buffer.from('bc')], says: 'stderr longer than the 1 bytes' },
    { name: 'no answer at all', messages: [], says: 'closed the connection without answering' },
    { name: 'an fd attached to the header', messages: [header({})], fd: true, says: 'the answer carried file descriptors' },
  ];

  it.each(cases)('$name: code 11', async ({ messages, fd, says }) => {
    using agent = new StandInAgent();
    const served = (async () => {
      using conn = await agent.accept();
      const request = await agent.readRequest(conn);
      for (const [i, m] of messages.entries()) await conn.send(m, { fds: fd && i === 0 ? [0] : [], timeoutMs: 10_000 });
      return request;
    })();
    const run = await runPlugin(cniEnv('CHECK'), config({ socketPath: agent.socketPath, timeoutMs: 10_000 }));
    await served;
    expect(run.status).toBe(1);
    const err = parseError(run.stdout);
    expect(err.code).toBe(11);
    expect(err.msg).toContain(`podnet agent not reachable at ${agent.socketPath}: broken answer: `);
    expect(err.msg).toContain(says);
    expect(run.stderr.toString()).toBe('');
  });

  it('a well-formed answer after encodeAnswer round-trips where the broken ones do not (the table is not vacuous)', async () => {
    using agent = new StandInAgent();
    const messages = encodeAnswer({ exitStatus: 0, stdout: Buffer.from('ok'), stderr: Buffer.alloc(0) });
    expect(Buffer.from(messages[0]!).equals(header({ out: 2 }))).toBe(true);
    const served = agent.serveOnce({ exitStatus: 0, stdout: Buffer.from('ok'), stderr: Buffer.alloc(0) });
    const run = await runPlugin(cniEnv('CHECK'), config({ socketPath: agent.socketPath }));
    await served;
    expect(run.status).toBe(0);
    expect(run.stdout.toString()).toBe('ok');
  });
});
