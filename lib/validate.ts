/**
 * Argument checks shared by every public entry point. One message shape:
 * "expected <what> for <name> but received <value>".
 */
import { InvalidArgumentError } from './errors.js';

/** describeValue renders a received value for an error message without dumping large inputs. */
function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') {
    const shown = value.length > 64 ? `${value.slice(0, 64)}...` : value;
    return `${JSON.stringify(shown)} of type string`;
  }
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return `${String(value)} of type ${typeof value}`;
  }
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return `an instance of ${(value as object).constructor?.name ?? 'Object'}`;
}

/** invalidValue builds the ERR_INVALID_ARG_VALUE error for name. */
export function invalidValue(name: string, expected: string, received: unknown): InvalidArgumentError {
  return new InvalidArgumentError(
    `expected ${expected} for ${name} but received ${describeValue(received)}`,
    'ERR_INVALID_ARG_VALUE',
    name,
  );
}

/** invalidType builds the ERR_INVALID_ARG_TYPE error for name. */
export function invalidType(name: string, expected: string, received: unknown): InvalidArgumentError {
  return new InvalidArgumentError(
    `expected ${expected} for ${name} but received ${describeValue(received)}`,
    'ERR_INVALID_ARG_TYPE',
    name,
  );
}

/**
 * checkString throws unless value is a string (no NUL, no lone surrogate) of minLength..maxLength UTF-8 bytes. A lone
 * surrogate has no UTF-8 form: it would reach the kernel or a peer as U+FFFD, another string than the one given, which
 * then never reads back equal (a reconcile that never settles).
 */
export function checkString(name: string, value: unknown, maxBytes = Infinity, minLength = 1): string {
  if (typeof value !== 'string') throw invalidType(name, 'a string', value);
  if (!value.isWellFormed()) throw invalidValue(name, 'a string without lone surrogates', value);
  // A UTF-16 unit is at most 3 UTF-8 bytes: short strings need no byte count (a call into C++ on hot paths).
  const bytes = value.length * 3 <= maxBytes ? value.length : Buffer.byteLength(value);
  if (value.length < minLength || bytes > maxBytes || value.includes('\0')) {
    const limit = Number.isFinite(maxBytes) ? ` of at most ${maxBytes} bytes` : '';
    throw invalidValue(name, `a non-empty string without NUL${limit}`, value);
  }
  return value;
}

/** checkInteger throws unless value is an integer in [min, max]. */
export function checkInteger(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number') throw invalidType(name, `an integer between ${min} and ${max}`, value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw invalidValue(name, `an integer between ${min} and ${max}`, value);
  }
  return value;
}

/** checkOptions throws unless value is a plain object; undefined (options left out) gives an empty object. */
export function checkOptions<T extends object>(name: string, value: unknown): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidType(name, 'an object', value);
  }
  return value as Partial<T>;
}

/**
 * checkArray throws unless value is an array whose every index (holes included: `[, x]` is refused at index 0)
 * passes checkItem; it returns the checked items as a new dense array. `forEach`, `map`, `every` and `some` skip
 * holes, so no array a user hands podnet is checked with them.
 */
export function checkArray<T>(
  name: string,
  value: unknown,
  expected: string,
  checkItem: (item: unknown, itemName: string, index: number) => T,
  maxLength = Infinity,
): T[] {
  if (!Array.isArray(value)) throw invalidType(name, expected, value);
  if (value.length > maxLength) throw invalidValue(name, `${expected} of at most ${maxLength} items`, value);
  const out: T[] = new Array<T>(value.length);
  for (let i = 0; i < value.length; i++) {
    if (!(i in value)) throw invalidValue(`${name}[${i}]`, 'an element (the array has a hole here)', undefined);
    out[i] = checkItem(value[i], `${name}[${i}]`, i);
  }
  return out;
}
