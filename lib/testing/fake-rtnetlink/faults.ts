/**
 * Fault injection for tests of podnet's rtnetlink client: a scripted error for the next (matching) request, a lost
 * answer, or a dump interrupted by a concurrent change. Each fault fires once, in the order it was added.
 */
import { checkOptions, invalidValue } from '../../validate.js';
import { MatchingFaultQueue } from '../netlink-kernel/fault-queue.js';
import { AF_INET, AF_INET6, RTM } from './constants.js';

/** RtnetlinkRequestName names the requests the fake models, for fault matchers. */
export type RtnetlinkRequestName =
  | 'getlink'
  | 'getaddr'
  | 'newroute'
  | 'delroute'
  | 'getroute'
  | 'newrule'
  | 'delrule'
  | 'getrule';

const TYPES: Readonly<Record<RtnetlinkRequestName, number>> = {
  getlink: RTM.GETLINK,
  getaddr: RTM.GETADDR,
  newroute: RTM.NEWROUTE,
  delroute: RTM.DELROUTE,
  getroute: RTM.GETROUTE,
  newrule: RTM.NEWRULE,
  delrule: RTM.DELRULE,
  getrule: RTM.GETRULE,
};

/** RtnetlinkFaultMatch narrows a fault to one request type and/or one address family; empty matches any request. */
export interface RtnetlinkFaultMatch {
  /** Only requests of this type. */
  type?: RtnetlinkRequestName;
  /** Only requests of this address family. */
  family?: 4 | 6;
}

/** Fault is one scheduled fault. */
export type Fault =
  | { kind: 'error'; errno: number; match: RtnetlinkFaultMatch }
  | { kind: 'drop'; match: RtnetlinkFaultMatch }
  | { kind: 'interrupt'; match: RtnetlinkFaultMatch };

/** RequestInfo is what the fault queue needs to know about a request message. */
export interface RequestInfo {
  type: number;
  /** The rtgenmsg family byte, or -1 for a message too short to have one. */
  family: number;
  dump: boolean;
}

/** isRequestName tells whether name is one of the request names a matcher accepts. */
export function isRequestName(name: unknown): name is RtnetlinkRequestName {
  return typeof name === 'string' && Object.hasOwn(TYPES, name);
}

function matches(m: RtnetlinkFaultMatch, req: RequestInfo): boolean {
  if (m.type !== undefined && TYPES[m.type] !== req.type) return false;
  if (m.family !== undefined && (m.family === 4 ? AF_INET : AF_INET6) !== req.family) return false;
  return true;
}

/** FaultQueue keeps pending faults and hands out the first one of the wanted kinds that a request matches. */
export class FaultQueue extends MatchingFaultQueue<Fault, RtnetlinkFaultMatch, RequestInfo> {
  constructor() {
    super(matches);
  }
}

/** checkMatch validates a fault matcher from a caller; throws InvalidArgumentError naming the bad field. */
export function checkMatch(name: string, match: unknown): RtnetlinkFaultMatch {
  const m = checkOptions<RtnetlinkFaultMatch>(name, match);
  if (m.type !== undefined && !isRequestName(m.type)) {
    throw invalidValue(`${name}.type`, 'a request name such as "newroute"', m.type);
  }
  if (m.family !== undefined && m.family !== 4 && m.family !== 6) throw invalidValue(`${name}.family`, '4 or 6', m.family);
  return { ...(m.type !== undefined && { type: m.type }), ...(m.family !== undefined && { family: m.family }) };
}
