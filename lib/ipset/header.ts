/** Set headers: the kernel's raw header as the client's IpsetHeader, and the shape entries are checked against. */
import type { RawSetHeader } from '../native.js';
import type { SetShape } from './entry.js';
import { ipsetError } from './error-map.js';
import type { IpsetHeader } from './types.js';

/** IPSET_FLAG_WITH_COUNTERS and IPSET_FLAG_WITH_COMMENT of a header's cadt flags. */
export const WITH_COUNTERS = 0x08;
export const WITH_COMMENT = 0x10;
/** IPSET_FLAG_LIST_SETNAME and IPSET_FLAG_LIST_HEADER: a list of names only, or headers without members. */
export const LIST_SETNAME = 0x02;
export const LIST_HEADER = 0x04;

function familyName(n: number): IpsetHeader['family'] {
  return n === 2 ? 'inet' : n === 10 ? 'inet6' : 'unspec';
}

/** toHeader turns a raw header into an IpsetHeader. */
export function toHeader(raw: RawSetHeader): IpsetHeader {
  return {
    name: raw.name,
    type: raw.type,
    family: familyName(raw.family),
    revision: raw.revision,
    references: raw.references,
    maxelem: raw.maxelem,
    hashsize: raw.hashsize,
    elements: raw.elements,
    memsize: raw.memsize,
    comment: (raw.cadtFlags & WITH_COMMENT) !== 0,
    timeout: raw.timeout,
    counters: (raw.cadtFlags & WITH_COUNTERS) !== 0,
    decoded: raw.decoded,
  };
}

/** shapeOf is what checkEntry needs to know of a set. */
export function shapeOf(h: IpsetHeader): SetShape {
  return { type: h.type, family: h.family === 'inet6' ? 6 : 4, comment: h.comment, timeout: h.timeout !== undefined };
}

/** firstHeader is the header a one-set listing returned; none means the set is gone (ENOENT, as the kernel says). */
export function firstHeader(sets: RawSetHeader[], name: string): IpsetHeader {
  const raw = sets[0];
  if (!raw) throw ipsetError(2, { operation: 'list', set: name });
  return toHeader(raw);
}
