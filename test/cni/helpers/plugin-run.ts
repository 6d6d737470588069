// Runs the real podnet-cni binary (argv and env, no shell) and stands in for the agent on a SeqpacketServer in a
// temp dir: what the plugin tests share.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { cniPluginPath } from '../../../lib/cni/plugin-path.js';
import { decodeRequestHeader, encodeAnswer, WIRE_LIMITS, type WireAnswer, type WireRequestHeader } from '../../../lib/cni/wire.js';
import { type ReceivedFd, SeqpacketServer, type SeqpacketSocket } from '../../../lib/unix/index.js';

/**
 * The plugin binary under test: PODNET_TEST_CNI_PLUGIN when set (a sanitizer build, e.g. CMakeLists.txt's with
 * PODNET_SANITIZE=ON), else the package's own (a prebuild for this architecture, else build/Release/podnet-cni).
 */
export const PLUGIN = process.env.PODNET_TEST_CNI_PLUGIN ?? cniPluginPath();

/** PluginExit is how one run of the plugin ended. */
export interface PluginExit {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: Buffer;
  stderr: Buffer;
  /** Wall time from spawn to exit, ms. */
  elapsedMs: number;
}

/**
 * runPlugin runs the plugin with exactly env (nothing inherited) and stdin, and resolves when it exits. stdin the
 * plugin does not read (it stops after 1 MiB) is dropped: the EPIPE that causes is expected.
 */
export function runPlugin(env: Record<string, string>, stdin: string | Uint8Array = ''): Promise<PluginExit> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(PLUGIN, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.stdin.on('error', () => {
      // The plugin exited before reading all of stdin.
    });
    child.on('error', reject);
    child.on('close', (status, signal) => {
      resolve({ status, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err), elapsedMs: performance.now() - started });
    });
    child.stdin.end(stdin);
  });
}

/** CniErrorOutput is the CNI error document the plugin prints itself. */
export interface CniErrorOutput {
  cniVersion: string;
  code: number;
  msg: string;
  details: string;
}

/** parseError parses stdout as exactly one CNI error document (and nothing else). */
export function parseError(stdout: Buffer): CniErrorOutput {
  const doc = JSON.parse(stdout.toString('utf8')) as CniErrorOutput;
  if (Object.keys(doc).sort().join(',') !== 'cniVersion,code,details,msg') throw new Error(`not a CNI error: ${stdout.toString()}`);
  return doc;
}

/** ReceivedRequest is what the stand-in agent got: the decoded header, its raw fds, and the config messages. */
export interface ReceivedRequest {
  header: WireRequestHeader;
  fds: ReceivedFd[];
  chunks: Buffer[];
  config: Buffer;
}

/** StandInAgent listens where the plugin connects, in a temp dir removed with it. */
export class StandInAgent implements Disposable {
  readonly dir: string;
  readonly socketPath: string;
  readonly server: SeqpacketServer;

  constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'podnet-cni-plugin-'));
    this.socketPath = join(this.dir, 'cni.sock');
    this.server = SeqpacketServer.listen({ path: this.socketPath });
  }

  /** accept takes the plugin's connection (rejects with ETIMEDOUT when none came within timeoutMs). */
  accept(timeoutMs = 10_000): Promise<SeqpacketSocket> {
    return this.server.accept({ timeoutMs });
  }

  /** readRequest reads one whole request from conn: the header (and its fd), then stdinLength bytes of config. */
  async readRequest(conn: SeqpacketSocket): Promise<ReceivedRequest> {
    const first = await conn.receive({ maxBytes: WIRE_LIMITS.maxMessage, maxFds: 1, timeoutMs: 10_000 });
    if (first === null) throw new Error('the plugin closed before its request header');
    const header = decodeRequestHeader(first.data);
    const chunks: Buffer[] = [];
    let got = 0;
    while (got < header.stdinLength) {
      const message = await conn.receive({ maxBytes: WIRE_LIMITS.maxMessage, maxFds: 0, timeoutMs: 10_000 });
      if (message === null) throw new Error(`the plugin closed after ${got} of ${header.stdinLength} config bytes`);
      chunks.push(message.data);
      got += message.data.byteLength;
    }
    return { header, fds: first.fds, chunks, config: Buffer.concat(chunks) };
  }

  /** answer sends a well-formed answer on conn. */
  async answer(conn: SeqpacketSocket, answer: WireAnswer): Promise<void> {
    for (const message of encodeAnswer(answer)) await conn.send(message, { timeoutMs: 10_000 });
  }

  /**
   * serveOnce accepts one connection, reads its request, sends answer, closes, and resolves the request (fds
   * included: the caller closes them).
   */
  async serveOnce(answer: WireAnswer): Promise<ReceivedRequest> {
    using conn = await this.accept();
    const request = await this.readRequest(conn);
    await this.answer(conn, answer);
    return request;
  }

  [Symbol.dispose](): void {
    this.server.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** cniEnv is a plausible invocation environment for command (plus overrides; undefined removes a variable). */
export function cniEnv(command: string, overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = {
    CNI_COMMAND: command,
    CNI_CONTAINERID: 'c0ffee',
    CNI_NETNS: '',
    CNI_IFNAME: 'eth0',
    CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
    CNI_PATH: '/opt/cni/bin',
    ...overrides,
  };
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/** config is a plugin config entry as the runtime passes it (cniVersion 1.0.0 unless given). */
export function config(fields: Record<string, unknown>): string {
  return JSON.stringify({ cniVersion: '1.0.0', name: 'podnet-test', type: 'podnet-cni', ...fields });
}
