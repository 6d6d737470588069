/**
 * The agent's rules as nftables objects (see shared reference nftables.md: Istio's nftables backend): the in-pod
 * redirection as three `inet` tables (istio-ambient-nat / -mangle / -raw) and the host's probe SNAT in its own
 * `inet istio-ambient-nat` table next to the probe sets. The variants are those of the iptables rule sets in
 * rules.ts; IPv6 lives in the same inet tables, each address rule followed by its ip6 twin, so either family meets
 * its rules in the order its iptables rule set has them. Pure data: Nftables.apply / verify / remove take it.
 */
import { nftExpr as x } from '../nftables/match.js';
import type { NftExpr, NftRuleset, NftRulesetTable, NftSetSpec } from '../nftables/index.js';
import { checkArray, checkInteger, checkString, invalidType } from '../validate.js';
import { INPOD, checkProbeSource } from './rules.js';

/** NFT_TABLES names the inet tables the agent owns: the three in each pod, and the host's (which holds the probe sets). */
export const NFT_TABLES = Object.freeze({
  /** In-pod nat table (captures), and the host's table of the probe sets and the probe SNAT. */
  nat: 'istio-ambient-nat',
  /** In-pod mangle table: connmark of the proxy's inbound connections, restored to the packet mark. */
  mangle: 'istio-ambient-mangle',
  /** In-pod raw table: the conntrack zone of DNS (only with DNS capture). */
  raw: 'istio-ambient-raw',
});

/** NFT_PROBE_SET_COMMENT is the probe sets' comment, as the reference writes it. */
export const NFT_PROBE_SET_COMMENT = 'UUID of the pods that are part of ambient mesh';

/** NftInpodRulesConfig configures nftInpodRules; every field has a default (those of InpodRulesConfig). */
export interface NftInpodRulesConfig {
  /** Also capture IPv6 (the ip6 rules in the same tables; default false). */
  ipv6?: boolean;
  /** Capture DNS (default true); off drops the raw table and the port-53 rules. */
  dnsCapture?: boolean;
  /** Interfaces whose inbound TCP goes to the outbound port (and is otherwise left alone). */
  virtualInterfaces?: readonly string[];
  /** Leave inbound traffic alone (default false), as inpodRules' ingressOnly. */
  ingressOnly?: boolean;
  /** The IPv4 probe source (default INPOD.probeSourceV4). */
  probeSourceV4?: string;
  /** The IPv6 probe source, used with ipv6 (default INPOD.probeSourceV6). */
  probeSourceV6?: string;
}

/** NftHostRulesConfig configures nftHostRules. */
export interface NftHostRulesConfig {
  /** The uid of the kubelet: only its sockets' probes are SNATed (nft's `meta skuid`). */
  kubeletUid: number;
  /** Also keep the IPv6 set and rule (default false). */
  ipv6?: boolean;
  /** Probe sets are `<prefix>-v4` and `<prefix>-v6` (default 'istio-inpod-probes'). */
  probeSetPrefix?: string;
  /** The IPv4 probe source (default INPOD.probeSourceV4). */
  probeSourceV4?: string;
  /** The IPv6 probe source (default INPOD.probeSourceV6). */
  probeSourceV6?: string;
}

const FAMILY = 'inet' as const;
const PRERT = 'istio-prerouting';
const OUTPUT = 'istio-output';
const PROXY_MARK = 0x539;
const CONN_MARK = 0x111;
const MARK_MASK = 0xfff;
const port = (p: string): number => Number(p);

function flag(name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidType(name, 'a boolean', value);
  return value;
}

function source(name: string, value: unknown, family: 4 | 6): string {
  if (value === undefined) return family === 4 ? INPOD.probeSourceV4 : INPOD.probeSourceV6;
  return checkProbeSource(name, value, family);
}

/** Builds one table's chains and rules; rule() appends to a chain in call order. */
class TableBuilder {
  readonly table: NftRulesetTable;

  constructor(name: string) {
    this.table = { family: FAMILY, name, sets: [], chains: [], rules: [] };
  }

  base(name: string, type: 'filter' | 'nat' | 'route', hook: 'prerouting' | 'output' | 'postrouting', priority: number): this {
    this.table.chains.push({ family: FAMILY, table: this.table.name, name, type, hook, priority });
    return this;
  }

  regular(name: string): this {
    this.table.chains.push({ family: FAMILY, table: this.table.name, name });
    return this;
  }

  rule(chain: string, ...parts: NftExpr[][]): this {
    this.table.rules.push({ family: FAMILY, table: this.table.name, chain, exprs: parts.flat() });
    return this;
  }
}

/**
 * inpodTable starts one of the in-pod tables as the reference lays them out: base chains prerouting and output of
 * the given types at one priority, and each jumping to its regular chain (PRERT, OUTPUT), the jump of `first` added
 * first.
 */
function inpodTable(
  name: string,
  types: readonly ['filter' | 'nat', 'filter' | 'nat' | 'route'],
  priority: number,
  first: 'prerouting' | 'output',
): TableBuilder {
  const table = new TableBuilder(name).base('prerouting', types[0], 'prerouting', priority).base('output', types[1], 'output', priority);
  table.regular(PRERT).regular(OUTPUT);
  const jumps = [
    ['prerouting', PRERT],
    ['output', OUTPUT],
  ] as const;
  for (const [chain, target] of first === 'prerouting' ? jumps : [...jumps].reverse()) table.rule(chain, x.jump(target));
  return table;
}

/** One family's loopback and probe source, and its address fields. */
interface Fam {
  saddr: 'ip saddr' | 'ip6 saddr';
  daddr: 'ip daddr' | 'ip6 daddr';
  localhost: string;
  probe: string;
}

const notProxyMark = (): NftExpr[] => x.mark(PROXY_MARK, MARK_MASK, { not: true });

/**
 * nftInpodRules is the in-pod redirection as the reference's three inet tables (nat, mangle and, with DNS capture,
 * raw). Throws InvalidArgumentError naming a bad config field (`config.<field>`).
 */
export function nftInpodRules(config: NftInpodRulesConfig = {}): NftRuleset {
  if (typeof config !== 'object' || config === null) throw invalidType('config', 'an object', config);
  const ipv6 = flag('config.ipv6', config.ipv6, false);
  const dns = flag('config.dnsCapture', config.dnsCapture, true);
  const ingressOnly = flag('config.ingressOnly', config.ingressOnly, false);
  // IFNAMSIZ is 16 with the NUL: nft refuses longer names, and the kernel would never match them.
  const vifs = checkArray('config.virtualInterfaces', config.virtualInterfaces ?? [], 'an array of interface names', (v, name) => checkString(name, v, 15));
  const fams: Fam[] = [{ saddr: 'ip saddr', daddr: 'ip daddr', localhost: '127.0.0.1/32', probe: source('config.probeSourceV4', config.probeSourceV4, 4) }];
  if (ipv6) fams.push({ saddr: 'ip6 saddr', daddr: 'ip6 daddr', localhost: '::1/128', probe: source('config.probeSourceV6', config.probeSourceV6, 6) });
  const each = (b: TableBuilder, chain: string, parts: (f: Fam) => NftExpr[][]): void => {
    for (const f of fams) b.rule(chain, ...parts(f));
  };

  const nat = inpodTable(NFT_TABLES.nat, ['nat', 'nat'], -100, 'output');
  for (const iface of vifs as string[]) {
    nat.rule(PRERT, x.iifname(iface), x.l4proto('tcp'), x.counter(), x.redirect(port(INPOD.outboundPort)));
    nat.rule(PRERT, x.iifname(iface), x.l4proto('tcp'), x.counter(), x.return());
  }
  // Ingress-only drops the same inbound rules as inpodRules does (the probe accept and the 15006 redirect); the
  // outbound probe accept and, in mangle, the connmark of proxy-marked inbound packets stay, as they stay there.
  if (!ingressOnly) each(nat, PRERT, (f) => [x.l4proto('tcp'), x.addr(f.saddr, f.probe), x.counter(), x.accept()]);
  each(nat, OUTPUT, (f) => [x.l4proto('tcp'), x.addr(f.daddr, f.probe), x.counter(), x.accept()]);
  if (!ingressOnly) {
    each(nat, PRERT, (f) => [
      x.addr(f.daddr, f.localhost, { not: true }),
      x.port('tcp dport', port(INPOD.hbonePort), { not: true }),
      notProxyMark(),
      x.counter(),
      x.redirect(port(INPOD.inboundPort)),
    ]);
  }
  if (dns) {
    nat.rule(OUTPUT, x.oifname('lo', { not: true }), notProxyMark(), x.port('udp dport', 53), x.counter(), x.redirect(port(INPOD.dnsPort)));
    each(nat, OUTPUT, (f) => [
      x.addr(f.daddr, f.localhost, { not: true }),
      x.port('tcp dport', 53),
      notProxyMark(),
      x.counter(),
      x.redirect(port(INPOD.dnsPort)),
    ]);
  }
  nat.rule(OUTPUT, x.l4proto('tcp'), x.mark(CONN_MARK, MARK_MASK), x.counter(), x.accept());
  each(nat, OUTPUT, (f) => [x.oifname('lo'), x.addr(f.daddr, f.localhost, { not: true }), x.counter(), x.accept()]);
  each(nat, OUTPUT, (f) => [
    x.l4proto('tcp'),
    x.addr(f.daddr, f.localhost, { not: true }),
    notProxyMark(),
    x.counter(),
    x.redirect(port(INPOD.outboundPort)),
  ]);

  const mangle = inpodTable(NFT_TABLES.mangle, ['filter', 'route'], -150, 'prerouting');
  mangle.rule(PRERT, x.mark(PROXY_MARK, MARK_MASK), x.counter(), x.setCtMark(0xfffff000, CONN_MARK));
  mangle.rule(OUTPUT, x.ctMark(CONN_MARK, MARK_MASK), x.counter(), x.setMarkFromCtMark());

  const tables = [nat.table, mangle.table];
  if (dns) {
    const raw = inpodTable(NFT_TABLES.raw, ['filter', 'filter'], -300, 'prerouting')
      .rule(OUTPUT, x.port('udp dport', 53), x.mark(PROXY_MARK, MARK_MASK), x.counter(), x.setCtZone(1))
      .rule(PRERT, x.port('udp sport', 53), notProxyMark(), x.counter(), x.setCtZone(1));
    tables.push(raw.table);
  }
  return { tables, owned: [NFT_TABLES.nat, NFT_TABLES.mangle, NFT_TABLES.raw].map((name) => ({ family: FAMILY, name })) };
}

/** nftProbeSetNames are the probe sets of a prefix: `<prefix>-v4`, and `<prefix>-v6` with ipv6. */
export function nftProbeSetNames(prefix: string, ipv6: boolean): { v4: string; v6: string; names: string[] } {
  const v4 = `${prefix}-v4`;
  const v6 = `${prefix}-v6`;
  return { v4, v6, names: ipv6 ? [v4, v6] : [v4] };
}

/** nftProbeSets are the host's probe set specs (the reference's type and comment). */
export function nftProbeSets(prefix: string, ipv6: boolean): NftSetSpec[] {
  const { v4, v6 } = nftProbeSetNames(prefix, ipv6);
  const sets: NftSetSpec[] = [{ family: FAMILY, table: NFT_TABLES.nat, name: v4, type: 'ipv4_addr', comment: NFT_PROBE_SET_COMMENT }];
  if (ipv6) sets.push({ family: FAMILY, table: NFT_TABLES.nat, name: v6, type: 'ipv6_addr', comment: NFT_PROBE_SET_COMMENT });
  return sets;
}

/**
 * nftHostRules is the host's `inet istio-ambient-nat` table: the probe sets and the postrouting chain whose rule
 * SNATs the kubelet's probes (`meta skuid`) towards pod IPs of a set to the probe source. Throws
 * InvalidArgumentError naming a bad config field (`config.<field>`).
 */
export function nftHostRules(config: NftHostRulesConfig): NftRuleset {
  if (typeof config !== 'object' || config === null) throw invalidType('config', 'an object', config);
  const uid = checkInteger('config.kubeletUid', config.kubeletUid, 0, 0xfffffffe);
  const ipv6 = flag('config.ipv6', config.ipv6, false);
  const prefix = checkString('config.probeSetPrefix', config.probeSetPrefix ?? 'istio-inpod-probes', 28);
  const names = nftProbeSetNames(prefix, ipv6);
  const host = new TableBuilder(NFT_TABLES.nat).base('postrouting', 'nat', 'postrouting', 100);
  host.table.sets.push(...nftProbeSets(prefix, ipv6));
  host.rule('postrouting', x.l4proto('tcp'), x.skuid(uid), x.addrInSet('ip daddr', names.v4), x.counter(), x.snat(source('config.probeSourceV4', config.probeSourceV4, 4)));
  if (ipv6) {
    host.rule('postrouting', x.l4proto('tcp'), x.skuid(uid), x.addrInSet('ip6 daddr', names.v6), x.counter(), x.snat(source('config.probeSourceV6', config.probeSourceV6, 6)));
  }
  return { tables: [host.table], owned: [{ family: FAMILY, name: NFT_TABLES.nat }] };
}
