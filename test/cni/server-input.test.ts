// Every bad input the CNI spec names, answered with its code before any handler runs; requests that break the wire
// protocol closed without an answer; peers that are not allowed refused.
import { execFile } from 'node:child_process';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { chmodSync, closeSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { encodeRequest, WIRE_LIMITS } from '../../lib/cni/wire.js';
import { type CniRequestMessage, DIAGNOSTICS_CHANNELS } from '../../lib/diagnostics.js';
import { Netns } from '../../lib/netns.js';
import { SeqpacketSocket } from '../../lib/unix/index.js';
import { fdsTo } from '../helpers/fds.js';
import { type AgentCall, invokeAgent } from './helpers/agent-client.js';
import { cniConfig, cniEnv, type CniErrorBody, PREV_RESULT_100, TempServer } from './helpers/cni-fixtures.js';

const run = promisify(execFile);

/** counting starts a server whose every handler counts its calls. */
async function counting(options: { mode?: number; allowedUids?: number[]; requestTimeoutMs?: number; maxConnections?: number } = {}) {
  const calls: string[] = [];
  const record = (req: { command: string }) => void calls.push(req.command);
  const t = await TempServer.start({ ...options, add: record, del: record, check: record, status: record, gc: record });
  return { t, calls };
}

const NO_CONTAINER = { CNI_CONTAINERID: undefined, CNI_NETNS: undefined, CNI_IFNAME: undefined };
const bad = (address: string) => ({ ...PREV_RESULT_100, ips: [{ address }] });

interface BadCase {
  name: string;
  env: [string, string][];
  stdin?: string | Uint8Array;
  /** 'self': this process's netns fd; 'file': a regular file's fd; none by default. */
  fd?: 'self' | 'file';
  netnsErrno?: number;
  code: number;
  /** What `details` names (the variable or config field). */
  details: string;
  /** The cniVersion echoed (default: the config's, 1.0.0). */
  cniVersion?: string;
}

const CASES: BadCase[] = [
  // 4: the environment
  { name: 'CNI_COMMAND unset', env: cniEnv('ADD', { CNI_COMMAND: undefined }), fd: 'self', code: 4, details: 'CNI_COMMAND' },
  { name: 'CNI_COMMAND lowercase add', env: cniEnv('add'), fd: 'self', code: 4, details: 'CNI_COMMAND' },
  { name: 'CNI_COMMAND unknown', env: cniEnv('UPDATE'), fd: 'self', code: 4, details: 'CNI_COMMAND' },
  { name: 'CNI_CONTAINERID unset for ADD', env: cniEnv('ADD', { CNI_CONTAINERID: undefined }), fd: 'self', code: 4, details: 'CNI_CONTAINERID' },
  { name: 'CNI_CONTAINERID unset for DEL', env: cniEnv('DEL', { CNI_CONTAINERID: undefined }), code: 4, details: 'CNI_CONTAINERID' },
  { name: 'CNI_CONTAINERID starting with -', env: cniEnv('ADD', { CNI_CONTAINERID: '-abc' }), fd: 'self', code: 4, details: 'CNI_CONTAINERID' },
  { name: 'CNI_CONTAINERID with /', env: cniEnv('ADD', { CNI_CONTAINERID: 'a/../b' }), fd: 'self', code: 4, details: 'CNI_CONTAINERID' },
  { name: 'CNI_CONTAINERID with a space', env: cniEnv('CHECK', { CNI_CONTAINERID: 'a b' }), fd: 'self', code: 4, details: 'CNI_CONTAINERID' },
  { name: 'CNI_IFNAME unset', env: cniEnv('ADD', { CNI_IFNAME: undefined }), fd: 'self', code: 4, details: 'CNI_IFNAME' },
  { name: 'CNI_IFNAME of 16 bytes', env: cniEnv('ADD', { CNI_IFNAME: 'abcdefghijklmnop' }), fd: 'self', code: 4, details: 'CNI_IFNAME' },
  { name: 'CNI_IFNAME .', env: cniEnv('ADD', { CNI_IFNAME: '.' }), fd: 'self', code: 4, details: 'CNI_IFNAME' },
  { name: 'CNI_IFNAME ..', env: cniEnv('DEL', { CNI_IFNAME: '..' }), code: 4, details: 'CNI_IFNAME' },
  { name: 'CNI_IFNAME with /', env: cniEnv('ADD', { CNI_IFNAME: 'eth/0' }), fd: 'self', code: 4, details: 'CNI_IFNAME' },
  { name: 'CNI_IFNAME with :', env: cniEnv('ADD', { CNI_IFNAME: 'eth0:1' }), fd: 'self', code: 4, details: 'CNI_IFNAME' },
  { name: 'CNI_IFNAME with a tab', env: cniEnv('ADD', { CNI_IFNAME: 'eth\t0' }), fd: 'self', code: 4, details: 'CNI_IFNAME' },
  { name: 'CNI_NETNS unset for ADD', env: cniEnv('ADD', { CNI_NETNS: undefined }), code: 4, details: 'CNI_NETNS' },
  { name: 'CNI_NETNS empty for CHECK', env: cniEnv('CHECK', { CNI_NETNS: '' }), code: 4, details: 'CNI_NETNS' },
  { name: 'CNI_NETNS that could not be opened (ENOENT) for ADD', env: cniEnv('ADD'), netnsErrno: 2, code: 4, details: 'CNI_NETNS' },
  { name: 'CNI_NETNS set but no fd for ADD', env: cniEnv('ADD'), code: 4, details: 'CNI_NETNS' },
  { name: 'a netns fd that is a regular file (ADD)', env: cniEnv('ADD'), fd: 'file', code: 4, details: 'CNI_NETNS' },
  { name: 'a netns fd that is a regular file (DEL)', env: cniEnv('DEL'), fd: 'file', code: 4, details: 'CNI_NETNS' },
  { name: 'a netns fd with CNI_NETNS unset (DEL)', env: cniEnv('DEL', { CNI_NETNS: undefined }), fd: 'self', code: 4, details: 'CNI_NETNS' },
  { name: 'CNI_ARGS with bytes that are not UTF-8', env: cniEnv('ADD', { CNI_ARGS: 'K8S_POD_NAME=\ud800' }), fd: 'self', code: 4, details: 'CNI_ARGS' },
  { name: 'CNI_ARGS pair without =', env: cniEnv('ADD', { CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME' }), fd: 'self', code: 4, details: 'CNI_ARGS' },
  { name: 'CNI_ARGS with an empty key', env: cniEnv('ADD', { CNI_ARGS: '=web' }), fd: 'self', code: 4, details: 'CNI_ARGS' },
  { name: 'CNI_ARGS with an empty pair', env: cniEnv('DEL', { CNI_ARGS: 'a=1;;b=2' }), code: 4, details: 'CNI_ARGS' },
  // 6: the config does not decode
  { name: 'config not JSON', env: cniEnv('ADD'), stdin: '{"cniVersion":', fd: 'self', code: 6, details: 'stdin', cniVersion: '1.1.0' },
  { name: 'config a JSON array', env: cniEnv('ADD'), stdin: '[]', fd: 'self', code: 6, details: 'stdin', cniVersion: '1.1.0' },
  { name: 'config JSON null', env: cniEnv('DEL'), stdin: 'null', code: 6, details: 'stdin', cniVersion: '1.1.0' },
  { name: 'config a JSON string', env: cniEnv('DEL'), stdin: '"x"', code: 6, details: 'stdin', cniVersion: '1.1.0' },
  { name: 'config empty', env: cniEnv('ADD'), stdin: '', fd: 'self', code: 6, details: 'stdin', cniVersion: '1.1.0' },
  { name: 'config not UTF-8', env: cniEnv('ADD'), stdin: Uint8Array.from([0x7b, 0xff, 0x7d]), fd: 'self', code: 6, details: 'stdin', cniVersion: '1.1.0' },
  // 7: an invalid network config
  { name: 'config without name', env: cniEnv('ADD'), stdin: cniConfig({ name: undefined }), fd: 'self', code: 7, details: 'name' },
  { name: 'config with a numeric name', env: cniEnv('ADD'), stdin: cniConfig({ name: 5 }), fd: 'self', code: 7, details: 'name' },
  { name: 'config without cniVersion', env: cniEnv('ADD'), stdin: cniConfig({ cniVersion: undefined }), fd: 'self', code: 7, details: 'cniVersion', cniVersion: '1.1.0' },
  { name: 'ADD without prevResult', env: cniEnv('ADD'), stdin: cniConfig({}, null), fd: 'self', code: 7, details: 'prevResult' },
  { name: 'CHECK without prevResult', env: cniEnv('CHECK'), stdin: cniConfig({}, null), fd: 'self', code: 7, details: 'prevResult' },
  { name: 'prevResult an array', env: cniEnv('ADD'), stdin: cniConfig({}, []), fd: 'self', code: 7, details: 'prevResult' },
  { name: 'GC without valid-attachments', env: cniEnv('GC', NO_CONTAINER), stdin: cniConfig({ cniVersion: '1.1.0' }, null), code: 7, details: 'cni.dev/valid-attachments', cniVersion: '1.1.0' },
  {
    name: 'GC with an attachment lacking ifname',
    env: cniEnv('GC', NO_CONTAINER),
    stdin: cniConfig({ cniVersion: '1.1.0', 'cni.dev/valid-attachments': [{ containerID: 'a' }] }, null),
    code: 7,
    details: 'cni.dev/valid-attachments',
    cniVersion: '1.1.0',
  },
  // 1: versions and prevResults podnet cannot take
  { name: 'cniVersion 0.2.0', env: cniEnv('ADD'), stdin: cniConfig({ cniVersion: '0.2.0' }), fd: 'self', code: 1, details: 'cniVersion', cniVersion: '0.2.0' },
  { name: 'cniVersion 2.0.0', env: cniEnv('DEL'), stdin: cniConfig({ cniVersion: '2.0.0' }), code: 1, details: 'cniVersion', cniVersion: '2.0.0' },
  { name: 'CHECK in a 0.3.1 config', env: cniEnv('CHECK'), stdin: cniConfig({ cniVersion: '0.3.1' }), fd: 'self', code: 1, details: 'cniVersion', cniVersion: '0.3.1' },
  { name: 'STATUS in a 1.0.0 config', env: cniEnv('STATUS', NO_CONTAINER), stdin: cniConfig({}, null), code: 1, details: 'cniVersion' },
  { name: 'GC in a 1.0.0 config', env: cniEnv('GC', NO_CONTAINER), stdin: cniConfig({ 'cni.dev/valid-attachments': [] }, null), code: 1, details: 'cniVersion' },
  { name: 'prevResult in cniVersion 0.2.0', env: cniEnv('ADD'), stdin: cniConfig({}, { ...PREV_RESULT_100, cniVersion: '0.2.0' }), fd: 'self', code: 1, details: 'prevResult.cniVersion' },
  { name: 'prevResult address without prefix', env: cniEnv('ADD'), stdin: cniConfig({}, bad('10.88.0.5')), fd: 'self', code: 1, details: 'prevResult.ips[0].address' },
  { name: 'prevResult address 10.88.0.256/16', env: cniEnv('ADD'), stdin: cniConfig({}, bad('10.88.0.256/16')), fd: 'self', code: 1, details: 'prevResult.ips[0].address' },
  { name: 'prevResult prefix /33', env: cniEnv('ADD'), stdin: cniConfig({}, bad('10.88.0.5/33')), fd: 'self', code: 1, details: 'prevResult.ips[0].address' },
  {
    name: 'prevResult version 6 on an IPv4 address',
    env: cniEnv('ADD'),
    stdin: cniConfig({ cniVersion: '0.4.0' }, { cniVersion: '0.4.0', ips: [{ version: '6', address: '10.0.0.5/24' }] }),
    fd: 'self',
    code: 1,
    details: 'prevResult.ips[0].version',
    cniVersion: '0.4.0',
  },
  { name: 'prevResult ips not an array', env: cniEnv('ADD'), stdin: cniConfig({}, { ...PREV_RESULT_100, ips: {} }), fd: 'self', code: 1, details: 'prevResult.ips' },
  { name: 'prevResult route without dst', env: cniEnv('ADD'), stdin: cniConfig({}, { ...PREV_RESULT_100, routes: [{ gw: '10.0.0.1' }] }), fd: 'self', code: 1, details: 'prevResult.routes[0].dst' },
];

describe('CniServer refuses bad input before any handler runs', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_, c) => {
    const { t, calls } = await counting();
    await using _t = t;
    const file = join(t.dir, 'not-a-netns');
    writeFileSync(file, 'x');
    using self = Netns.current();
    const fileFd = c.fd === 'file' ? openSync(file, 'r') : undefined;
    try {
      const call: AgentCall = { env: c.env, stdin: c.stdin ?? cniConfig() };
      if (c.fd === 'self') call.netnsFd = self.fd;
      if (fileFd !== undefined) call.netnsFd = fileFd;
      if (c.netnsErrno !== undefined) call.netnsErrno = c.netnsErrno;
      const answer = await invokeAgent(t.path, call);
      expect(answer.exitStatus).toBe(1);
      const body = JSON.parse(answer.stdout) as CniErrorBody;
      expect(body, body.msg).toMatchObject({ code: c.code, details: c.details, cniVersion: c.cniVersion ?? '1.0.0' });
      expect(body.msg).not.toBe('');
      if (c.code === 4) expect(body.msg.startsWith(c.details), body.msg).toBe(true);
      expect(calls).toEqual([]);
      if (fileFd !== undefined) expect(fdsTo(file), 'the server closed its copy of the fd').toEqual([fileFd]);
    } finally {
      if (fileFd !== undefined) closeSync(fileFd);
    }
  });

  it('docs/cni-server.md lists every case with its answer', () => {
    const doc = fileURLToPath(new URL('../../docs/cni-server.md', import.meta.url));
    const rows = CASES.map((c) => `| ${c.name.replace(/\|/g, '\\|')} | ${c.code} | \`${c.details}\` |`);
    const section = ['<!-- cni-bad-input:begin -->', '| input | code | details |', '| --- | --- | --- |', ...rows, '<!-- cni-bad-input:end -->'].join('\n');
    const text = readFileSync(doc, 'utf8');
    const rendered = text.replace(/<!-- cni-bad-input:begin -->[\s\S]*<!-- cni-bad-input:end -->/, section);
    if (process.env.PODNET_UPDATE_DOCS === '1') writeFileSync(doc, rendered);
    expect(readFileSync(doc, 'utf8'), 'run PODNET_UPDATE_DOCS=1 npx vitest run test/cni/server-input.test.ts').toBe(rendered);
  });

  it('names the errno of a CNI_NETNS the plugin could not open', async () => {
    const { t } = await counting();
    await using _t = t;
    const body = JSON.parse((await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig(), netnsErrno: 13 })).stdout) as CniErrorBody;
    expect(body.msg).toBe("CNI_NETNS '/run/netns/cni-1234' could not be opened: EACCES");
  });
});

/** rawExchange sends messages (with fds on the first) and says whether the server answered or just closed. */
async function rawExchange(path: string, messages: { data: Uint8Array; fds?: number[] }[]): Promise<'closed' | 'answered'> {
  using socket = await SeqpacketSocket.connect(path);
  try {
    for (const m of messages) await socket.send(m.data, { fds: m.fds ?? [], timeoutMs: 10000 });
  } catch (err) {
    // The server may close while the rest is still being sent.
    expect((err as { code?: string }).code).toMatch(/^(EPIPE|ECONNRESET)$/);
  }
  const reply = await socket.receive({ maxBytes: WIRE_LIMITS.maxMessage, maxFds: 0, timeoutMs: 20000 }).catch((err: { code?: string }) => {
    if (err.code === 'ECONNRESET') return null;
    throw err;
  });
  return reply === null ? 'closed' : 'answered';
}

describe('CniServer closes requests that break the wire protocol, without an answer', () => {
  const env = cniEnv('DEL', { CNI_NETNS: undefined });
  const config = Buffer.from(cniConfig());
  const header = (hasNetnsFd: boolean, stdin: Uint8Array = config) => encodeRequest({ hasNetnsFd, netnsErrno: 0, env }, stdin)[0]!;

  it('closes each broken request, runs no handler and keeps no fd', async () => {
    const { t, calls } = await counting();
    await using _t = t;
    const file = join(t.dir, 'fd-target');
    writeFileSync(file, 'x');
    const fd = openSync(file, 'r');
    try {
      const cases: [string, { data: Uint8Array; fds?: number[] }[]][] = [
        ['garbage', [{ data: Buffer.from('hello agent') }]],
        ['an answer header instead of a request', [{ data: Buffer.from('PNCA\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00', 'latin1') }]],
        ['an announced fd that does not come', [{ data: header(true) }, { data: config }]],
        ['an fd the header does not announce', [{ data: header(false), fds: [fd] }, { data: config }]],
        ['two fds', [{ data: header(true), fds: [fd, fd] }, { data: config }]],
        ['an fd on a config message', [{ data: header(false) }, { data: config, fds: [fd] }]],
        ['a config chunk longer than announced', [{ data: header(false, config.subarray(1)) }, { data: config }]],
        ['a request header over 64 KiB', [{ data: new Uint8Array(65536).fill(1) }]],
        ['the peer gone halfway through the config', [{ data: header(false, new Uint8Array(100)) }, { data: new Uint8Array(50) }]],
      ];
      for (const [name, messages] of cases) {
        expect(await rawExchange(t.path, messages), name).toBe('closed');
      }
      // The last case closes its own end; the server notices and lets go of it.
      for (let i = 0; i < 100 && t.server.connections > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(t.server.connections).toBe(0);
      expect(calls).toEqual([]);
      expect(fdsTo(file), 'only the test still holds the file').toEqual([fd]);
      // The server still serves well-formed requests.
      expect((await invokeAgent(t.path, { env, stdin: config })).exitStatus).toBe(0);
    } finally {
      closeSync(fd);
    }
  });

  it('closes a connection that does not send its request within requestTimeoutMs', async () => {
    const { t, calls } = await counting({ requestTimeoutMs: 300 });
    await using _t = t;
    const started = performance.now();
    using socket = await SeqpacketSocket.connect(t.path);
    await socket.send(header(false)); // the header, then nothing of the config
    const reply = await socket.receive({ maxBytes: 64, timeoutMs: 30000 });
    const elapsed = performance.now() - started;
    expect(reply).toBeNull();
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed, 'closed long before the 30 s test deadline').toBeLessThan(20000);
    expect(calls).toEqual([]);
  });

  it('publishes a request closed without an answer with the code that ended it and no cniCode', async () => {
    const messages: CniRequestMessage[] = [];
    const listener = (m: unknown) => void messages.push(m as CniRequestMessage);
    subscribe(DIAGNOSTICS_CHANNELS.cniRequest, listener);
    try {
      const { t } = await counting({ requestTimeoutMs: 200 });
      await using _t = t;
      expect(await rawExchange(t.path, [{ data: Buffer.from('hello agent') }])).toBe('closed');
      expect(await rawExchange(t.path, [{ data: header(false) }])).toBe('closed'); // the config never comes
      await t.server.close();
      expect(messages.map((m) => [m.outcome, m.cniCode, m.command])).toEqual([
        ['ERR_CNI_WIRE', undefined, undefined],
        ['ETIMEDOUT', undefined, undefined],
      ]);
    } finally {
      unsubscribe(DIAGNOSTICS_CHANNELS.cniRequest, listener);
    }
  });

  it('closes connections over maxConnections at once and serves the ones it holds', async () => {
    const { t } = await counting({ maxConnections: 2, requestTimeoutMs: 60000 });
    await using _t = t;
    using first = await SeqpacketSocket.connect(t.path);
    using second = await SeqpacketSocket.connect(t.path);
    for (let i = 0; i < 500 && t.server.connections < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(t.server.connections).toBe(2);
    using third = await SeqpacketSocket.connect(t.path);
    expect(await third.receive({ maxBytes: 64, timeoutMs: 20000 })).toBeNull();
    for (const socket of [first, second]) {
      const [h, ...rest] = encodeRequest({ hasNetnsFd: false, netnsErrno: 0, env }, config);
      await socket.send(h!);
      for (const chunk of rest) await socket.send(chunk);
      const answer = await socket.receive({ maxBytes: 64, timeoutMs: 20000 });
      expect(answer!.data.subarray(0, 4).toString()).toBe('PNCA');
    }
  });
});

describe('CniServer checks its peers (SO_PEERCRED)', () => {
  // A peer of another uid: the system python speaks SOCK_SEQPACKET with no help from this process.
  const PEER = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
for part in sys.argv[2:]:
    s.send(bytes.fromhex(part))
head = s.recv(65536)
out = s.recv(65536) if int.from_bytes(head[12:16], 'little') else b''
sys.stdout.write(str(int.from_bytes(head[8:12], 'little')) + ' ' + out.decode())
`;
  const root = process.getuid?.() === 0;

  async function asNobody(path: string): Promise<{ exitStatus: number; body: string }> {
    const messages = encodeRequest({ hasNetnsFd: false, netnsErrno: 0, env: cniEnv('DEL', { CNI_NETNS: undefined }) }, Buffer.from(cniConfig()));
    const { stdout } = await run('/usr/bin/python3', ['-c', PEER, path, ...messages.map((m) => Buffer.from(m).toString('hex'))], { uid: 65534, gid: 65534 });
    const space = stdout.indexOf(' ');
    return { exitStatus: Number(stdout.slice(0, space)), body: stdout.slice(space + 1) };
  }

  it.skipIf(!root)('answers a peer that is neither root nor allowed with code 101, and runs no handler', async () => {
    const { t, calls } = await counting({ mode: 0o666 });
    await using _t = t;
    chmodSync(t.dir, 0o755);
    const answer = await asNobody(t.path);
    expect(answer.exitStatus).toBe(1);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 101, details: 'SO_PEERCRED' });
    expect(calls).toEqual([]);
  });

  it.skipIf(!root)('serves a peer whose uid is in allowedUids', async () => {
    const { t, calls } = await counting({ mode: 0o666, allowedUids: [65534] });
    await using _t = t;
    chmodSync(t.dir, 0o755);
    expect(await asNobody(t.path)).toEqual({ exitStatus: 0, body: '' });
    expect(calls).toEqual(['DEL']);
  });
});
