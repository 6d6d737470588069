/**
 * Checks of RouteSpec / RoutingRuleSpec and their translation to what the addon encodes. Everything is checked before
 * anything is sent, with the one message shape of lib/validate.ts naming the field. Each field is read once: a getter
 * or Proxy that answers differently on a second read cannot slip a value past its check.
 */
import { parseIp } from '../address/index.js';
import type { RawRoute, RawRule } from '../native.js';
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { FIB_RULE_INVERT, RT_TABLE_MAIN, afOf, actionNumber, protocolNumber, routeTypeNumber, scopeNumber } from './names.js';
import type { IpFamily } from './types.js';

const U32 = 0xffffffff;
// IFNAMSIZ is 16 with the NUL.
const IFNAME_MAX = 15;

/** A checked route: the raw form, and the link name to resolve into oif first when one was given. */
export interface CheckedRoute {
  raw: RawRoute<Uint8Array>;
  oifName: string | undefined;
}

function readFields<K extends string>(name: string, value: unknown, known: readonly K[], ignored: readonly string[]): Partial<Record<K, unknown>> {
  const obj = checkOptions<Record<string, unknown>>(name, value);
  if (value === undefined) throw invalidType(name, 'an object', value);
  const out: Partial<Record<K, unknown>> = {};
  for (const key of Object.keys(obj)) {
    if ((known as readonly string[]).includes(key)) out[key as K] = obj[key];
    else if (!ignored.includes(key)) throw invalidValue(`${name}.${key}`, `no such field (known: ${known.join(', ')})`, obj[key]);
  }
  return out;
}

function checkFamily(name: string, value: unknown): IpFamily | undefined {
  if (value === undefined) return undefined;
  if (value !== 4 && value !== 6) throw invalidValue(name, '4 or 6', value);
  return value;
}

/** An address of the given family (or of its own when family is undefined), canonical, no prefix. */
function checkAddress(name: string, value: unknown, family: IpFamily | undefined): { family: IpFamily; bytes: Uint8Array } {
  checkString(name, value, 64);
  const parsed = parseIp(value as string);
  if (!parsed) throw invalidValue(name, 'an IPv4 or IPv6 address in canonical form (no prefix, no zone)', value);
  if (family !== undefined && parsed.family !== family) throw invalidValue(name, `an IPv${family} address`, value);
  return { family: parsed.family, bytes: parsed.family === 4 ? parsed.bytes.slice(0, 4) : parsed.bytes };
}

function hostBitsZero(bytes: Uint8Array, length: number): boolean {
  for (let bit = length; bit < bytes.length * 8; bit++) {
    if ((bytes[bit >> 3]! >> (7 - (bit & 7))) & 1) return false;
  }
  return true;
}

/** A prefix: address and length, host bits zero (the kernel refuses them for IPv4 and silently clears them for IPv6). */
function checkPrefix(
  name: string,
  addr: unknown,
  length: unknown,
  family: IpFamily | undefined,
): { family: IpFamily | undefined; bytes: Uint8Array | undefined; length: number } {
  if (addr === undefined) {
    if (length !== undefined && length !== 0) throw invalidValue(`${name}Length`, `0 when ${name} is absent`, length);
    return { family, bytes: undefined, length: 0 };
  }
  const a = checkAddress(name, addr, family);
  const max = a.family === 4 ? 32 : 128;
  const len = length === undefined ? max : checkInteger(`${name}Length`, length, 0, max);
  if (!hostBitsZero(a.bytes, len)) throw invalidValue(name, `a prefix address with its host bits zero for /${len}`, addr);
  // A zero-length prefix is sent without the attribute, as `ip route add default` does.
  return { family: a.family, bytes: len === 0 ? undefined : a.bytes, length: len };
}

function checkProtocol(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value === 'number') return checkInteger(name, value, 0, 255);
  const n = typeof value === 'string' ? protocolNumber(value as never) : undefined;
  if (n === undefined) throw invalidValue(name, "'unspec', 'redirect', 'kernel', 'boot', 'static' or a number 0..255", value);
  return n;
}

const ROUTE_FIELDS = ['family', 'dst', 'dstLength', 'table', 'type', 'scope', 'protocol', 'oif', 'gateway', 'prefsrc', 'priority', 'tos'] as const;
// What a listed Route carries besides a RouteSpec's fields: accepted and ignored, so listed routes can be deleted.
const ROUTE_READ_ONLY = ['src', 'srcLength', 'flags', 'raw'];

/** checkRoute validates a RouteSpec for addRoute (forDelete false) or delRoute. Throws InvalidArgumentError. */
export function checkRoute(spec: unknown, forDelete: boolean, name = 'route'): CheckedRoute {
  const f = readFields(name, spec, ROUTE_FIELDS, ROUTE_READ_ONLY);
  let family = checkFamily(`${name}.family`, f.family);
  const dst = checkPrefix(`${name}.dst`, f.dst, f.dstLength, family);
  family = dst.family ?? family ?? 4;
  const type = f.type === undefined ? 'unicast' : f.type;
  if (type !== 'unicast' && type !== 'local' && type !== 'blackhole') {
    throw invalidValue(`${name}.type`, "'unicast', 'local' or 'blackhole'", f.type);
  }
  const table = f.table === undefined ? RT_TABLE_MAIN : checkInteger(`${name}.table`, f.table, 1, U32);
  let oif: number | undefined;
  let oifName: string | undefined;
  if (typeof f.oif === 'string') {
    oifName = checkString(`${name}.oif`, f.oif, IFNAME_MAX);
    if (/[\s/]/.test(oifName)) throw invalidValue(`${name}.oif`, 'an interface name (no whitespace or slash)', f.oif);
  } else if (f.oif !== undefined) {
    oif = checkInteger(`${name}.oif`, f.oif, 1, 0x7fffffff);
  }
  const gateway = f.gateway === undefined ? undefined : checkAddress(`${name}.gateway`, f.gateway, family).bytes;
  const prefsrc = f.prefsrc === undefined ? undefined : checkAddress(`${name}.prefsrc`, f.prefsrc, family).bytes;
  if (type === 'blackhole' && (oif !== undefined || oifName !== undefined || gateway !== undefined)) {
    throw invalidValue(name, 'a blackhole route without oif or gateway', spec);
  }
  if (!forDelete && type !== 'blackhole' && oif === undefined && oifName === undefined && gateway === undefined) {
    throw invalidValue(name, `a ${type} route with an oif or a gateway`, spec);
  }
  let scope: number;
  if (f.scope !== undefined) {
    if (f.scope !== 'universe' && f.scope !== 'link' && f.scope !== 'host') {
      throw invalidValue(`${name}.scope`, "'universe', 'link' or 'host'", f.scope);
    }
    scope = scopeNumber(f.scope);
  } else if (forDelete) {
    // RT_SCOPE_NOWHERE: match a route of any scope, as `ip route del` does.
    scope = 255;
  } else {
    scope = scopeNumber(type === 'local' ? 'host' : type === 'unicast' && gateway === undefined ? 'link' : 'universe');
  }
  const raw: RawRoute<Uint8Array> = {
    family: afOf(family),
    dstLength: dst.length,
    srcLength: 0,
    tos: f.tos === undefined ? 0 : checkInteger(`${name}.tos`, f.tos, 0, 255),
    table,
    // On delete, unset type and protocol match any, as in `ip route del`; only what was given narrows the match.
    protocol: checkProtocol(`${name}.protocol`, f.protocol, forDelete ? 0 : 3),
    scope,
    type: forDelete && f.type === undefined ? 0 : routeTypeNumber(type),
    flags: 0,
  };
  if (dst.bytes) raw.dst = dst.bytes;
  if (gateway) raw.gateway = gateway;
  if (prefsrc) raw.prefsrc = prefsrc;
  if (oif !== undefined) raw.oif = oif;
  if (f.priority !== undefined) raw.priority = checkInteger(`${name}.priority`, f.priority, 0, U32);
  return { raw, oifName };
}

const RULE_FIELDS = [
  'family', 'priority', 'table', 'action', 'mark', 'mask', 'src', 'srcLength', 'dst', 'dstLength', 'iifname', 'oifname', 'invert', 'protocol', 'tos',
] as const;
const RULE_READ_ONLY = ['goto', 'flags', 'raw'];

/** checkRule validates a RoutingRuleSpec for addRule (forDelete false) or delRule. Throws InvalidArgumentError. */
export function checkRule(spec: unknown, forDelete: boolean, name = 'rule'): RawRule<Uint8Array> {
  const f = readFields(name, spec, RULE_FIELDS, RULE_READ_ONLY);
  let family = checkFamily(`${name}.family`, f.family);
  const src = checkPrefix(`${name}.src`, f.src, f.srcLength, family);
  family = src.family ?? family;
  const dst = checkPrefix(`${name}.dst`, f.dst, f.dstLength, family);
  family = dst.family ?? family ?? 4;
  const actionName = f.action === undefined ? 'toTable' : f.action;
  const action = typeof actionName === 'string' && actionName !== 'goto' ? actionNumber(actionName as never) : undefined;
  if (action === undefined) {
    throw invalidValue(`${name}.action`, "'toTable', 'blackhole', 'unreachable', 'prohibit' or 'nop'", f.action);
  }
  const table = f.table === undefined ? 0 : checkInteger(`${name}.table`, f.table, 1, U32);
  if (!forDelete && actionName === 'toTable' && table === 0) throw invalidValue(`${name}.table`, "a table for action 'toTable'", f.table);
  if (f.invert !== undefined && typeof f.invert !== 'boolean') throw invalidType(`${name}.invert`, 'a boolean', f.invert);
  const raw: RawRule<Uint8Array> = {
    family: afOf(family),
    srcLength: src.length,
    dstLength: dst.length,
    tos: f.tos === undefined ? 0 : checkInteger(`${name}.tos`, f.tos, 0, 255),
    // On delete without an action given, 0 matches any (the kernel compares only what is set).
    action: forDelete && f.action === undefined ? 0 : action,
    flags: f.invert === true ? FIB_RULE_INVERT : 0,
    table,
    protocol: checkProtocol(`${name}.protocol`, f.protocol, 0),
  };
  if (src.bytes) raw.src = src.bytes;
  if (dst.bytes) raw.dst = dst.bytes;
  if (f.priority !== undefined) raw.priority = checkInteger(`${name}.priority`, f.priority, 0, U32);
  if (f.mark !== undefined) raw.mark = checkInteger(`${name}.mark`, f.mark, 0, U32);
  if (f.mask !== undefined) {
    if (f.mark === undefined) throw invalidValue(`${name}.mask`, 'a mask only together with mark', f.mask);
    raw.mask = checkInteger(`${name}.mask`, f.mask, 0, U32);
  }
  for (const key of ['iifname', 'oifname'] as const) {
    if (f[key] === undefined) continue;
    const v = checkString(`${name}.${key}`, f[key], IFNAME_MAX);
    if (/[\s/]/.test(v)) throw invalidValue(`${name}.${key}`, 'an interface name (no whitespace or slash)', f[key]);
    raw[key] = v;
  }
  return raw;
}
