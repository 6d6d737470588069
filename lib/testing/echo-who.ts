/**
 * echo-who: a TCP server and client, each a short node program run inside a
 * namespace, that tell where a connection really landed. The server answers
 * every connection with `<local port> <remote address>` and closes it, so a
 * REDIRECT shows as the proxy's port and a SNAT as the rewritten source.
 */
import { randomUUID } from 'node:crypto';

import { runInNetns, type RunResult } from '../spawn.js';
import { checkInteger, checkOptions, checkString, invalidType } from '../validate.js';

// Listens on 0.0.0.0 only: a dual-stack socket would report IPv4 peers as ::ffff:a.b.c.d.
const SERVER = `
const net = require('node:net');
const cfg = JSON.parse(process.argv[1]);
const servers = [];
let ending = false;
const quit = (why) => {
  if (ending) return;
  ending = true;
  for (const s of servers) s.close();
  process.stdout.write('exit ' + why + '\\n');
  process.exit(0);
};
setTimeout(() => quit('deadline'), cfg.lifetimeMs);
const fail = (err) => {
  process.stderr.write(String(err && err.message) + '\\n');
  process.exit(2);
};
let listening = 0;
for (const port of cfg.ports) {
  const s = net.createServer((c) => {
    c.on('error', () => {});
    const line = c.localPort + ' ' + c.remoteAddress;
    process.stdout.write('conn ' + line + '\\n');
    c.end(line + '\\n');
  });
  s.on('error', fail);
  s.listen(port, '0.0.0.0', () => {
    if (++listening === cfg.ports.length) openControl();
  });
  servers.push(s);
}
// Opened once every port listens, so its answer means ready. Loopback is exempt from the in-pod REDIRECT, so it
// is reachable in an enrolled pod too. The nonce tells this server from another one on the same port.
function openControl() {
  const control = net.createServer((c) => {
    c.on('error', () => {});
    c.setEncoding('utf8');
    let buf = '';
    c.on('data', (d) => {
      buf += d;
      if (!buf.includes('\\n')) return;
      const [verb, nonce] = buf.trim().split(' ');
      if (nonce !== cfg.nonce) c.end('other\\n');
      else if (verb === 'stop') c.end('bye\\n', () => quit('stopped'));
      else c.end('ready ' + cfg.nonce + '\\n');
    });
  });
  control.on('error', fail);
  control.listen(cfg.controlPort, '127.0.0.1');
  servers.push(control);
}
`;

const CLIENT = `
const net = require('node:net');
const [host, port, timeoutMs, message] = process.argv.slice(1);
let done = false;
const finish = (answer) => {
  if (done) return;
  done = true;
  process.stdout.write(answer + '\\n');
  process.exit(0);
};
const sock = net.connect({ host, port: Number(port) }, () => {
  if (message !== undefined) sock.write(message + '\\n');
});
let buf = '';
sock.setEncoding('utf8');
sock.on('data', (d) => { buf += d; });
sock.on('end', () => finish(buf.trim() || 'empty'));
sock.on('error', (e) => finish(e.code === 'ECONNREFUSED' ? 'refused' : 'error ' + e.code));
setTimeout(() => finish('timeout'), Number(timeoutMs));
`;

/** EchoWhoServerOptions configure startEchoWho. */
export interface EchoWhoServerOptions {
  /** Ports answered on every address (e.g. 8080 as the app, 15006 as the proxy's inbound port). */
  ports: readonly number[];
  /** Port on 127.0.0.1 for readiness and stop requests (default 19999). */
  controlPort?: number;
  /** The server exits on its own after this many ms (default 60000). */
  lifetimeMs?: number;
  /** How long start waits until every port accepts (default 10000). */
  readyTimeoutMs?: number;
}

/** echoWhoServerArgv is the server's argv (process.execPath, '-e', script, config). */
export function echoWhoServerArgv(config: { ports: readonly number[]; controlPort: number; lifetimeMs: number; nonce: string }): string[] {
  return [process.execPath, '-e', SERVER, JSON.stringify(config)];
}

/**
 * echoWhoClientArgv is the client's argv: it sends message (a line), if any, and prints the server's answer,
 * `refused`, `timeout` or `error <code>`.
 */
export function echoWhoClientArgv(ip: string, port: number, timeoutMs: number, message?: string): string[] {
  return [process.execPath, '-e', CLIENT, ip, String(port), String(timeoutMs), ...(message === undefined ? [] : [message])];
}

/**
 * echoWho connects from inside netns to ip:port and resolves the answer: `<local port> <remote address>` from an
 * echo-who server, or `refused`, `timeout`, `error <code>`. Throws InvalidArgumentError for a bad ip, port or option;
 * rejects with an Error naming the exit status when the client program fails, and as runInNetns does when it cannot
 * start in netns.
 */
export async function echoWho(
  netns: string | undefined,
  ip: string,
  port: number,
  options: { timeoutMs?: number; message?: string } = {},
): Promise<string> {
  checkString('ip', ip, 64);
  checkInteger('port', port, 1, 65535);
  const timeoutMs = options.timeoutMs === undefined ? 3000 : checkInteger('options.timeoutMs', options.timeoutMs, 1, 600_000);
  // The program's own deadline answers 'timeout'; runInNetns's is only the backstop for a wedged node.
  const message = options.message === undefined ? undefined : checkString('options.message', options.message, 1024);
  const r = await runInNetns(netns, echoWhoClientArgv(ip, port, timeoutMs, message), { timeoutMs: timeoutMs + 10_000, maxOutputBytes: 64 * 1024 });
  if (r.exitCode !== 0) throw new Error(`echo-who client exited with ${r.exitCode ?? r.signal}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

/** EchoWhoServer is a running echo-who server. */
export interface EchoWhoServer {
  /** Resolves how the server ended (its stdout logs `conn <port> <address>` per connection). */
  readonly done: Promise<RunResult>;
  /** stop asks the server to exit and resolves how it ended. */
  stop(): Promise<RunResult>;
}

/**
 * startEchoWho starts an echo-who server inside netns and resolves once every port accepts connections (its control
 * port, which opens last, answers from inside the namespace). Throws InvalidArgumentError for bad options; rejects
 * with an Error (its cause the last failure), after stopping the server, when it is not ready in time or cannot listen.
 */
export async function startEchoWho(netns: string, options: EchoWhoServerOptions): Promise<EchoWhoServer> {
  const o = checkOptions<EchoWhoServerOptions>('options', options);
  if (!Array.isArray(o.ports) || o.ports.length === 0) throw invalidType('options.ports', 'a non-empty array of ports', o.ports);
  const ports = o.ports.map((p, i) => checkInteger(`options.ports[${i}]`, p, 1, 65535));
  const controlPort = checkInteger('options.controlPort', o.controlPort ?? 19999, 1, 65535);
  const lifetimeMs = checkInteger('options.lifetimeMs', o.lifetimeMs ?? 60_000, 1, 3_600_000);
  const readyTimeoutMs = checkInteger('options.readyTimeoutMs', o.readyTimeoutMs ?? 10_000, 1, 600_000);

  let ended = false;
  const nonce = randomUUID();
  const done = runInNetns(netns, echoWhoServerArgv({ ports, controlPort, lifetimeMs, nonce }), {
    timeoutMs: lifetimeMs + 10_000,
    maxOutputBytes: 1024 * 1024,
  }).finally(() => {
    ended = true;
  });
  // Observed here so an early failure is never an unhandled rejection; callers still see it through done/stop.
  done.catch(() => undefined);

  const stop = async (): Promise<RunResult> => {
    if (!ended) {
      const deadline = Date.now() + 5000;
      while (!ended && Date.now() < deadline) {
        const answer = await echoWho(netns, '127.0.0.1', controlPort, { timeoutMs: 1000, message: `stop ${nonce}` }).catch(
          () => 'error',
        );
        if (answer === 'bye' || answer === 'other') break;
        await sleep(50);
      }
    }
    return done;
  };

  const deadline = Date.now() + readyTimeoutMs;
  let lastAnswer = '';
  try {
    for (;;) {
      lastAnswer = await echoWho(netns, '127.0.0.1', controlPort, { timeoutMs: 1000, message: `ping ${nonce}` });
      if (lastAnswer === `ready ${nonce}`) break;
      if (ended || Date.now() >= deadline) throw new Error(`last answer '${lastAnswer}'`);
      await sleep(50);
    }
  } catch (err) {
    // Whatever went wrong, the server must not outlive this call by its whole lifetime.
    const result = await stop().catch((e: unknown) => e);
    const detail = result instanceof Error ? result.message : (result as RunResult).stderr.trim();
    throw new Error(`echo-who server in ${netns} on ports ${ports.join(', ')} not ready (${(err as Error).message}): ${detail}`, {
      cause: err,
    });
  }
  return { done, stop };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
