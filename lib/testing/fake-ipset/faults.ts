/**
 * Fault injection for tests of podnet's netlink engine: a scripted error for the next (matching) request, a lost
 * reply, or a truncated datagram. Each fault fires once, in the order it was added.
 */
import { type MatcherShape, numberOf } from '../netlink-kernel/fault-injection.js';
import { IPSET_CMD } from './constants.js';

/** IpsetCommandName names an ipset command in fault matchers. */
export type IpsetCommandName = Lowercase<Exclude<keyof typeof IPSET_CMD, 'NONE'>>;

/** FaultMatch narrows a fault to requests of one command and/or one set name; empty matches any request. */
export interface FaultMatch {
  /** Only requests of this command. */
  command?: IpsetCommandName;
  /** Only requests about this set. */
  set?: string;
}

/** What the fault queue needs to know about a request message. */
export interface RequestInfo {
  cmd: number;
  setName: string | undefined;
}

/** commandNumber maps a command name to IPSET_CMD_*; undefined for a name that is not a command. */
export function commandNumber(name: IpsetCommandName): number | undefined {
  return name.toUpperCase() === 'NONE' ? undefined : numberOf(IPSET_CMD, name);
}

/** IPSET_MATCHER is the shape of FaultMatch, for checkFaultMatch. */
export const IPSET_MATCHER: MatcherShape = {
  name: 'command',
  known: (name) => commandNumber(name as IpsetCommandName) !== undefined,
  expected: 'an ipset command name such as "add"',
  about: 'set',
};

/** matches says whether request req is one that matcher m narrows a fault to. */
export function matches(m: FaultMatch, req: RequestInfo): boolean {
  if (m.command !== undefined && commandNumber(m.command) !== req.cmd) return false;
  if (m.set !== undefined && m.set !== req.setName) return false;
  return true;
}
