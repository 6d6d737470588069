// The ztunnel player (test/fixtures/ztunnel-player.py, another implementation of the proxy's side of ZDS) against
// podnet's own seqpacket server and ZDS codec playing the node agent. This proves the player before agent tests
// rely on it: the protocol part runs as any user (no Add here ever reaches a listen), the netns part needs root and
// works only in throwaway namespaces; the machine's own namespace is never changed.
import { execFile } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { Netns } from '../../lib/netns.js';
import { encodeRequest, decodeHello, decodeResponse, type ZdsRequest } from '../../lib/proxy/zds-messages.js';
import { SeqpacketServer, type SeqpacketSocket } from '../../lib/unix/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { startZtunnelPlayer, type PlayerEvent, type ZtunnelPlayer, type ZtunnelPlayerOptions } from '../helpers/ztunnel-player.js';

const run = promisify(execFile);
const DEADLINE_MS = 20_000;

const dir = mkdtempSync(join(tmpdir(), 'podnet-ztp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
const nextSocketPath = (): string => join(dir, `zds${++counter}.sock`);

// Everything a test made, undone last-made first after it, passed or failed; the first failure is rethrown.
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  let first: unknown;
  while (cleanups.length > 0) {
    try {
      await cleanups.pop()!();
    } catch (err) {
      first ??= err;
    }
  }
  if (first !== undefined) throw first;
});

function player(options: ZtunnelPlayerOptions): ZtunnelPlayer {
  const p = startZtunnelPlayer(options);
  cleanups.push(() => p.stop());
  return p;
}

function listen(path = nextSocketPath()): SeqpacketServer {
  const server = SeqpacketServer.listen({ path });
  cleanups.push(() => server.close());
  return server;
}

// The player on the other end of each accepted connection: ask() waits for its report of each answer.
const playerOf = new WeakMap<SeqpacketSocket, ZtunnelPlayer>();

async function accept(server: SeqpacketServer, p: ZtunnelPlayer): Promise<SeqpacketSocket> {
  const sock = await server.accept({ timeoutMs: DEADLINE_MS });
  cleanups.push(() => sock.close());
  playerOf.set(sock, p);
  return sock;
}

/** agentWithPlayer listens, starts a player on the socket, accepts it and reads its hello. */
async function agentWithPlayer(options: Omit<ZtunnelPlayerOptions, 'socketPath'> = {}) {
  const server = listen();
  const p = player({ socketPath: server.path, ...options });
  const sock = await accept(server, p);
  const hello = await receiveOne(sock);
  return { server, player: p, sock, hello: decodeHello(hello) };
}

async function receiveOne(sock: SeqpacketSocket): Promise<Buffer> {
  const msg = await sock.receive({ timeoutMs: DEADLINE_MS });
  if (msg === null) throw new Error('the player closed the connection');
  expect(msg.fds).toEqual([]); // the proxy never sends fds
  return msg.data;
}

/**
 * ask sends bytes (a request, or anything) with fds and returns the ack's error ('' = ok), once the player's "ack"
 * event for it is in too: every event the request caused (printed before the ack) is in player.events by then.
 */
async function ask(sock: SeqpacketSocket, req: ZdsRequest | Uint8Array, fds: (number | { fd: number })[] = []): Promise<string> {
  const p = playerOf.get(sock)!;
  const from = p.events.length; // the previous ask waited for its ack event: no ack before this index is pending
  const bytes = req instanceof Uint8Array ? req : encodeRequest(req);
  await sock.send(bytes, { fds });
  const error = decodeResponse(await receiveOne(sock)).ack.error;
  expect(await p.waitFor(isEvent('ack'), DEADLINE_MS, from)).toMatchObject({ error });
  return error;
}

const isEvent =
  (event: string, fields: Record<string, unknown> = {}) =>
  (e: PlayerEvent): boolean =>
    e.event === event && Object.entries(fields).every(([k, v]) => e[k] === v);

/** A scratch file and an fd on it (closed after the test): an fd that is not a namespace. */
function scratchFile(): { path: string; fd: number; inode: number; id: string } {
  const path = join(dir, `file${++counter}`);
  writeFileSync(path, 'not a namespace\n');
  const fd = openSync(path, 'r');
  cleanups.push(() => closeSync(fd));
  const st = statSync(path);
  expect(fdsOn(process.pid, `${st.dev}:${st.ino}`)).toBe(1); // fdsOn sees an fd that is there
  return { path, fd, inode: st.ino, id: `${st.dev}:${st.ino}` };
}

/** How many of pid's fds are open on the file whose "dev:ino" is id (a Netns.id); the link text depends on the path. */
function fdsOn(pid: number, id: string): number {
  let n = 0;
  for (const name of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const st = statSync(`/proc/${pid}/fd/${name}`);
      if (`${st.dev}:${st.ino}` === id) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

const add = (uid: string): ZdsRequest => ({
  kind: 'add',
  uid,
  workload: { name: `pod-${uid}`, namespace: 'default', serviceAccount: 'sa' },
});

describe('ztunnel player: the ZDS protocol (any user)', () => {
  it('connects and says hello with version V1 by default, and another version when asked', async () => {
    const v1 = await agentWithPlayer();
    expect(v1.hello).toEqual({ version: 1 });
    await v1.player.waitFor(isEvent('hello', { version: 1 }));
    expect(v1.player.events.slice(0, 2).map((e) => e.event)).toEqual(['connected', 'hello']);

    const v2 = await agentWithPlayer({ version: 2 });
    expect(v2.hello).toEqual({ version: 2 });
    const v0 = await agentWithPlayer({ version: 0 });
    expect(v0.hello).toEqual({ version: 0 }); // proto3: an empty hello
  });

  it('retries connecting until the agent listens, and gives up after its connect timeout', async () => {
    const path = nextSocketPath();
    const early = player({ socketPath: path });
    await new Promise((resolve) => setTimeout(resolve, 300)); // the socket file does not exist yet
    const sock = await accept(listen(path), early);
    expect(decodeHello(await receiveOne(sock))).toEqual({ version: 1 });
    await early.waitFor(isEvent('hello'));

    const never = player({ socketPath: nextSocketPath(), connectTimeoutSeconds: 0.2 });
    expect(await never.exited).toEqual({ code: 2, signal: null });
    expect(never.events).toEqual([expect.objectContaining({ event: 'error', message: expect.stringContaining('cannot connect') })]);
  });

  it('acks keep, del and snapshotSent, reporting each', async () => {
    const { sock, player: p } = await agentWithPlayer();
    expect(await ask(sock, { kind: 'keep', uid: 'uid-keep' })).toBe('');
    expect(await ask(sock, { kind: 'del', uid: 'uid-gone' })).toBe('');
    expect(await ask(sock, { kind: 'snapshotSent' })).toBe('');
    await p.waitFor(isEvent('ack', { request: 'snapshotSent' }));
    const reported = p.events.filter((e) => e.event !== 'ack').slice(2);
    expect(reported).toEqual([
      { event: 'keep', uid: 'uid-keep' },
      { event: 'del', uid: 'uid-gone', known: false },
      { event: 'snapshotSent', workloads: [], dropped: [] },
    ]);
    expect(p.events.filter((e) => e.event === 'ack')).toEqual([
      { event: 'ack', request: 'keep', uid: 'uid-keep', error: '' },
      { event: 'ack', request: 'del', uid: 'uid-gone', error: '' },
      { event: 'ack', request: 'snapshotSent', uid: null, error: '' },
    ]);
  });

  it('reads hand-made protobuf: unknown fields are ignored, the last oneof member wins, del carries its uid in field 2', async () => {
    const { sock, player: p } = await agentWithPlayer();
    const text = (s: string): number[] => [...Buffer.from(s)];
    // WorkloadRequest{ 9: varint 7, keep(5){ uid(1) "a", 4: "x" } }
    const keep = [0x48, 0x07, 0x2a, 0x06, 0x0a, 0x01, ...text('a'), 0x22, 0x01, ...text('x')];
    expect(await ask(sock, Uint8Array.from(keep))).toBe('');
    await p.waitFor(isEvent('keep', { uid: 'a' }));
    // WorkloadRequest{ keep(5){uid "b"}, del(2){uid(2) "c"} }: the del wins
    const both = [0x2a, 0x03, 0x0a, 0x01, ...text('b'), 0x12, 0x03, 0x12, 0x01, ...text('c')];
    expect(await ask(sock, Uint8Array.from(both))).toBe('');
    await p.waitFor(isEvent('del', { uid: 'c' }));
    expect(p.events.some(isEvent('keep', { uid: 'b' }))).toBe(false);
  });

  it('answers protocol errors with an ack error and keeps the connection: bytes that are not a request, no payload, MSG_TRUNC', async () => {
    const { sock, player: p } = await agentWithPlayer();
    expect(await ask(sock, Uint8Array.of(0xff))).toMatch(/^protocol error: varint runs past the end/);
    expect(await ask(sock, Uint8Array.of(0x48, 0x01))).toMatch(/^protocol error: WorkloadRequest has no payload/);
    expect(await ask(sock, Uint8Array.of(0x08, 0x01))).toMatch(/wire type 0, expected 2/); // add as a varint
    // An add without workload_info is refused as ztunnel refuses it.
    expect(await ask(sock, Uint8Array.of(0x0a, 0x03, 0x0a, 0x01, 0x75))).toMatch(/AddWorkload has no workload_info/);
    // Over the 1024-byte buffer: keep{uid: 2000 bytes}.
    const big = Buffer.concat([Buffer.from([0x2a, 0xd3, 0x0f, 0x0a, 0xd0, 0x0f]), Buffer.alloc(2000, 0x61)]);
    expect(await ask(sock, big)).toMatch(/MSG_TRUNC/);
    expect(await ask(sock, { kind: 'keep', uid: 'still-there' })).toBe('');
    expect(p.events.filter((e) => e.event === 'error')).toHaveLength(5);
  });

  it('refuses fds it was not meant to get, and closes every one of them', async () => {
    const { sock, player: p } = await agentWithPlayer();
    const file = scratchFile();

    expect(await ask(sock, add('no-fd'))).toMatch(/exactly one fd .* had 0/);
    await p.waitFor(isEvent('add', { uid: 'no-fd', netnsInode: null, fds: 0 }));
    expect(await ask(sock, add('two-fds'), [file.fd, file.fd])).toMatch(/exactly one fd .* had 2/);
    expect(await ask(sock, { kind: 'keep', uid: 'k' }, [file.fd])).toMatch(/1 fd\(s\) sent with a keep message/);
    expect(await ask(sock, { kind: 'del', uid: 'd' }, [file.fd])).toMatch(/sent with a del message/);
    expect(await ask(sock, { kind: 'snapshotSent' }, [file.fd])).toMatch(/sent with a snapshotSent message/);
    expect(await ask(sock, { kind: 'keep', uid: 'k' }, Array(6).fill(file.fd))).toMatch(/MSG_CTRUNC/);
    // An add with one fd that is not a network namespace: reported with the fd's inode, refused before any setns.
    expect(await ask(sock, add('a-file'), [file.fd])).toMatch(/cannot add a-file: the fd is not a network namespace/);
    await p.waitFor(isEvent('add', { uid: 'a-file', netnsInode: file.inode, fds: 1 }));
    expect(p.events.some(isEvent('listening'))).toBe(false);
    expect(p.events.some(isEvent('keep'))).toBe(false);
    expect(fdsOn(p.pid, file.id)).toBe(0); // each was closed before its ack was sent
  });

  it('with --fail-add acks every add with that error after reporting it', async () => {
    const { sock, player: p } = await agentWithPlayer({ failAdd: 'no room for this pod' });
    const file = scratchFile();
    expect(await ask(sock, add('uid-1'), [file.fd])).toBe('no room for this pod');
    const event = await p.waitFor(isEvent('add', { uid: 'uid-1' }));
    expect(event).toEqual({
      event: 'add',
      uid: 'uid-1',
      name: 'pod-uid-1',
      namespace: 'default',
      serviceAccount: 'sa',
      netnsInode: file.inode,
      fds: 1,
    });
    expect(fdsOn(p.pid, file.id)).toBe(0);
  });

  it('reports eof and exits 0 when the agent closes the connection; exits 0 on SIGTERM', async () => {
    const a = await agentWithPlayer();
    a.sock.close();
    expect(await a.player.exited).toEqual({ code: 0, signal: null });
    expect(a.player.events.at(-1)).toEqual({ event: 'eof' });

    const b = await agentWithPlayer();
    b.player.kill('SIGTERM');
    expect(await b.player.exited).toEqual({ code: 0, signal: null });
    expect(b.player.events.at(-1)).toEqual({ event: 'signal', signal: 'SIGTERM' });
    expect(await b.sock.receive({ timeoutMs: DEADLINE_MS })).toBeNull();
  });

  it('waitFor rejects with the events seen and stderr when the player exits first', async () => {
    const p = player({ socketPath: nextSocketPath(), connectTimeoutSeconds: 0.1 });
    await expect(p.waitFor(isEvent('hello'))).rejects.toThrow(/exited .*"code":2[\s\S]*cannot connect[\s\S]*stderr/);
  });
});

/** dial connects to host:port from inside ns (a client process there) and returns what the server wrote. */
async function dial(ns: TestNetns, host: string, port: number): Promise<{ refused: true } | { line: string; local: string }> {
  const code = [
    'import json, socket, sys',
    's = socket.socket()',
    's.settimeout(10)',
    'try:',
    '    s.connect((sys.argv[1], int(sys.argv[2])))',
    'except ConnectionRefusedError:',
    '    print(json.dumps({"refused": True})); sys.exit(0)',
    'local = "%s:%d" % s.getsockname()',
    'data = b""',
    'while chunk := s.recv(4096):',
    '    data += chunk',
    'print(json.dumps({"line": data.decode(), "local": local}))',
  ].join('\n');
  const { stdout } = await run('ip', ['netns', 'exec', ns.name, 'python3', '-c', code, host, String(port)], { timeout: DEADLINE_MS });
  return JSON.parse(stdout) as { refused: true } | { line: string; local: string };
}

function testNetns(): TestNetns {
  const ns = new TestNetns('ztp');
  cleanups.push(() => ns.delete());
  return ns;
}

function openNetns(ns: TestNetns): Netns {
  const handle = ns.open();
  cleanups.push(() => handle.close());
  return handle;
}

/** eventually retries check until it returns without throwing, up to the deadline (threads end a little after join). */
async function eventually<T>(check: () => T, timeoutMs = DEADLINE_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

function threadNetnsInodes(pid: number): number[] {
  const inodes = readdirSync(`/proc/${pid}/task`).map((tid) => readlinkSync(`/proc/${pid}/task/${tid}/ns/net`));
  return [...new Set(inodes.map((link) => Number(/^net:\[(\d+)\]$/.exec(link)![1])))].sort((a, b) => a - b);
}

describePrivileged('ztunnel player: listeners inside a workload netns (root, throwaway namespaces)', () => {
  it('listens on 15006 inside the netns it was sent, serves a connection from there, and stops on del', async () => {
    const ns = testNetns();
    const netns = openNetns(ns);
    const own = Netns.current();
    cleanups.push(() => own.close());
    const { sock, player: p } = await agentWithPlayer();

    expect(await ask(sock, add('uid-a'), [netns])).toBe('');
    expect(await p.waitFor(isEvent('add', { uid: 'uid-a' }))).toMatchObject({ netnsInode: netns.inode, fds: 1 });
    // The listener was reported before the ack, so it is there already.
    expect(p.events.find(isEvent('listening'))).toEqual({ event: 'listening', uid: 'uid-a', port: 15006, netnsInode: netns.inode });
    // setns moved one thread: the main thread stays in the player's own namespace.
    expect(readlinkSync(`/proc/${p.pid}/ns/net`)).toBe(`net:[${own.inode}]`);
    expect(threadNetnsInodes(p.pid)).toEqual([own.inode, netns.inode].sort((a, b) => a - b));
    expect(fdsOn(p.pid, netns.id)).toBe(1); // the workload holds the fd it got

    const answer = await dial(ns, '127.0.0.1', 15006);
    expect(answer).toEqual({ line: 'ztunnel-player uid-a 127.0.0.1:15006\n', local: expect.stringMatching(/^127\.0\.0\.1:\d+$/) });
    const conn = await p.waitFor(isEvent('conn', { uid: 'uid-a' }));
    // No REDIRECT in this netns: the original destination is the listener's own address, from either source.
    expect(conn).toEqual({
      event: 'conn',
      uid: 'uid-a',
      origDst: '127.0.0.1:15006',
      origDstSource: expect.stringMatching(/^(SO_ORIGINAL_DST|sockname)$/),
      peer: 'local' in answer ? answer.local : '',
    });

    expect(await ask(sock, { kind: 'del', uid: 'uid-a' })).toBe('');
    expect(p.events.find(isEvent('del'))).toEqual({ event: 'del', uid: 'uid-a', known: true });
    expect(await dial(ns, '127.0.0.1', 15006)).toEqual({ refused: true });
    expect(fdsOn(p.pid, netns.id)).toBe(0);
    await eventually(() => expect(threadNetnsInodes(p.pid)).toEqual([own.inode]));
  });

  it('keeps one listener per uid, and acks an add whose listen fails with the error', async () => {
    const ns = testNetns();
    const netns = openNetns(ns);
    const { sock, player: p } = await agentWithPlayer();
    expect(await ask(sock, add('uid-a'), [netns])).toBe('');
    expect(await ask(sock, add('uid-a'), [netns])).toBe(''); // again: the listener it has stays
    expect(p.events.filter(isEvent('listening'))).toHaveLength(1);
    // Another uid in the same netns: port 15006 is taken there.
    expect(await ask(sock, add('uid-b'), [netns])).toMatch(/failed to listen on 0\.0\.0\.0:15006 in netns \d+: .*Address already in use/);
    expect(p.events.some(isEvent('listening', { uid: 'uid-b' }))).toBe(false);
    expect(fdsOn(p.pid, netns.id)).toBe(1); // uid-a's only
    expect((await dial(ns, '127.0.0.1', 15006)) as { line: string }).toMatchObject({ line: 'ztunnel-player uid-a 127.0.0.1:15006\n' });
  });

  it('with --fail-add starts no listener in the netns', async () => {
    const ns = testNetns();
    const netns = openNetns(ns);
    const { sock, player: p } = await agentWithPlayer({ failAdd: 'proxy is full' });
    expect(await ask(sock, add('uid-a'), [netns])).toBe('proxy is full');
    expect(await p.waitFor(isEvent('add', { uid: 'uid-a' }))).toMatchObject({ netnsInode: netns.inode });
    expect(await dial(ns, '127.0.0.1', 15006)).toEqual({ refused: true });
    expect(fdsOn(p.pid, netns.id)).toBe(0);
  });

  it('never listens in its own namespace (run inside a throwaway one, sent that one)', async () => {
    const ns = testNetns();
    const netns = openNetns(ns);
    const { sock, player: p } = await agentWithPlayer({ netns: ns.name });
    expect(readlinkSync(`/proc/${p.pid}/ns/net`)).toBe(`net:[${netns.inode}]`);
    expect(await ask(sock, add('uid-own'), [netns])).toMatch(/player's own network namespace/);
    expect(await dial(ns, '127.0.0.1', 15006)).toEqual({ refused: true });
  });

  it('with --reconnect keeps its workloads across connections, and the next SnapshotSent drops those not named', async () => {
    const [nsA, nsB] = [testNetns(), testNetns()];
    const [netnsA, netnsB] = [openNetns(nsA), openNetns(nsB)];
    const server = listen();
    const p = player({ socketPath: server.path, reconnect: true });
    const first = await accept(server, p);
    await receiveOne(first);
    expect(await ask(first, add('uid-a'), [netnsA])).toBe('');
    expect(await ask(first, add('uid-b'), [netnsB])).toBe('');
    first.close(); // the agent restarts

    const reconnected = p.events.indexOf(await p.waitFor(isEvent('eof')));
    const second = await accept(server, p);
    expect(decodeHello(await receiveOne(second))).toEqual({ version: 1 });
    // Both still serve before the snapshot is complete.
    expect(await dial(nsB, '127.0.0.1', 15006)).toMatchObject({ line: 'ztunnel-player uid-b 127.0.0.1:15006\n' });
    expect(await ask(second, { kind: 'keep', uid: 'uid-a' })).toBe('');
    expect(await ask(second, { kind: 'snapshotSent' })).toBe('');
    expect(p.events.find(isEvent('snapshotSent'))).toEqual({ event: 'snapshotSent', workloads: ['uid-a'], dropped: ['uid-b'] });
    expect(p.events.some(isEvent('dropped', { uid: 'uid-b', reason: 'snapshot' }))).toBe(true);
    expect(await dial(nsB, '127.0.0.1', 15006)).toEqual({ refused: true });
    expect(await dial(nsA, '127.0.0.1', 15006)).toMatchObject({ line: 'ztunnel-player uid-a 127.0.0.1:15006\n' });
    expect(p.events.slice(reconnected).filter((e) => e.event === 'connected' || e.event === 'hello')).toEqual([
      { event: 'connected', socket: server.path },
      { event: 'hello', version: 1 },
    ]);
  });

  it('killed with SIGKILL, its connection ends and its listener goes; started again it connects and says hello again', async () => {
    const ns = testNetns();
    const netns = openNetns(ns);
    const server = listen();
    const first = player({ socketPath: server.path });
    const sock1 = await accept(server, first);
    await receiveOne(sock1);
    expect(await ask(sock1, add('uid-a'), [netns])).toBe('');

    first.kill('SIGKILL'); // a proxy crash
    expect(await first.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await sock1.receive({ timeoutMs: DEADLINE_MS })).toBeNull();
    expect(await dial(ns, '127.0.0.1', 15006)).toEqual({ refused: true });

    const second = player({ socketPath: server.path });
    const sock2 = await accept(server, second);
    expect(decodeHello(await receiveOne(sock2))).toEqual({ version: 1 });
    await second.waitFor(isEvent('hello', { version: 1 }));
    expect(await ask(sock2, add('uid-a'), [netns])).toBe('');
    expect(await dial(ns, '127.0.0.1', 15006)).toMatchObject({ line: 'ztunnel-player uid-a 127.0.0.1:15006\n' });
  });
});
