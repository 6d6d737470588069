/**
 * The CNI result (SPEC.md "Success"): its typed view, its checks, and the conversion of a prevResult between the
 * CNI versions podnet supports. A chained plugin that changes nothing outputs the prevResult in its own config's
 * version, so conversion keeps every field it does not have to change (keys of later spec versions included) and
 * changes only what differs between versions: `ips[].version`, present in 0.3.x and 0.4.0, gone from 1.0.0 on.
 */
import { isIP } from 'node:net';

import { CNI_ERROR_CODES, CniError } from './errors.js';

/** CNI_VERSIONS are the CNI spec versions podnet supports, oldest first (the plugin's VERSION answer). */
export const CNI_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] as const;

/** CniVersion is one of CNI_VERSIONS. */
export type CniVersion = (typeof CNI_VERSIONS)[number];

/** isCniVersion tells whether value is a CNI version podnet supports. */
export function isCniVersion(value: unknown): value is CniVersion {
  return typeof value === 'string' && (CNI_VERSIONS as readonly string[]).includes(value);
}

/** versionAtLeast tells whether version is min or later (both supported versions). */
export function versionAtLeast(version: CniVersion, min: CniVersion): boolean {
  return CNI_VERSIONS.indexOf(version) >= CNI_VERSIONS.indexOf(min);
}

/** CniInterface is one entry of a result's `interfaces`. */
export interface CniInterface {
  /** The interface name. */
  name: string;
  /** Its hardware address, when it has one. */
  mac?: string;
  /** The netns path of a container interface; absent for host interfaces. */
  sandbox?: string;
}

/** CniIpConfig is one entry of a result's `ips`. */
export interface CniIpConfig {
  /** The address with its prefix length (CIDR), `10.0.0.5/24`. */
  address: string;
  /** The default gateway of that subnet, when there is one. */
  gateway?: string;
  /** The index into `interfaces` of the interface the address is on. */
  interface?: number;
  /** `'4'` or `'6'`: present in 0.3.x and 0.4.0 results only. */
  version?: '4' | '6';
}

/** CniRoute is one entry of a result's `routes`. */
export interface CniRoute {
  /** The destination (CIDR). */
  dst: string;
  /** The next hop, when not the default gateway. */
  gw?: string;
}

/** CniDns is a result's `dns`. */
export interface CniDns {
  nameservers?: string[];
  domain?: string;
  search?: string[];
  options?: string[];
}

/** CniResult is the typed view of a CNI result (a prevResult, or what ADD answers). */
export interface CniResult {
  /** The version the result is written in. */
  cniVersion: CniVersion;
  interfaces?: CniInterface[];
  ips: CniIpConfig[];
  routes?: CniRoute[];
  dns?: CniDns;
}

type Json = Record<string, unknown>;

function bad(what: string, detail: string): CniError {
  return new CniError(CNI_ERROR_CODES.incompatibleVersion, `cannot convert prevResult: ${what} ${detail}`, what);
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** objectArray returns value as an array of objects, index by index (holes refused), or throws naming field. */
function objectArray(field: string, value: unknown): Json[] {
  if (!Array.isArray(value)) throw bad(field, 'is not an array');
  const out: Json[] = [];
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    if (!isObject(item)) throw bad(`${field}[${i}]`, 'is not an object');
    out.push(item);
  }
  return out;
}

function optionalString(field: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw bad(field, 'is not a string');
  return value;
}

function stringList(field: string, value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw bad(field, 'is not an array');
  const out: string[] = [];
  for (let i = 0; i < value.length; i++) out.push(optionalString(`${field}[${i}]`, value[i]) ?? '');
  return out;
}

/** cidrFamily returns 4 or 6 for an `address/prefix` text, or throws naming field. */
function cidrFamily(field: string, value: unknown): 4 | 6 {
  if (typeof value !== 'string') throw bad(field, 'is not a string');
  const slash = value.indexOf('/');
  const family = slash < 0 ? 0 : isIP(value.slice(0, slash));
  const prefix = value.slice(slash + 1);
  if (family === 0 || !/^(0|[1-9][0-9]{0,2})$/.test(prefix) || Number(prefix) > (family === 4 ? 32 : 128)) {
    throw bad(field, `'${value}' is not an address with a prefix length`);
  }
  return family as 4 | 6;
}

function optionalIp(field: string, value: unknown): string | undefined {
  const text = optionalString(field, value);
  if (text !== undefined && isIP(text) === 0) throw bad(field, `'${text}' is not an IP address`);
  return text;
}

function parseIp(field: string, raw: Json): CniIpConfig {
  const family = cidrFamily(`${field}.address`, raw.address);
  const ip: CniIpConfig = { address: raw.address as string };
  const gateway = optionalIp(`${field}.gateway`, raw.gateway);
  if (gateway !== undefined) ip.gateway = gateway;
  if (raw.interface !== undefined) {
    if (typeof raw.interface !== 'number' || !Number.isInteger(raw.interface) || raw.interface < 0) {
      throw bad(`${field}.interface`, 'is not an interface index');
    }
    ip.interface = raw.interface;
  }
  if (raw.version !== undefined) {
    if (raw.version !== '4' && raw.version !== '6') throw bad(`${field}.version`, "is not '4' or '6'");
    if (raw.version !== String(family)) throw bad(`${field}.version`, `'${raw.version}' does not match the address`);
    ip.version = raw.version;
  }
  return ip;
}

function parseInterface(field: string, raw: Json): CniInterface {
  const name = optionalString(`${field}.name`, raw.name);
  if (name === undefined) throw bad(`${field}.name`, 'is missing');
  const out: CniInterface = { name };
  const mac = optionalString(`${field}.mac`, raw.mac);
  if (mac !== undefined) out.mac = mac;
  const sandbox = optionalString(`${field}.sandbox`, raw.sandbox);
  if (sandbox !== undefined) out.sandbox = sandbox;
  return out;
}

function parseRoute(field: string, raw: Json): CniRoute {
  cidrFamily(`${field}.dst`, raw.dst);
  const route: CniRoute = { dst: raw.dst as string };
  const gw = optionalIp(`${field}.gw`, raw.gw);
  if (gw !== undefined) route.gw = gw;
  return route;
}

function parseDns(raw: unknown): CniDns {
  if (!isObject(raw)) throw bad('dns', 'is not an object');
  const dns: CniDns = {};
  const nameservers = stringList('dns.nameservers', raw.nameservers);
  if (nameservers) dns.nameservers = nameservers;
  const domain = optionalString('dns.domain', raw.domain);
  if (domain !== undefined) dns.domain = domain;
  const search = stringList('dns.search', raw.search);
  if (search) dns.search = search;
  const options = stringList('dns.options', raw.options);
  if (options) dns.options = options;
  return dns;
}

/**
 * parseResult checks raw as a CNI result and returns its typed view. A result without its own `cniVersion` is read
 * as written in defaultVersion (the config's). Throws CniError code 1 (incompatible version) naming the field for a
 * version podnet does not support or content it cannot read (an address that is no CIDR, a `version` that does not
 * match its address, ...).
 */
export function parseResult(raw: unknown, defaultVersion: CniVersion): CniResult {
  if (!isObject(raw)) throw bad('prevResult', 'is not an object');
  const version = raw.cniVersion === undefined ? defaultVersion : raw.cniVersion;
  if (!isCniVersion(version)) throw bad('prevResult.cniVersion', `'${String(version)}' is not supported (${CNI_VERSIONS.join(', ')})`);
  const ipsRaw = raw.ips === undefined ? [] : objectArray('prevResult.ips', raw.ips);
  const ips = ipsRaw.map((ip, i) => parseIp(`prevResult.ips[${i}]`, ip));
  const result: CniResult = { cniVersion: version, ips };
  if (raw.interfaces !== undefined) {
    result.interfaces = objectArray('prevResult.interfaces', raw.interfaces).map((x, i) => parseInterface(`prevResult.interfaces[${i}]`, x));
  }
  if (raw.routes !== undefined) {
    result.routes = objectArray('prevResult.routes', raw.routes).map((x, i) => parseRoute(`prevResult.routes[${i}]`, x));
  }
  if (raw.dns !== undefined) result.dns = parseDns(raw.dns);
  return result;
}

/**
 * convertResult returns raw (a result parseResult accepted) written in version `to`: a copy with `cniVersion` set,
 * and `ips[].version` added ('4' or '6' from the address) for 0.3.x and 0.4.0 or removed for 1.0.0 and later. Every
 * other key is kept as it came. Throws CniError code 1 when raw was not checked by parseResult.
 */
export function convertResult(raw: unknown, defaultVersion: CniVersion, to: CniVersion): Json {
  parseResult(raw, defaultVersion);
  const out = structuredClone(raw) as Json;
  out.cniVersion = to;
  const ips = out.ips === undefined ? [] : (out.ips as Json[]);
  const legacy = !versionAtLeast(to, '1.0.0');
  for (const ip of ips) {
    if (legacy) ip.version = String(cidrFamily('address', ip.address));
    else delete ip.version;
  }
  return out;
}

/** resultAddresses lists the result's addresses without their prefix lengths, in order. */
export function resultAddresses(result: CniResult): string[] {
  return result.ips.map((ip) => ip.address.slice(0, ip.address.indexOf('/')));
}
