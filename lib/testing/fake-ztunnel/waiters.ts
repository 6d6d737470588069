/**
 * The waits of FakeZtunnel (waitFor, waitForSnapshot): each is checked at once and again after every applied
 * message, until it is satisfied, its deadline passes or the fake is closed.
 */

interface Waiter {
  /** settle resolves the waiter and returns true when it is satisfied now. */
  readonly settle: () => boolean;
  readonly fail: (err: Error) => void;
}

/** Waiters holds the pending waits of one fake. */
export class Waiters {
  readonly #waiters = new Set<Waiter>();

  /** notify checks every pending wait again (after a message was applied). */
  notify(): void {
    for (const waiter of [...this.#waiters]) waiter.settle();
  }

  /** failAll rejects every pending wait with err (the fake was closed). */
  failAll(err: Error): void {
    for (const waiter of [...this.#waiters]) waiter.fail(err);
  }

  /**
   * wait settles at once when check is satisfied now, and otherwise after each notify() until it is, the deadline
   * passes (rejecting with timedOut()) or failAll() is called. closed() is the error to reject with at once when the
   * fake is already closed, or undefined.
   */
  wait<T>(
    timeoutMs: number,
    check: (resolve: (value: T) => void) => boolean,
    timedOut: () => Error,
    closed: () => Error | undefined,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter: Waiter = {
        settle: () => {
          let done: boolean;
          try {
            done = check((value) => {
              finish();
              resolve(value);
            });
          } catch (err) {
            finish();
            reject(err);
            return true;
          }
          return done;
        },
        fail: (err) => {
          finish();
          reject(err);
        },
      };
      const finish = (): void => {
        clearTimeout(timer);
        this.#waiters.delete(waiter);
      };
      if (waiter.settle()) return;
      const closedError = closed();
      if (closedError) {
        reject(closedError);
        return;
      }
      this.#waiters.add(waiter);
      timer = setTimeout(() => {
        finish();
        reject(timedOut());
      }, timeoutMs);
    });
  }
}
