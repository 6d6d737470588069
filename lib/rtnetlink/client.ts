/**
 * Rtnetlink: links, addresses, routes and policy rules of one network namespace over NETLINK_ROUTE, spoken by the
 * addon's route codec on the same netlink engine as ipset (no `ip` binary). Adds are exclusive: a duplicate route or
 * rule fails with EEXIST; replacing a route is explicit. Operations run one after another in call order.
 */
import { RtnetlinkError } from '../errors.js';
import { native, type RawRtnetlinkHandle } from '../native.js';
import { NetlinkClient, openNetlink } from '../netlink/client.js';
import type { Netns } from '../netns.js';
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { toAddress, toLink, toRoute, toRule } from './decode.js';
import { withContext } from './errors.js';
import { AF_UNSPEC, afOf } from './names.js';
import { addFlags, checkChanges, checkFlag, isMissing } from './changes.js';
import { checkRoute, checkRule } from './spec.js';
import type {
  Address,
  IpFamily,
  Link,
  Route,
  RouteSpec,
  RtnetlinkChange,
  RtnetlinkOpenOptions,
  RoutingRule,
  RoutingRuleSpec,
} from './types.js';

const K = native.rtnetlinkConstants;
const IFNAME_MAX = 15;

function checkFamilyFilter(name: string, value: unknown): number {
  if (value === undefined) return AF_UNSPEC;
  if (value !== 4 && value !== 6) throw invalidValue(name, '4 or 6', value);
  return afOf(value);
}

/**
 * Rtnetlink is an open NETLINK_ROUTE session in one namespace. Close it (or `using` it) when done: close() is
 * NetlinkClient's, with `ERR_RTNETLINK_CLOSED`.
 */
export class Rtnetlink extends NetlinkClient<RawRtnetlinkHandle> {
  private constructor(handle: RawRtnetlinkHandle, netns: Netns | undefined) {
    super(handle, netns, 'rtnetlink');
  }

  /**
   * Rtnetlink.open opens a NETLINK_ROUTE socket inside the namespace (a Netns or a path; default: the current one),
   * or talks to a NetlinkPeer such as FakeRtnetlink. Throws InvalidArgumentError on bad options, PodnetSystemError
   * when the namespace cannot be opened or entered.
   */
  static async open(options: RtnetlinkOpenOptions = {}): Promise<Rtnetlink> {
    const { handle, netns } = await openNetlink(options, native.RtnetlinkHandle);
    return new Rtnetlink(handle, netns);
  }

  /** Runs fn in call order (NetlinkClient.serial), with what the operation was about on its errors. */
  #serial<T>(operation: string, object: unknown, fn: (h: RawRtnetlinkHandle) => Promise<T>): Promise<T> {
    return this.serial(fn, (err) => withContext(err, operation, object, this.netns?.path));
  }

  /** links lists every link of the namespace. Throws PodnetSystemError (ETIMEDOUT, EBADMSG, ...) on failure. */
  async links(): Promise<Link[]> {
    return this.#serial('links', undefined, async (h) => (await h.links()).map(toLink));
  }

  /**
   * link returns one link by name or index. Throws RtnetlinkError with code `ENOENT` (errno -2) when there is no
   * such link (the kernel's own answer, ENODEV, is its `cause`), InvalidArgumentError on a bad name or index.
   */
  async link(nameOrIndex: string | number): Promise<Link> {
    let index = 0;
    let name = '';
    if (typeof nameOrIndex === 'number') {
      index = checkInteger('nameOrIndex', nameOrIndex, 1, 0x7fffffff);
    } else {
      name = checkString('nameOrIndex', nameOrIndex, IFNAME_MAX);
      if (/[\s/]/.test(name)) throw invalidValue('nameOrIndex', 'an interface name (no whitespace or slash)', nameOrIndex);
    }
    return this.#serial('link', nameOrIndex, (h) => this.#lookup(h, index, name, 'link', nameOrIndex));
  }

  /** One link; the kernel's ENODEV for a missing one becomes ENOENT (what the caller asked for is not there). */
  async #lookup(h: RawRtnetlinkHandle, index: number, name: string, operation: string, object: unknown): Promise<Link> {
    try {
      return toLink(await h.link(index, name));
    } catch (err) {
      if (err instanceof RtnetlinkError && err.code === 'ENODEV') {
        const what = index > 0 ? `index ${index}` : `'${name}'`;
        throw new RtnetlinkError(`rtnetlink ${operation}: no link ${what} (ENOENT)`, 'ENOENT', -2, {
          operation,
          object,
          netns: this.netns?.path,
        }, { cause: err });
      }
      throw err;
    }
  }

  /**
   * addresses lists interface addresses, optionally of one link (index or name) and one family. Throws
   * InvalidArgumentError for a bad filter; rejects with RtnetlinkError `ENOENT` for a link name that does not exist,
   * and as links() does.
   */
  async addresses(filter: { link?: number | string; family?: IpFamily } = {}): Promise<Address[]> {
    const f = checkOptions<{ link?: number | string; family?: IpFamily }>('filter', filter);
    const af = checkFamilyFilter('filter.family', f.family);
    const link = f.link;
    if (link !== undefined && typeof link !== 'number' && typeof link !== 'string') {
      throw invalidType('filter.link', 'a link index or name', link);
    }
    if (typeof link === 'string') checkString('filter.link', link, IFNAME_MAX);
    if (typeof link === 'number') checkInteger('filter.link', link, 1, 0x7fffffff);
    return this.#serial('addresses', filter, async (h) => {
      const index = typeof link === 'string' ? (await this.#lookup(h, 0, link, 'addresses', filter)).index : link;
      const all = (await h.addresses(af)).map(toAddress).filter((a): a is Address => a !== undefined);
      return index === undefined ? all : all.filter((a) => a.link === index);
    });
  }

  /** routes lists routes of every table (or one table id) and family. Throws as links() does. */
  async routes(filter: { table?: number; family?: IpFamily } = {}): Promise<Route[]> {
    const f = checkOptions<{ table?: number; family?: IpFamily }>('filter', filter);
    const af = checkFamilyFilter('filter.family', f.family);
    const table = f.table === undefined ? undefined : checkInteger('filter.table', f.table, 0, 0xffffffff);
    return this.#serial('routes', filter, async (h) => {
      const all = (await h.routes(af)).map(toRoute).filter((r): r is Route => r !== undefined);
      return table === undefined ? all : all.filter((r) => r.table === table);
    });
  }

  /**
   * addRoute adds a route, exclusively: an identical route (same table, prefix, tos and metric) fails with
   * RtnetlinkError `EEXIST`. `{ replace: true }` replaces it instead (RouteReplace). Other kernel refusals:
   * `ENODEV` (no such oif), `ENETUNREACH` (gateway not reachable), `EINVAL`. InvalidArgumentError before anything is
   * sent for a bad spec.
   */
  async addRoute(route: RouteSpec, options: { replace?: boolean } = {}): Promise<void> {
    const checked = checkRoute(route, false);
    const replace = checkFlag('options.replace', checkOptions<{ replace?: boolean }>('options', options).replace);
    return this.#serial('addRoute', route, async (h) => {
      if (checked.oifName !== undefined) checked.raw.oif = (await this.#linkIndex(h, checked.oifName, 'addRoute', route));
      await h.changeRoute(K.newRoute, addFlags(replace), checked.raw);
    });
  }

  /**
   * delRoute deletes the route that matches the spec (unset type, scope and protocol match any). A missing route
   * fails with RtnetlinkError `ESRCH` (the kernel's answer; isNotFound() is true), unless `{ ignoreMissing: true }`.
   */
  async delRoute(route: RouteSpec | Route, options: { ignoreMissing?: boolean } = {}): Promise<void> {
    const checked = checkRoute(route, true);
    const ignore = checkFlag('options.ignoreMissing', checkOptions<{ ignoreMissing?: boolean }>('options', options).ignoreMissing);
    return this.#serial('delRoute', route, async (h) => {
      try {
        if (checked.oifName !== undefined) checked.raw.oif = await this.#linkIndex(h, checked.oifName, 'delRoute', route);
        await h.changeRoute(K.delRoute, 0, checked.raw);
      } catch (err) {
        if (ignore && isMissing(err)) return;
        throw err;
      }
    });
  }

  /** rules lists policy routing rules of both families, or of one. Throws as links() does. */
  async rules(filter: { family?: IpFamily } = {}): Promise<RoutingRule[]> {
    const f = checkOptions<{ family?: IpFamily }>('filter', filter);
    const af = checkFamilyFilter('filter.family', f.family);
    return this.#serial('rules', filter, async (h) => (await h.rules(af)).map(toRule).filter((r): r is RoutingRule => r !== undefined));
  }

  /**
   * addRule adds a policy rule, exclusively: an identical rule fails with RtnetlinkError `EEXIST`. InvalidArgumentError
   * before anything is sent for a bad spec.
   */
  async addRule(rule: RoutingRuleSpec): Promise<void> {
    const raw = checkRule(rule, false);
    return this.#serial('addRule', rule, (h) => h.changeRule(K.newRule, addFlags(false), raw));
  }

  /**
   * delRule deletes the first rule that matches the spec (only the fields given are compared). A missing rule fails
   * with RtnetlinkError `ENOENT`, unless `{ ignoreMissing: true }`.
   */
  async delRule(rule: RoutingRuleSpec | RoutingRule, options: { ignoreMissing?: boolean } = {}): Promise<void> {
    const raw = checkRule(rule, true);
    const ignore = checkFlag('options.ignoreMissing', checkOptions<{ ignoreMissing?: boolean }>('options', options).ignoreMissing);
    return this.#serial('delRule', rule, async (h) => {
      try {
        await h.changeRule(K.delRule, 0, raw);
      } catch (err) {
        if (ignore && err instanceof RtnetlinkError && err.code === 'ENOENT') return;
        throw err;
      }
    });
  }

  /**
   * batch makes several route and rule changes in one exchange with the kernel: one sendmsg (of up to 64 changes),
   * which the kernel takes message by message, in order, answering each. It is not a transaction: a refused change
   * leaves the others made, as separate calls would. Resolves to one outcome per change, in order: undefined when it
   * was made (or, with ignoreMissing, was not there to delete), else the RtnetlinkError its own call would have
   * rejected with. Throws InvalidArgumentError, before anything is sent, for a bad change (checked index by index);
   * rejects when an exchange itself fails (ETIMEDOUT, a closed client), and then any of the changes may have been
   * made.
   */
  async batch(changes: readonly RtnetlinkChange[]): Promise<(RtnetlinkError | undefined)[]> {
    const checked = checkChanges(changes);
    const netns = this.netns?.path;
    return this.#serial('batch', undefined, async (h) => {
      const outcomes = new Array<RtnetlinkError | undefined>(checked.length).fill(undefined);
      const sent: number[] = [];
      for (const [i, c] of checked.entries()) {
        if (c.oifName !== undefined && 'route' in c.raw) {
          try {
            c.raw.route.oif = await this.#linkIndex(h, c.oifName, c.op, c.object);
          } catch (err) {
            if (!(err instanceof RtnetlinkError)) throw err;
            outcomes[i] = err;
            continue;
          }
        }
        sent.push(i);
      }
      const answers = sent.length === 0 ? [] : await h.changeAll(sent.map((i) => checked[i]!.raw));
      answers.forEach((err, k) => {
        const c = checked[sent[k]!]!;
        if (err === undefined || (c.ignoreMissing && isMissing(err))) return;
        outcomes[sent[k]!] = withContext(err, c.op, c.object, netns) as RtnetlinkError;
      });
      return outcomes;
    });
  }

  async #linkIndex(h: RawRtnetlinkHandle, name: string, operation: string, object: unknown): Promise<number> {
    try {
      return (await h.link(0, name)).index;
    } catch (err) {
      if (err instanceof RtnetlinkError && err.code === 'ENODEV') {
        throw new RtnetlinkError(`rtnetlink ${operation}: no link named '${name}'`, 'ENODEV', err.errno, {
          operation,
          object,
          netns: this.netns?.path,
        }, { cause: err });
      }
      throw err;
    }
  }
}
