/**
 * IpsetQueue: a client's async operations run one at a time, in call order. Single adds and deletes queued back to
 * back for the same set and mode join one job (sent as one ADT batch; each caller still gets its own result), so
 * 10,000 concurrent add() calls cost a handful of kernel round trips.
 */
import { withCallerStack } from '../errors.js';
import { ipsetClosedError } from './error-map.js';

/** One caller's entry in a coalesced job. */
export interface PendingItem {
  entry: unknown;
  resolve: (v: void) => void;
  reject: (e: unknown) => void;
}

/** A queued ADD/DEL batch that later calls for the same set and mode may join until it starts. */
export interface AdtJob {
  command: number;
  excl: boolean;
  name: string;
  items: PendingItem[];
  started: boolean;
}

export class IpsetQueue {
  #tail: Promise<unknown> = Promise.resolve();
  /** The last job queued, while later calls may still join it. */
  #open: AdtJob | undefined;
  readonly #runJob: (job: AdtJob) => Promise<void>;
  #closed = false;

  /** runJob sends a coalesced job and settles each of its items; it runs in the job's turn. */
  constructor(runJob: (job: AdtJob) => Promise<void>) {
    this.#runJob = runJob;
  }

  /** serial runs fn after every operation queued before it; the queue survives failures. After close() it rejects. */
  serial<T>(fn: () => Promise<T> | T): Promise<T> {
    if (this.#closed) return Promise.reject(ipsetClosedError());
    const caller = new Error();
    const run = this.#tail.then(() => fn());
    this.#tail = run.catch(() => undefined);
    this.#open = undefined;
    return withCallerStack(run, caller);
  }

  /** adt queues one entry's ADD or DEL, in the last queued job when that is for the same set and mode and waits. */
  adt(command: number, name: string, entry: unknown, excl: boolean): Promise<void> {
    if (this.#closed) return Promise.reject(ipsetClosedError());
    return new Promise<void>((resolve, reject) => {
      const item: PendingItem = { entry, resolve, reject };
      const open = this.#open;
      if (open && !open.started && open.command === command && open.excl === excl && open.name === name) {
        open.items.push(item);
        return;
      }
      const job: AdtJob = { command, excl, name, items: [item], started: false };
      this.serial(() => this.#start(job)).catch(() => undefined);
      this.#open = job;
    });
  }

  /**
   * close makes later calls reject with ERR_IPSET_CLOSED; the operations queued before run as they would have. The
   * promise settles when the last of them has.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#open = undefined;
    return this.#tail.then(() => undefined);
  }

  #start(job: AdtJob): Promise<void> {
    job.started = true;
    if (this.#open === job) this.#open = undefined;
    return this.#runJob(job);
  }
}
