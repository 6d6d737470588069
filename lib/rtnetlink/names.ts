/**
 * Kernel numbers of linux/rtnetlink.h and linux/fib_rules.h and the names podnet gives them. Decoding maps a number
 * to its name and leaves one podnet does not know as the number; encoding takes names (or a number where the type
 * allows one).
 */
import type { IpFamily, RouteProtocol, RouteScope, RouteType, RoutingRuleAction } from './types.js';

export const AF_UNSPEC = 0;
export const AF_INET = 2;
export const AF_INET6 = 10;

export const RT_TABLE_MAIN = 254;
export const IFF_UP = 0x1;
export const FIB_RULE_INVERT = 0x2;

const routeTypes: readonly (RouteType & string)[] = [
  'unspec' as never, 'unicast', 'local', 'broadcast', 'anycast', 'multicast', 'blackhole', 'unreachable', 'prohibit', 'throw', 'nat',
];
const scopes: Record<number, RouteScope & string> = { 0: 'universe', 200: 'site', 253: 'link', 254: 'host', 255: 'nowhere' };
const protocols: Record<number, RouteProtocol & string> = { 0: 'unspec', 1: 'redirect', 2: 'kernel', 3: 'boot', 4: 'static' };
const actions: Record<number, RoutingRuleAction & string> = { 1: 'toTable', 2: 'goto', 3: 'nop', 6: 'blackhole', 7: 'unreachable', 8: 'prohibit' };

function invert<T extends string>(table: Record<number, T>): Map<T, number> {
  return new Map(Object.entries(table).map(([n, name]) => [name, Number(n)]));
}
const scopeNumbers = invert(scopes);
const protocolNumbers = invert(protocols);
const actionNumbers = invert(actions);

export function familyOf(af: number): IpFamily | undefined {
  return af === AF_INET ? 4 : af === AF_INET6 ? 6 : undefined;
}
export function afOf(family: IpFamily): number {
  return family === 4 ? AF_INET : AF_INET6;
}

export function routeTypeName(n: number): RouteType {
  return n > 0 && n < routeTypes.length ? routeTypes[n]! : n;
}
export function routeTypeNumber(name: RouteType): number {
  return typeof name === 'number' ? name : routeTypes.indexOf(name);
}
export function scopeName(n: number): RouteScope {
  return scopes[n] ?? n;
}
export function scopeNumber(name: RouteScope): number {
  return typeof name === 'number' ? name : scopeNumbers.get(name)!;
}
export function protocolName(n: number): RouteProtocol {
  return protocols[n] ?? n;
}
export function protocolNumber(name: RouteProtocol): number | undefined {
  return typeof name === 'number' ? name : protocolNumbers.get(name);
}
export function actionName(n: number): RoutingRuleAction {
  return actions[n] ?? n;
}
export function actionNumber(name: RoutingRuleAction): number | undefined {
  return typeof name === 'number' ? name : actionNumbers.get(name);
}
