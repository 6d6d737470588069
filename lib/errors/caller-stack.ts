/** The caller's stack on errors of async native work, so they point at the line that started the operation. */

/**
 * withCallerStack appends the caller's stack to an error that was created on a later tick (native async work), so
 * async failures point at the line that started the operation.
 */
export function withCallerStack<T>(promise: Promise<T>, caller: Error): Promise<T> {
  return promise.catch((err: unknown) => {
    if (err instanceof Error && caller.stack) {
      const frames = caller.stack.split('\n').slice(1).join('\n');
      err.stack = `${err.stack ?? String(err)}\n    --- async call site ---\n${frames}`;
    }
    throw err;
  });
}
