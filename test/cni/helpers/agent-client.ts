// What podnet-cni does, in TypeScript, for tests: one connection per invocation, the request (header with the netns
// fd attached, then the config in chunks) and the answer read back exactly as docs/cni-protocol.md says.
import { SeqpacketSocket } from '../../../lib/unix/index.js';
import { decodeAnswerHeader, encodeRequest, WIRE_LIMITS } from '../../../lib/cni/wire.js';

/** AgentCall is one invocation as the plugin forwards it. */
export interface AgentCall {
  /** The CNI_* variables, in environ order (a record keeps its key order). */
  env: Record<string, string> | [string, string][];
  /** The network config (stdin): text or bytes. */
  stdin: string | Uint8Array;
  /** An open fd to attach as the netns fd (it stays the caller's). */
  netnsFd?: number;
  /** The errno of a failed open of CNI_NETNS (no fd attached then). Default 0. */
  netnsErrno?: number;
  /** Deadline for the whole exchange, ms. Default 10000, as the plugin's. */
  timeoutMs?: number;
}

/** AgentAnswer is what the plugin would print and exit with. */
export interface AgentAnswer {
  exitStatus: number;
  stdout: string;
  stderr: string;
}

/** AgentNoAnswerError: the agent closed (or broke the protocol) without a whole answer. */
export class AgentNoAnswerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentNoAnswerError';
  }
}

async function readStream(socket: SeqpacketSocket, length: number, deadline: number, what: string): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  let got = 0;
  while (got < length) {
    const message = await socket.receive({ maxBytes: WIRE_LIMITS.maxMessage, maxFds: 0, timeoutMs: Math.max(0, Math.ceil(deadline - performance.now())) });
    if (message === null) throw new AgentNoAnswerError(`agent closed after ${got} of ${length} ${what} bytes`);
    if (got + message.data.byteLength > length) throw new AgentNoAnswerError(`${what} longer than announced`);
    out.set(message.data, got);
    got += message.data.byteLength;
  }
  return out;
}

/**
 * invokeAgent forwards one invocation to the CniServer at socketPath and resolves its answer. Rejects with
 * AgentNoAnswerError when the agent closes without a whole answer, and with the socket's error (ETIMEDOUT at the
 * deadline, ENOENT, ...) otherwise.
 */
export async function invokeAgent(socketPath: string, call: AgentCall): Promise<AgentAnswer> {
  const timeoutMs = call.timeoutMs ?? 10000;
  const deadline = performance.now() + timeoutMs;
  const left = () => Math.max(0, Math.ceil(deadline - performance.now()));
  const env = Array.isArray(call.env) ? call.env : Object.entries(call.env);
  const stdin = typeof call.stdin === 'string' ? new TextEncoder().encode(call.stdin) : call.stdin;
  const [header, ...config] = encodeRequest({ hasNetnsFd: call.netnsFd !== undefined, netnsErrno: call.netnsErrno ?? 0, env }, stdin);
  using socket = await SeqpacketSocket.connect(socketPath, { timeoutMs: left() });
  await socket.send(header!, { fds: call.netnsFd === undefined ? [] : [call.netnsFd], timeoutMs: left() });
  for (const chunk of config) await socket.send(chunk, { timeoutMs: left() });
  const first = await socket.receive({ maxBytes: WIRE_LIMITS.maxMessage, maxFds: 0, timeoutMs: left() });
  if (first === null) throw new AgentNoAnswerError('agent closed without answering');
  const answer = decodeAnswerHeader(first.data);
  const stdout = await readStream(socket, answer.stdoutLength, deadline, 'stdout');
  const stderr = await readStream(socket, answer.stderrLength, deadline, 'stderr');
  const decoder = new TextDecoder();
  return { exitStatus: answer.exitStatus, stdout: decoder.decode(stdout), stderr: decoder.decode(stderr) };
}
