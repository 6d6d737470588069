/**
 * KeyedLock runs tasks for one key one after another (tasks for other keys run
 * freely), so an add and a remove of the same pod IP cannot interleave.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const prev = this.#tails.get(key) ?? Promise.resolve();
    const next = prev.then(task, task);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return next;
  }

  /** pending is the number of keys with queued work. */
  get pending(): number {
    return this.#tails.size;
  }
}
