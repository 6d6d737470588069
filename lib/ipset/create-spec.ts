/** create()'s options, checked and turned into the native create request and the new set's shape. */
import type { RawCreateSpec } from '../native.js';
import { checkInteger, checkOptions, invalidType, invalidValue } from '../validate.js';
import type { SetShape } from './entry.js';
import { WITH_COMMENT, WITH_COUNTERS } from './header.js';
import type { IpsetCreateOptions } from './types.js';

const TYPES = new Set(['hash:ip', 'hash:net', 'hash:ip,port']);

/** createSpec checks a create call's options and flags. Throws InvalidArgumentError naming the bad one. */
export function createSpec(name: string, options: unknown, flags: unknown): { spec: RawCreateSpec; shape: SetShape } {
  const o = checkOptions<IpsetCreateOptions>('options', options);
  if (!TYPES.has(o.type as string)) throw invalidValue('options.type', `one of ${[...TYPES].join(', ')}`, o.type);
  const family = o.family ?? 'inet';
  if (family !== 'inet' && family !== 'inet6') throw invalidValue('options.family', "'inet' or 'inet6'", family);
  for (const key of ['comment', 'counters'] as const) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') throw invalidType(`options.${key}`, 'a boolean', o[key]);
  }
  if (o.timeout !== undefined) checkInteger('options.timeout', o.timeout, 0, 2147483);
  if (o.maxelem !== undefined) checkInteger('options.maxelem', o.maxelem, 1, 0xffffffff);
  if (o.hashsize !== undefined) checkInteger('options.hashsize', o.hashsize, 64, 0x80000000);
  const f = checkOptions<{ exist?: boolean }>('flags', flags);
  const spec = {
    name,
    type: o.type as string,
    family: family === 'inet' ? 2 : 10,
    hashsize: o.hashsize,
    maxelem: o.maxelem,
    timeout: o.timeout,
    cadtFlags: (o.comment ? WITH_COMMENT : 0) | (o.counters ? WITH_COUNTERS : 0),
    exist: f.exist === true,
  };
  const shape: SetShape = { type: spec.type, family: family === 'inet' ? 4 : 6, comment: !!o.comment, timeout: o.timeout !== undefined };
  return { spec, shape };
}
