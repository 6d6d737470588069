// Interop with another process and another implementation: a Python 3 peer (socket.send_fds / recv_fds) on the
// other end, in both directions, reporting over stdout what each fd it got is.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

import { Netns } from '../../lib/index.js';
import { SeqpacketServer, SeqpacketSocket } from '../../lib/unix/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { checkFdsPerTest, fdsTo, socketDir } from './helpers/fds.js';
import { bytes } from './helpers/pair.js';

const nextPath = socketDir();
const script = fileURLToPath(new URL('./helpers/seqpacket_peer.py', import.meta.url));

interface Report {
  pid: number;
  peerPid: number;
  data: string;
  fds: { link: string; ino: number; nstype: 'net' | 'other' | null }[];
}

/** A running Python peer: its JSON lines one by one, and its exit. */
class Peer {
  readonly child: ChildProcess;
  readonly #lines: AsyncIterator<string>;
  readonly #exit: Promise<[number | null, string | null]>;
  #stderr = '';

  constructor(...args: string[]) {
    this.child = spawn('python3', [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stderr!.on('data', (chunk: Buffer) => (this.#stderr += chunk.toString()));
    this.#exit = once(this.child, 'close') as Promise<[number | null, string | null]>;
    this.#lines = createInterface({ input: this.child.stdout! })[Symbol.asyncIterator]();
  }

  async next<T = Report>(): Promise<T> {
    const line = await this.#lines.next();
    if (line.done) throw new Error(`python peer ended early: ${this.#stderr}`);
    return JSON.parse(line.value) as T;
  }

  async exited(): Promise<number | null> {
    const [code] = await this.#exit;
    if (code !== 0) throw new Error(`python peer exited ${code}: ${this.#stderr}`);
    return code;
  }
}

describe('interop with a Python peer (any user)', () => {
  checkFdsPerTest();

  it('sends a netns fd that the Python client sees as net:[inode], with its credentials on both sides', async () => {
    const path = nextPath();
    using server = SeqpacketServer.listen({ path });
    const peer = new Peer('receive', path);
    using conn = await server.accept({ timeoutMs: 20_000 });
    expect(conn.peerCredentials.pid).toBe(peer.child.pid);
    expect((await conn.receive({ timeoutMs: 20_000 }))!.data.toString()).toBe('hello');
    using netns = Netns.current();
    await conn.send(bytes('netns'), { fds: [netns], timeoutMs: 5000 });
    const report = await peer.next();
    expect(report).toEqual({
      pid: peer.child.pid,
      peerPid: process.pid,
      data: 'netns',
      fds: [{ link: `net:[${netns.inode}]`, ino: netns.inode, nstype: 'net' }],
    });
    expect((await conn.receive({ timeoutMs: 20_000 }))!.data.toString()).toBe('ack');
    expect(await conn.receive({ timeoutMs: 20_000 })).toBeNull();
    await peer.exited();
  });

  it('receives fds the Python client sends: a file (read through the fd) and its netns', async () => {
    const path = nextPath();
    const file = `${nextPath()}.txt`;
    writeFileSync(file, 'from python');
    using server = SeqpacketServer.listen({ path });
    const peer = new Peer('send', path, file, '/proc/self/ns/net');
    using conn = await server.accept({ timeoutMs: 20_000 });
    const msg = await conn.receive({ timeoutMs: 20_000, maxFds: 2 });
    expect(msg!.data.toString()).toBe('take');
    const [fileFd, nsFd] = msg!.fds;
    try {
      expect(fdsTo(file)).toEqual([fileFd!.fd]);
      expect(readFileSync(fileFd!.fd, 'utf8')).toBe('from python');
      using netns = nsFd!.toNetns();
      using mine = Netns.current();
      expect(netns.equals(mine)).toBe(true);
    } finally {
      for (const fd of msg!.fds) fd.close();
    }
    await conn.send(bytes('thanks'));
    expect(await peer.next()).toMatchObject({ data: 'thanks', fds: [] });
    await peer.exited();
  });

  it('connects to a Python server and sends it an fd', async () => {
    const path = nextPath();
    const file = `${nextPath()}.txt`;
    writeFileSync(file, '');
    const peer = new Peer('serve', path);
    expect(await peer.next<{ listening: string }>()).toEqual({ listening: path });
    using client = await SeqpacketSocket.connect(path, { timeoutMs: 20_000 });
    expect(client.peerCredentials.pid).toBe(peer.child.pid);
    const { openSync, closeSync } = await import('node:fs');
    const fd = openSync(file, 'r');
    try {
      await client.send(bytes('to python'), { fds: [fd] });
    } finally {
      closeSync(fd);
    }
    expect(await peer.next()).toMatchObject({ data: 'to python', fds: [{ link: file, nstype: null }], peerPid: process.pid });
    expect((await client.receive({ timeoutMs: 20_000 }))!.data.toString()).toBe('ack');
    await peer.exited();
  });
});

describePrivileged('interop with a Python peer, a fresh namespace (root)', () => {
  checkFdsPerTest();

  it("hands a pod namespace's fd to the Python client, as ZDS does", async () => {
    await withNetns(async (ns) => {
      const path = nextPath();
      using server = SeqpacketServer.listen({ path });
      const peer = new Peer('receive', path);
      using conn = await server.accept({ timeoutMs: 20_000 });
      expect((await conn.receive({ timeoutMs: 20_000 }))!.data.toString()).toBe('hello');
      using pod = ns.open();
      await conn.send(bytes('add'), { fds: [pod], timeoutMs: 5000 });
      // opened from its bind mount, so it links to that path; the kernel still says what it is
      expect(await peer.next()).toMatchObject({ data: 'add', fds: [{ link: ns.path, ino: pod.inode, nstype: 'net' }] });
      expect((await conn.receive({ timeoutMs: 20_000 }))!.data.toString()).toBe('ack');
      await peer.exited();
    });
  });
});
