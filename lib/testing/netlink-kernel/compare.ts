/**
 * Field-by-field comparison for the fakes' identity tests (the kernel's "is this the same set / the same fib_info").
 */

/** sameFields says whether a and b hold equal values (===) in every one of keys. */
export function sameFields<T extends object>(a: T, b: T, keys: readonly (keyof T)[]): boolean {
  return keys.every((k) => a[k] === b[k]);
}
