/**
 * SimulatedNode: a Kubernetes node made of network namespaces only, for tests
 * and demos that need real packets. One namespace stands for the host, one per
 * pod, each pod joined to the host by a veth pair with point-to-point /32
 * addressing (as the common CNI plugins do). Nothing is configured in the
 * namespace of the calling process.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';

import { NETNS_RUN_DIR, checkNetnsName } from '../netns.js';
import { runInNetns, type RunOptions, type RunResult } from '../spawn.js';
import { checkInteger, checkOptions, invalidValue } from '../validate.js';

/** SimulatedNodeOptions configure SimulatedNode.create. */
export interface SimulatedNodeOptions {
  /** Part of every namespace name (letters, digits, '-'; default 'sim'), so a caller can recognise its own. */
  tag?: string;
  /** How many pods (1-50). */
  pods: number;
  /** Deadline of each `ip`/`sysctl` run in ms (default 10000). */
  commandTimeoutMs?: number;
  /** Aborting stops construction at the next step and deletes what was made. */
  signal?: AbortSignal;
}

/** SimNamespace is one namespace of a SimulatedNode, as `ip netns` names it. */
export interface SimNamespace {
  /** The name under /run/netns. */
  readonly name: string;
  /** The namespace file (/run/netns/<name>). */
  readonly path: string;
}

/** SimPod is a pod's namespace of a SimulatedNode: its address, a UID and its veth's host side. */
export interface SimPod extends SimNamespace {
  /** The pod's address on eth0. */
  readonly ip: string;
  /** A pod UID (random, as Kubernetes makes them) for the agent's probe entries. */
  readonly uid: string;
  /** The host side of the pod's veth pair. */
  readonly hostInterface: string;
}

/** SIM_GATEWAY is the host side's address on every veth, and the pods' gateway. */
export const SIM_GATEWAY = '10.244.0.1';

const MAX_PODS = 50;
const TAG = /^[A-Za-z0-9-]{1,24}$/;
let counter = 0;

function run(argv: string[], timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const [program, ...args] = argv as [string, ...string[]];
    execFile(program, args, { timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, _stdout, stderr) => {
      if (err) {
        const detail = String(stderr).trim();
        reject(new Error(`${argv.join(' ')} failed${detail ? `: ${detail}` : ''}`, { cause: err }));
      } else {
        resolve();
      }
    });
  });
}

/**
 * SimulatedNode is a Kubernetes node made of network namespaces only, for tests and demos that need real packets: one
 * namespace stands for the host, one per pod, each pod joined to the host by a veth pair with /32 addressing. Nothing
 * is configured in the caller's namespace. Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and iproute2; destroy it (or
 * `await using` it) when done.
 */
export class SimulatedNode implements AsyncDisposable, Disposable {
  /** host is the namespace that stands for the node's host. */
  readonly host: SimNamespace;
  /** pods are the pods' namespaces, pod0 first (10.244.0.10, 10.244.0.11, ...). */
  readonly pods: readonly SimPod[];
  readonly #made: string[] = [];
  readonly #timeoutMs: number;
  #destroying: Promise<void> | undefined;

  private constructor(prefix: string, pods: number, timeoutMs: number) {
    const ns = (suffix: string): SimNamespace => {
      const name = checkNetnsName(`${prefix}-${suffix}`);
      return { name, path: `${NETNS_RUN_DIR}/${name}` };
    };
    this.host = ns('host');
    this.pods = Array.from({ length: pods }, (_, i) => ({
      ...ns(`pod${i}`),
      ip: `10.244.0.${10 + i}`,
      uid: randomUUID(),
      hostInterface: `vp${i}`,
    }));
    this.#timeoutMs = timeoutMs;
  }

  /** namespaces lists every namespace this node is made of (host first). */
  get namespaces(): SimNamespace[] {
    return [this.host, ...this.pods];
  }

  /** names are the namespace names made so far and not deleted yet. */
  get names(): readonly string[] {
    return [...this.#made];
  }

  /**
   * create builds the node: namespaces named `podnet-<tag>-<pid>-<n>-host` / `-pod<i>`, veths, addresses, routes,
   * forwarding in the host namespace. Throws InvalidArgumentError for bad options; on any failure (an `ip` or
   * `sysctl` run that fails rejects with an Error naming the command and its stderr; an abort with the signal's
   * reason) every namespace made so far is deleted and the error is rethrown.
   */
  static async create(options: SimulatedNodeOptions): Promise<SimulatedNode> {
    const o = checkOptions<SimulatedNodeOptions>('options', options);
    const tag = o.tag ?? 'sim';
    if (typeof tag !== 'string' || !TAG.test(tag)) throw invalidValue('options.tag', 'letters, digits and "-" (1-24)', tag);
    const pods = checkInteger('options.pods', o.pods, 1, MAX_PODS);
    const timeoutMs = o.commandTimeoutMs === undefined ? 10_000 : checkInteger('options.commandTimeoutMs', o.commandTimeoutMs, 1, 600_000);
    const node = new SimulatedNode(`podnet-${tag}-${process.pid}-${++counter}`, pods, timeoutMs);
    try {
      await node.#build(o.signal);
    } catch (err) {
      await node.destroy().catch(() => undefined);
      throw err;
    }
    return node;
  }

  async #ip(ns: SimNamespace | undefined, ...args: string[]): Promise<void> {
    await run(['ip', ...(ns ? ['-n', ns.name] : []), ...args], this.#timeoutMs);
  }

  async #sysctl(ns: SimNamespace, setting: string): Promise<void> {
    // Net sysctls act on the namespace of the process that writes them, so sysctl runs inside the host namespace.
    const r = await runInNetns(ns.path, ['sysctl', '-q', '-w', setting], { timeoutMs: this.#timeoutMs });
    if (r.exitCode !== 0) throw new Error(`sysctl -w ${setting} in ${ns.name} failed: ${r.stderr.trim()}`);
  }

  async #add(ns: SimNamespace, signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    // Someone else's namespace (or a crashed run's with a reused pid) is never adopted, so never deleted by us.
    if (existsSync(ns.path)) throw new Error(`network namespace ${ns.name} already exists`);
    // Recorded before it exists: a failure half way through `ip netns add` may still leave the mount behind.
    this.#made.push(ns.name);
    await this.#ip(undefined, 'netns', 'add', ns.name);
    await this.#ip(ns, 'link', 'set', 'lo', 'up');
  }

  async #build(signal: AbortSignal | undefined): Promise<void> {
    const host = this.host;
    await this.#add(host, signal);
    // Before the veths exist, so they inherit "off" from default; "all" is or'ed with each interface's value.
    await this.#sysctl(host, 'net.ipv4.ip_forward=1');
    await this.#sysctl(host, 'net.ipv4.conf.all.rp_filter=0');
    await this.#sysctl(host, 'net.ipv4.conf.default.rp_filter=0');
    for (const pod of this.pods) {
      await this.#add(pod, signal);
      signal?.throwIfAborted();
      // Made inside the host namespace with the peer moved straight into the pod: never a link in ours.
      await this.#ip(host, 'link', 'add', pod.hostInterface, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod.name);
      await this.#ip(host, 'addr', 'add', `${SIM_GATEWAY}/32`, 'dev', pod.hostInterface);
      await this.#ip(host, 'link', 'set', pod.hostInterface, 'up');
      await this.#ip(host, 'route', 'add', `${pod.ip}/32`, 'dev', pod.hostInterface);
      await this.#sysctl(host, `net.ipv4.conf.${pod.hostInterface}.rp_filter=0`);
      await this.#ip(pod, 'addr', 'add', `${pod.ip}/32`, 'dev', 'eth0');
      await this.#ip(pod, 'link', 'set', 'eth0', 'up');
      await this.#ip(pod, 'route', 'add', SIM_GATEWAY, 'dev', 'eth0');
      await this.#ip(pod, 'route', 'add', 'default', 'via', SIM_GATEWAY, 'dev', 'eth0');
    }
    signal?.throwIfAborted();
  }

  /** run runs argv inside a namespace of this node (its path), as runInNetns does, and rejects as it does. */
  run(netns: string, argv: readonly string[], options?: RunOptions): Promise<RunResult> {
    return runInNetns(netns, argv, options);
  }

  /**
   * destroy deletes every namespace this node made (the veths go with them). Idempotent; tries every namespace and
   * then rejects with an AggregateError of the failures, if any (a later call tries those again).
   */
  destroy(): Promise<void> {
    // Concurrent callers (a signal handler and a finally block) share one pass.
    this.#destroying ??= this.#deleteAll().finally(() => {
      this.#destroying = undefined;
    });
    return this.#destroying;
  }

  async #deleteAll(): Promise<void> {
    const errors: unknown[] = [];
    // Pods first: their veth peers disappear with them, and the host goes last.
    for (const name of [...this.#made].reverse()) {
      try {
        await run(['ip', 'netns', 'delete', name], this.#timeoutMs);
        this.#forget(name);
      } catch (err) {
        this.#deleteFailed(name, err, errors);
      }
    }
    throwIfAny(errors);
  }

  #forget(name: string): void {
    const i = this.#made.indexOf(name);
    if (i >= 0) this.#made.splice(i, 1);
  }

  // A delete that failed because the namespace is already gone counts as done; any other failure is kept.
  #deleteFailed(name: string, err: unknown, errors: unknown[]): void {
    if (isGone(name)) this.#forget(name);
    else errors.push(err);
  }

  /**
   * destroySync is destroy() for exit paths that cannot wait (process 'exit' handlers, `using`); it throws the
   * AggregateError of the namespaces it could not delete.
   */
  destroySync(): void {
    const errors: unknown[] = [];
    for (const name of [...this.#made].reverse()) {
      try {
        execFileSync('ip', ['netns', 'delete', name], { stdio: 'ignore', timeout: this.#timeoutMs, killSignal: 'SIGKILL' });
        this.#forget(name);
      } catch (err) {
        this.#deleteFailed(name, err, errors);
      }
    }
    throwIfAny(errors);
  }

  /** Symbol.asyncDispose is destroy(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.destroy();
  }

  /** Symbol.dispose is destroySync(), for `using`. */
  [Symbol.dispose](): void {
    this.destroySync();
  }
}

/** A namespace that was never mounted (or is already deleted) needs no deleting. */
function isGone(name: string): boolean {
  return !existsSync(`${NETNS_RUN_DIR}/${name}`);
}

/** throwIfAny throws the AggregateError of the namespaces that could not be deleted, if any. */
function throwIfAny(errors: unknown[]): void {
  if (errors.length > 0) throw new AggregateError(errors, `could not delete ${errors.length} namespace(s) of the simulated node`);
}
