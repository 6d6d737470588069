/**
 * CniServer: the agent's end of podnet-cni. It listens on a SOCK_SEQPACKET socket, reads each invocation the plugin
 * forwards (docs/cni-protocol.md), checks it as the CNI spec says, runs the matching handler (one container's calls
 * one after another, different containers' in parallel) and answers as the spec says.
 */
import { KeyedLock } from '../agent/keyed-lock.js';
import { cniRequestChannel, failure, outcomeOf, timing } from '../diagnostics.js';
import { PodnetError } from '../errors.js';
import { type LogFields, type Logger, toLogger } from '../logger.js';
import type { Netns } from '../netns.js';
import type { ReceivedFd } from '../unix/received-fd.js';
import { SeqpacketServer } from '../unix/server.js';
import type { PeerCredentials, SeqpacketSocket } from '../unix/socket.js';
import { checkArray, checkInteger, checkOptions, invalidType } from '../validate.js';
import { errorAnswer, handlerError, successAnswer } from './answer.js';
import { CNI_ERROR_CODES, CniError } from './errors.js';
import { isCniCommand, type ParsedRequest, parseRequest } from './request.js';
import { CNI_VERSIONS, convertResult } from './result.js';
import { decodeRequestHeader, encodeAnswer, type WireAnswer, WIRE_LIMITS } from './wire.js';

/**
 * CniRequest is one checked CNI invocation as a handler gets it. `netns` is owned by the server and closed once the
 * handler settles: reopen() it to keep the namespace.
 */
export interface CniRequest extends ParsedRequest {
  /**
   * The pod's network namespace, opened from the fd the plugin passed (undefined when the runtime gave none, or for
   * DEL when it could not be opened). Closed by the server after the handler settles: call reopen() to keep it.
   */
  netns: Netns | undefined;
  /** The plugin process's pid, uid and gid (SO_PEERCRED). */
  peer: PeerCredentials;
}

/** CniHandler handles one command; a throw is answered as a CNI error (see CniServer). */
export type CniHandler = (req: CniRequest) => Promise<void> | void;

/** CniServerOptions are the options of CniServer.listen. Every handler is optional: a missing one is success. */
export interface CniServerOptions {
  /** The socket file, `/var/run/podnet/cni.sock` on a node (its folder must exist). */
  path: string;
  /** Permissions of the socket file, 0..0o777. Default 0o600. */
  mode?: number;
  /** Uids besides root (0) allowed to connect; other peers are answered with code 101. Default none. */
  allowedUids?: number[];
  /** ADD: the pod is being set up; on success the prevResult is answered, converted to the config's version. */
  add?: CniHandler;
  /** DEL: the pod is going away; should succeed when things are already gone. */
  del?: CniHandler;
  /** CHECK: throw when the pod's setup is not as ADD left it. */
  check?: CniHandler;
  /** STATUS: throw when ADD cannot be served (code 50; a CniError with cniCode 51 answers 51). */
  status?: CniHandler;
  /** GC: clean up every attachment not in req.validAttachments. */
  gc?: CniHandler;
  /** Where the server logs refused requests and handler failures. Default: silent. */
  logger?: Partial<Logger>;
  /** Deadline in ms for a connection to send its whole request, 1..600000. Default 5000. */
  requestTimeoutMs?: number;
  /** Connections served at once (reading, queued or in a handler), 1..65536; more are closed at once. Default 128. */
  maxConnections?: number;
}

const HANDLER_NAMES = ['add', 'del', 'check', 'status', 'gc'] as const;
const ANSWER_TIMEOUT_MS = 5000;
const ACCEPT_RETRY_MS = 100;
const NEWEST = CNI_VERSIONS[CNI_VERSIONS.length - 1]!;

/** The request as read off the wire. */
interface WireRequest {
  env: [string, string][];
  stdin: Uint8Array;
  fd: ReceivedFd | undefined;
  hasNetnsFd: boolean;
  netnsErrno: number;
}

/** Outcome of one connection, for the diagnostics message. */
interface Served {
  command?: string;
  containerId?: string;
  pod?: string;
  cniCode?: number;
  outcome?: string;
  error?: unknown;
}

function wireBreak(message: string): PodnetError {
  return new PodnetError(`cni request: ${message}`, 'ERR_CNI_WIRE');
}

/**
 * CniServer answers the invocations podnet-cni forwards. Before any handler runs, a request is checked as the CNI
 * spec says and refused with a CNI error: 4 for a missing or malformed CNI_COMMAND, CNI_CONTAINERID, CNI_IFNAME,
 * CNI_NETNS (required for ADD and CHECK; an fd that is no network namespace or could not be opened) or CNI_ARGS; 6
 * for a config that is not a JSON object; 7 for an invalid network config (no name or cniVersion, ADD or CHECK
 * without prevResult, GC without `cni.dev/valid-attachments`); 1 for a cniVersion podnet does not support (or too
 * old for the command) or a prevResult it cannot convert; 101 for a peer neither root nor in allowedUids.
 *
 * A handler's throw is answered with: the CniError's own code; 11 for a retryable AgentError; 7 for an
 * InvalidArgumentError (4 when its argument is about the netns); 50 from status() (51 for a CniError saying so);
 * 100 for anything else. The error's message is the `msg`, its `code` the `details`. A request that breaks the wire
 * protocol, or is not sent whole within requestTimeoutMs, is closed without an answer. Each connection publishes a
 * CniRequestMessage on `podnet:cni:request`.
 */
export class CniServer implements AsyncDisposable {
  /** path is the socket file. */
  readonly path: string;
  readonly #server: SeqpacketServer;
  readonly #handlers: Partial<Record<(typeof HANDLER_NAMES)[number], CniHandler>>;
  readonly #allowedUids: ReadonlySet<number>;
  readonly #logger: Logger;
  readonly #requestTimeoutMs: number;
  readonly #maxConnections: number;
  readonly #lock = new KeyedLock();
  /** Connections being served, and whether each is still reading its request (close() cuts those short). */
  readonly #connections = new Map<SeqpacketSocket, { reading: boolean; done: Promise<void> }>();
  #closing: Promise<void> | undefined;
  #acceptLoop: Promise<void> = Promise.resolve();

  private constructor(server: SeqpacketServer, opts: CniServerOptions, allowed: number[], timeoutMs: number, max: number) {
    this.path = server.path;
    this.#server = server;
    this.#handlers = {};
    for (const name of HANDLER_NAMES) if (opts[name]) this.#handlers[name] = opts[name];
    this.#allowedUids = new Set([0, ...allowed]);
    this.#logger = toLogger(opts.logger);
    this.#requestTimeoutMs = timeoutMs;
    this.#maxConnections = max;
  }

  /**
   * CniServer.listen checks the options, listens at options.path (mode 0600 unless given; a stale socket file is
   * replaced) and starts serving. Throws InvalidArgumentError for bad options (a handler that is not a function, a
   * uid out of range, ...), and what SeqpacketServer.listen throws (`EADDRINUSE` when a server listens there,
   * `ENOENT` for a missing folder, ...).
   */
  static async listen(options: CniServerOptions): Promise<CniServer> {
    const opts = checkOptions<CniServerOptions>('options', options);
    for (const name of HANDLER_NAMES) {
      const handler: unknown = opts[name];
      if (handler !== undefined && typeof handler !== 'function') throw invalidType(`options.${name}`, 'a function', handler);
    }
    if (opts.logger !== undefined && (typeof opts.logger !== 'object' || opts.logger === null)) {
      throw invalidType('options.logger', 'a logger object', opts.logger);
    }
    const allowed =
      opts.allowedUids === undefined
        ? []
        : checkArray('options.allowedUids', opts.allowedUids, 'an array of uids', (uid, name) => checkInteger(name, uid, 0, 0xfffffffe));
    const timeoutMs = opts.requestTimeoutMs === undefined ? 5000 : checkInteger('options.requestTimeoutMs', opts.requestTimeoutMs, 1, 600000);
    const max = opts.maxConnections === undefined ? 128 : checkInteger('options.maxConnections', opts.maxConnections, 1, 65536);
    const server = SeqpacketServer.listen({ path: opts.path as string, mode: opts.mode ?? 0o600, backlog: 128 });
    const cni = new CniServer(server, opts as CniServerOptions, allowed, timeoutMs, max);
    cni.#acceptLoop = cni.#accept();
    return cni;
  }

  /** closed tells whether close() was called. */
  get closed(): boolean {
    return this.#closing !== undefined;
  }

  /** connections is the number of connections being served now (reading, queued or in a handler). */
  get connections(): number {
    return this.#connections.size;
  }

  /**
   * close stops accepting, closes connections still sending their request, waits for the requests already read
   * (their handlers run and they are answered), and removes the socket file. Calling it again returns the same
   * promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** Symbol.asyncDispose is close(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** toString names the socket file. */
  toString(): string {
    return `CniServer(${this.path})`;
  }

  /** #log logs through the injected logger; a logger that throws loses its line, never the request or the server. */
  #log(level: keyof Logger, message: string, fields: LogFields): void {
    try {
      this.#logger[level](message, fields);
    } catch {
      // Nowhere left to report it.
    }
  }

  async #close(): Promise<void> {
    this.#server.close();
    for (const [socket, state] of this.#connections) if (state.reading) socket.close();
    await this.#acceptLoop;
    while (this.#connections.size > 0) await Promise.all([...this.#connections.values()].map((c) => c.done));
  }

  async #accept(): Promise<void> {
    while (this.#closing === undefined) {
      let socket: SeqpacketSocket;
      try {
        socket = await this.#server.accept();
      } catch (err) {
        if (this.#closing !== undefined || (err as { code?: unknown }).code === 'ERR_UNIX_CLOSED') return;
        // EMFILE and the like: the connection waits in the backlog until fds are free again.
        this.#log('error', 'cni: accept failed', { error: err });
        await new Promise((resolve) => setTimeout(resolve, ACCEPT_RETRY_MS));
        continue;
      }
      if (this.#closing !== undefined) {
        // Accepted just as close() began: close() no longer sees it, so it is not served.
        socket.close();
        return;
      }
      if (this.#connections.size >= this.#maxConnections) {
        this.#log('warn', 'cni: too many connections, one closed', { max: this.#maxConnections });
        socket.close();
        continue;
      }
      const state = { reading: true, done: Promise.resolve() };
      this.#connections.set(socket, state);
      state.done = this.#serve(socket, state).finally(() => {
        socket.close();
        this.#connections.delete(socket);
      });
    }
  }

  async #serve(socket: SeqpacketSocket, state: { reading: boolean }): Promise<void> {
    const startTime = performance.now();
    const served: Served = {};
    let request: WireRequest | undefined;
    try {
      request = await this.#read(socket);
      state.reading = false;
      const answer = await this.#answer(socket.peerCredentials, request, served);
      for (const message of encodeAnswer(answer)) await socket.send(message, { timeoutMs: ANSWER_TIMEOUT_MS });
    } catch (err) {
      // Nothing (or not all of the answer) reached the peer: the plugin answers as for an unreachable agent.
      served.outcome = outcomeOf(err);
      served.error = err;
      served.cniCode = undefined;
      this.#log('warn', 'cni: request ended without an answer', { error: err, containerId: served.containerId });
    } finally {
      request?.fd?.close();
    }
    if (cniRequestChannel.hasSubscribers) {
      const t = served.error === undefined ? timing(startTime, served.outcome ?? 'ok') : { ...failure(startTime, served.error), outcome: served.outcome! };
      cniRequestChannel.publish({ ...t, command: served.command, containerId: served.containerId, pod: served.pod, cniCode: served.cniCode });
    }
  }

  /** #read reads one request off the wire, or throws ERR_CNI_WIRE (or the socket's error) for one that breaks it. */
  async #read(socket: SeqpacketSocket): Promise<WireRequest> {
    const deadline = performance.now() + this.#requestTimeoutMs;
    const remaining = () => Math.max(0, Math.ceil(deadline - performance.now()));
    const first = await socket.receive({ maxBytes: WIRE_LIMITS.maxMessage, maxFds: 1, timeoutMs: remaining() });
    if (first === null) throw wireBreak('the peer closed before sending a request');
    const fd = first.fds[0];
    try {
      const header = decodeRequestHeader(first.data);
      if (header.hasNetnsFd !== (fd !== undefined)) {
        throw wireBreak(header.hasNetnsFd ? 'the header announces a netns fd but none came' : 'an fd came that the header does not announce');
      }
      const stdin = new Uint8Array(header.stdinLength);
      let got = 0;
      while (got < header.stdinLength) {
        const maxBytes = Math.min(WIRE_LIMITS.maxMessage, header.stdinLength - got);
        // A chunk longer than the bytes still announced is truncated by the receive: a broken request.
        const chunk = await socket.receive({ maxBytes, maxFds: 0, timeoutMs: remaining() });
        if (chunk === null) throw wireBreak(`the peer closed after ${got} of ${header.stdinLength} config bytes`);
        stdin.set(chunk.data, got);
        got += chunk.data.byteLength;
      }
      return { env: header.env, stdin, fd, hasNetnsFd: header.hasNetnsFd, netnsErrno: header.netnsErrno };
    } catch (err) {
      fd?.close();
      throw err;
    }
  }

  /** #answer checks the request, runs its handler and says what to answer; it never throws. */
  async #answer(peer: PeerCredentials, wire: WireRequest, served: Served): Promise<WireAnswer> {
    const refuse = (error: CniError, cniVersion: string, cause?: unknown): WireAnswer => {
      served.cniCode = error.cniCode;
      served.outcome = cause === undefined ? error.code : outcomeOf(cause);
      served.error = cause ?? error;
      // A handler's failure is logged where it is caught; this line is for requests refused before any handler.
      if (cause === undefined) this.#log('warn', `cni: ${served.command ?? 'request'} refused: ${error.message}`, { code: error.cniCode, containerId: served.containerId });
      return errorAnswer(error, cniVersion);
    };
    if (!this.#allowedUids.has(peer.uid)) {
      return refuse(new CniError(CNI_ERROR_CODES.peerNotAllowed, `peer uid ${peer.uid} is not allowed to use '${this.path}'`, 'SO_PEERCRED'), NEWEST);
    }
    const parsed = parseRequest(wire);
    if (!parsed.ok) {
      // Only a known command labels the message: a peer's arbitrary text never becomes a metric label.
      const command = wire.env.find(([name]) => name === 'CNI_COMMAND')?.[1];
      if (command !== undefined && isCniCommand(command)) served.command = command;
      return refuse(parsed.error, parsed.cniVersion);
    }
    const parsedRequest = parsed.request;
    const { command, config } = parsedRequest;
    served.command = command;
    served.containerId = parsedRequest.containerId || undefined;
    served.pod = parsedRequest.pod?.uid;
    if (command === 'VERSION') {
      served.cniCode = 0;
      return successAnswer({ cniVersion: config.cniVersion, supportedVersions: CNI_VERSIONS });
    }

    let netns: Netns | undefined;
    if (wire.fd !== undefined) {
      try {
        netns = wire.fd.toNetns(parsedRequest.netnsPath);
      } catch (err) {
        const msg = `CNI_NETNS '${parsedRequest.netnsPath ?? ''}' is not a network namespace (${String((err as { code?: unknown }).code)})`;
        return refuse(new CniError(CNI_ERROR_CODES.invalidEnvironment, msg, 'CNI_NETNS'), config.cniVersion);
      }
    }
    const req: CniRequest = { ...parsedRequest, netns, peer };
    const handler = this.#handlers[command.toLowerCase() as (typeof HANDLER_NAMES)[number]];
    const run = async (): Promise<void> => {
      try {
        if (handler) await handler(req);
      } finally {
        netns?.close();
      }
    };
    try {
      // One container's calls never overlap; STATUS and GC are about no one container.
      if (req.containerId !== '' && command !== 'STATUS' && command !== 'GC') await this.#lock.run(req.containerId, run);
      else await run();
    } catch (err) {
      this.#log('error', `cni: ${command} handler failed`, { error: err, containerId: req.containerId, pod: req.pod?.uid });
      return refuse(handlerError(command, err), config.cniVersion, err);
    }
    served.cniCode = 0;
    served.outcome = 'ok';
    if (command !== 'ADD') return successAnswer();
    return successAnswer(convertResult(config.raw.prevResult, config.cniVersion, config.cniVersion));
  }
}
