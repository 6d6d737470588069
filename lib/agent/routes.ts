/**
 * The in-pod policy routing of the reference agent: packets of connections the proxy marked (connmark 0x111,
 * restored to the packet mark by the mangle rules) look up table 100, whose only route delivers everything to the
 * local stack, so the proxy's transparent sockets receive the return traffic. One rule and one route per family,
 * inside the pod's namespace.
 */
import { RtnetlinkError } from '../errors.js';
import type { Rtnetlink } from '../rtnetlink/client.js';
import type { RouteSpec, RoutingRuleSpec, RtnetlinkChange } from '../rtnetlink/types.js';

/** INPOD_ROUTING holds the reference agent's table, rule preference and mark (istio cni/pkg/iptables). */
export const INPOD_ROUTING = Object.freeze({
  /** The table whose only route delivers everything to the local stack. */
  table: 100,
  /** The rule's preference, ahead of the main table's 32766. */
  priority: 32764,
  /** The fwmark the rule matches: the proxy's connmark, restored to the packet. */
  mark: 0x111,
  /** The mask for mark. */
  mask: 0xfff,
});

/** inpodRoutingRule is `fwmark 0x111/0xfff pref 32764 lookup 100` of one family. */
export function inpodRoutingRule(family: 4 | 6): RoutingRuleSpec {
  const { table, priority, mark, mask } = INPOD_ROUTING;
  return { family, priority, mark, mask, table, action: 'toTable' };
}

/**
 * LOOPBACK_IFINDEX is lo's index in every network namespace: the kernel registers lo first with this fixed index
 * (include/net/flow.h, since Linux 3.10), so a route through lo needs no lookup of it.
 */
export const LOOPBACK_IFINDEX = 1;

/** inpodRoute is `local default dev lo table 100` of one family. */
export function inpodRoute(family: 4 | 6): RouteSpec {
  return { family, table: INPOD_ROUTING.table, type: 'local', scope: 'host', oif: LOOPBACK_IFINDEX };
}

/** Which families get policy routing: IPv4, and IPv6 when it is on and lo has an IPv6 address (not disabled). */
export async function routingFamilies(rt: Rtnetlink, ipv6: boolean): Promise<(4 | 6)[]> {
  if (!ipv6) return [4];
  const lo6 = await rt.addresses({ link: 'lo', family: 6 });
  return lo6.length > 0 ? [4, 6] : [4];
}

/** What applyPodRouting put in that was not there before: the rule and the route of each family. */
export interface PodRoutingCreated {
  family: 4 | 6;
  rule: boolean;
  route: boolean;
}

/**
 * applyPodRouting adds the rule and the route of each family, all in one exchange, and tells which of them it
 * created. Idempotent: an identical rule already there (EEXIST) is what was wanted, and a route already there is
 * written again with replace, as the reference does (RouteReplace); a new route is added exclusively, so that the
 * answer tells it apart. When the kernel refuses one, what this call created is taken out again before it throws.
 */
export async function applyPodRouting(rt: Rtnetlink, families: readonly (4 | 6)[]): Promise<PodRoutingCreated[]> {
  const outcomes = await rt.batch(
    families.flatMap((family): RtnetlinkChange[] => [
      { op: 'addRule', rule: inpodRoutingRule(family) },
      { op: 'addRoute', route: inpodRoute(family) },
    ]),
  );
  const created = families.map((family, i) => ({ family, rule: outcomes[2 * i] === undefined, route: outcomes[2 * i + 1] === undefined }));
  const refused = outcomes.find((err) => err !== undefined && !isExisting(err));
  const existing = families.filter((_, i) => outcomes[2 * i + 1] !== undefined);
  const replace = existing.map((family): RtnetlinkChange => ({ op: 'addRoute', route: inpodRoute(family), replace: true }));
  const again = refused || replace.length === 0 ? [] : await rt.batch(replace);
  const failed = refused ?? again.find((err) => err !== undefined);
  if (failed === undefined) return created;
  await undoPodRouting(rt, created).catch(() => undefined);
  throw failed;
}

/** undoPodRouting deletes what applyPodRouting created (and nothing that was there before it); missing ones are fine. */
export async function undoPodRouting(rt: Rtnetlink, created: readonly PodRoutingCreated[]): Promise<void> {
  const changes = created.flatMap(({ family, rule, route }): RtnetlinkChange[] => [
    ...(rule ? [{ op: 'delRule', rule: inpodRoutingRule(family), ignoreMissing: true } as const] : []),
    ...(route ? [{ op: 'delRoute', route: inpodRoute(family), ignoreMissing: true } as const] : []),
  ]);
  if (changes.length === 0) return;
  throwFirstRefusal(await rt.batch(changes));
}

/** throwFirstRefusal throws the first refusal among a batch's outcomes, if there is one. */
function throwFirstRefusal(outcomes: readonly (RtnetlinkError | undefined)[]): void {
  const refused = outcomes.find((err) => err !== undefined);
  if (refused) throw refused;
}

function isExisting(err: unknown): boolean {
  return err instanceof RtnetlinkError && err.code === 'EEXIST';
}

/** removePodRouting deletes the rule and the route of each family, in one exchange; missing ones are fine. */
export async function removePodRouting(rt: Rtnetlink, families: readonly (4 | 6)[]): Promise<void> {
  const outcomes = await rt.batch(
    families.flatMap((family): RtnetlinkChange[] => [
      { op: 'delRule', rule: inpodRoutingRule(family), ignoreMissing: true },
      { op: 'delRoute', route: inpodRoute(family), ignoreMissing: true },
    ]),
  );
  throwFirstRefusal(outcomes);
}

/** PodRoutingState is what verifyPodRouting found for one family. */
export interface PodRoutingState {
  /** The IP family. */
  family: 4 | 6;
  /** Whether the `fwmark 0x111/0xfff lookup 100` rule is there. */
  rule: boolean;
  /** Whether table 100's `local default dev lo` route is there. */
  route: boolean;
}

/** verifyPodRouting tells, per family, whether the rule and the route are there; it changes nothing. */
export async function verifyPodRouting(rt: Rtnetlink, families: readonly (4 | 6)[]): Promise<PodRoutingState[]> {
  const { table, priority, mark, mask } = INPOD_ROUTING;
  const [rules, routes, lo] = await Promise.all([rt.rules(), rt.routes({ table }), rt.link('lo')]);
  return families.map((family) => ({
    family,
    rule: rules.some(
      (r) => r.family === family && r.priority === priority && r.mark === mark && r.mask === mask && r.table === table &&
        r.action === 'toTable' && !r.invert && r.src === undefined && r.dst === undefined && r.iifname === undefined,
    ),
    route: routes.some(
      (r) => r.family === family && r.dstLength === 0 && r.type === 'local' && r.oif === lo.index && r.gateway === undefined,
    ),
  }));
}
