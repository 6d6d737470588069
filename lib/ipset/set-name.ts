/** The one check of a set name: a string of 1 to 31 bytes (IPSET_MAXNAMELEN less its NUL). */
import { checkString } from '../validate.js';

/** checkSetName returns value as a set name. Throws InvalidArgumentError naming `name` for anything else. */
export function checkSetName(value: unknown, name = 'name'): string {
  checkString(name, value, 31);
  return value as string;
}
