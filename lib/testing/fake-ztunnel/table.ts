/**
 * The workload table of FakeZtunnel and how a request changes it, as ztunnel applies one: an add takes its netns fd,
 * a keep marks a uid as named by the connection, a del drops it, a SnapshotSent drops what the connection did not
 * name. Every decoded request is recorded, every protocol error too; scripted failures refuse valid requests.
 */
import type { Netns } from '../../netns.js';
import { decodeRequest, type ZdsRequest } from '../../proxy/zds-messages.js';
import type { ReceivedFd } from '../../unix/received-fd.js';
import type { ReceivedMessage } from '../../unix/socket.js';
import type { FakeZtunnelMessage, FakeZtunnelProtocolError, FakeZtunnelProtocolErrorKind, FakeZtunnelWorkload } from './types.js';
import { CountedQueue, closeFds, short } from './wire.js';

/** WorkloadTable holds the workloads (and their netns handles) and the record of what was received. */
export class WorkloadTable {
  /** The namespace handle of each workload in #workloads. */
  readonly #table = new Map<string, Netns>();
  readonly #workloads = new Map<string, FakeZtunnelWorkload>();
  readonly #received: FakeZtunnelMessage[] = [];
  readonly #protocolErrors: FakeZtunnelProtocolError[] = [];
  #snapshots = 0;
  /** failures are the scripted ack errors of the next valid requests. */
  readonly failures = new CountedQueue<string>();

  /** workloads are what the table holds now, by uid. */
  get workloads(): ReadonlyMap<string, FakeZtunnelWorkload> {
    return this.#workloads;
  }

  /** received lists every request that decoded, in order. */
  get received(): readonly FakeZtunnelMessage[] {
    return this.#received;
  }

  /** snapshots counts the SnapshotSent requests received. */
  get snapshots(): number {
    return this.#snapshots;
  }

  /** protocolErrors lists what the agent did wrong, in order. */
  get protocolErrors(): readonly FakeZtunnelProtocolError[] {
    return this.#protocolErrors;
  }

  /** clear closes every namespace handle and empties the table and the scripted failures; the record stays. */
  clear(): void {
    for (const netns of this.#table.values()) netns.close();
    this.#table.clear();
    this.#workloads.clear();
    this.failures.clear();
  }

  /**
   * apply checks one message, records it and applies it to the table; returns its ack's error ('' for success).
   * named holds the uids the message's connection added or kept, what its SnapshotSent keeps.
   */
  apply(named: Set<string>, message: ReceivedMessage): string {
    const { data, fds } = message;
    let req: ZdsRequest;
    try {
      req = decodeRequest(data);
    } catch (err) {
      closeFds(fds);
      const reason = err instanceof Error ? err.message : String(err);
      return this.protocolError('undecodable', `undecodable request: ${short(reason, 200)}`);
    }
    if (req.kind === 'add') return this.#add(named, req, fds);
    this.#record(req.kind === 'snapshotSent' ? { kind: 'snapshotSent' } : { kind: req.kind, uid: req.uid });
    if (req.kind === 'snapshotSent') this.#snapshots++;
    const uid = req.kind === 'snapshotSent' ? undefined : req.uid;
    if (fds.length > 0) {
      closeFds(fds);
      return this.protocolError('unexpectedFd', `${req.kind} carries ${fds.length} fd(s); only an add carries one`, req.kind, uid);
    }
    const failure = this.failures.shift();
    if (failure !== undefined) return failure;
    switch (req.kind) {
      case 'keep':
        // ztunnel keeps what it has; a keep of a uid it never had gives it nothing to keep.
        if (this.#table.has(req.uid)) named.add(req.uid);
        break;
      case 'del':
        this.#drop(req.uid);
        named.delete(req.uid);
        break;
      case 'snapshotSent':
        for (const known of [...this.#table.keys()]) if (!named.has(known)) this.#drop(known);
        break;
    }
    return '';
  }

  #add(named: Set<string>, req: Extract<ZdsRequest, { kind: 'add' }>, fds: ReceivedFd[]): string {
    const { uid, workload } = req;
    if (fds.length !== 1) {
      closeFds(fds);
      this.#record({ kind: 'add', uid, workload, netnsId: undefined });
      return fds.length === 0
        ? this.protocolError('missingFd', 'add carries no netns fd', 'add', uid)
        : this.protocolError('extraFds', `add carries ${fds.length} fds; it must carry exactly one`, 'add', uid);
    }
    const fd = fds[0]!;
    let netns: Netns;
    try {
      netns = fd.toNetns(`zds add ${short(uid)}`);
    } catch (err) {
      fd.close();
      this.#record({ kind: 'add', uid, workload, netnsId: undefined });
      const reason = err instanceof Error ? err.message : String(err);
      return this.protocolError('notNetns', `add's fd is not a network namespace: ${short(reason, 200)}`, 'add', uid);
    }
    this.#record({ kind: 'add', uid, workload, netnsId: netns.id });
    const failure = this.failures.shift();
    if (failure !== undefined) {
      netns.close();
      return failure;
    }
    this.#table.get(uid)?.close();
    this.#table.set(uid, netns);
    this.#workloads.set(uid, Object.freeze({ uid, workload, netnsId: netns.id }));
    named.add(uid);
    return '';
  }

  #drop(uid: string): void {
    const netns = this.#table.get(uid);
    if (!netns) return;
    netns.close();
    this.#table.delete(uid);
    this.#workloads.delete(uid);
  }

  #record(message: FakeZtunnelMessage): void {
    if (message.kind === 'add') Object.freeze(message.workload);
    this.#received.push(Object.freeze(message));
  }

  /** protocolError records what the agent did wrong and returns the ack error that says so. */
  protocolError(kind: FakeZtunnelProtocolErrorKind, message: string, request?: ZdsRequest['kind'], uid?: string): string {
    const text = uid === undefined ? message : `${message} (uid '${short(uid)}')`;
    this.#protocolErrors.push(Object.freeze({ kind, message: text, request, uid }));
    return text;
  }
}
