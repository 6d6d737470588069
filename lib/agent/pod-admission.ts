/**
 * PodAdmission bounds how many pods' calls run at once: a few run, the rest wait their turn in the order they came.
 * Every async netlink call and namespace hop goes through libuv's small thread pool, served first come first served,
 * and the host's probe set client runs one request at a time; with every pod of a burst in flight, each pod's steps
 * queue behind every other pod's and all of them finish with the last. Admitted a few at a time, the first pods
 * finish first and a pod's latency is its place in the queue plus its own work, not the whole burst's; the iptables
 * backend also runs at most this many iptables-restore processes at a time instead of one per pod, and a step's
 * deadline (a restore's, the proxy's ack) starts only when its pod is admitted.
 */
import { availableParallelism } from 'node:os';

/** PodAdmission runs tasks at most `limit` at a time, the waiting ones in FIFO order. */
export class PodAdmission {
  readonly #limit: number;
  #running = 0;
  // A queue with a moving head: shift() on a long array copies it on every call.
  readonly #waiting: (() => void)[] = [];
  #head = 0;

  /** constructor takes the most tasks that run at once (a positive integer, checked by the caller). */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** run starts task once fewer than `limit` tasks run and every task that came before it has started. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.#limit || this.#head < this.#waiting.length) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#running++;
    }
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  /** Hands the finished task's slot to the first waiting one (the count stays), or frees it. */
  #release(): void {
    if (this.#head < this.#waiting.length) {
      const next = this.#waiting[this.#head]!;
      this.#waiting[this.#head++] = noop;
      if (this.#head === this.#waiting.length) {
        this.#waiting.length = 0;
        this.#head = 0;
      }
      next();
      return;
    }
    this.#running--;
  }

  /** running is the number of tasks started and not yet settled. */
  get running(): number {
    return this.#running;
  }

  /** waiting is the number of tasks queued behind them. */
  get waiting(): number {
    return this.#waiting.length - this.#head;
  }
}

function noop(): void {}

/**
 * defaultPodsInFlight is how many pods NodeNetwork admits at once when `maxPodsInFlight` is not given: with
 * iptables, one per CPU (each pod's rules are an iptables-restore process, and more of them than CPUs only contend);
 * with nftables, libuv's pool size (UV_THREADPOOL_SIZE, default 4), the threads its netlink calls run on.
 */
export function defaultPodsInFlight(backend: 'iptables' | 'nftables'): number {
  if (backend === 'iptables') return Math.max(1, availableParallelism());
  const pool = Number.parseInt(process.env.UV_THREADPOOL_SIZE ?? '', 10);
  return Number.isInteger(pool) && pool > 0 ? Math.min(pool, 1024) : 4;
}
