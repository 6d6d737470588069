// The agent's rule set variants (ingress-only mode and a configured probe source, with IPv6, without DNS capture
// and with virtual interfaces) held against the reference, as rules.test.ts holds the defaults. Each case has a
// restore input written from the reference agent's rules (test/fixtures/agent/variants/<case>.rules) and what
// iptables-save printed for it (<case>.saved). Without root the rule sets are compared with .saved; with root the
// restore input goes into fresh namespaces on both backends, and podnet must find its rule sets to be what the
// kernel holds, and produce that same state itself.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import {
  INPOD,
  Iptables,
  hostProbeRules,
  inpodRules,
  type HostProbeRulesConfig,
  type InpodRulesConfig,
  type RuleSet,
} from '../../lib/index.js';
import { renderArgs } from '../../lib/iptables/quote.js';
import { withNetns, type TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

const fixtures = join(import.meta.dirname, '../fixtures/agent/variants');
const PROBE_V4 = '169.254.10.1';
// The v6 probe source the reference's own goldens configure.
const PROBE_V6 = 'e9ac:1e77:90ca:399f:4d6d:ece2:2f9b:3164';
const VIFS = ['fake1s0f0', 'fake1s0f1'];

interface Variant {
  name: string;
  family: 4 | 6;
  inpod: InpodRulesConfig;
  host?: HostProbeRulesConfig;
}

const variants: Variant[] = [
  { name: 'ingress', family: 4, inpod: { ingressOnly: true } },
  { name: 'ingress-ipv6', family: 6, inpod: { family: 6, ingressOnly: true } },
  { name: 'ingress-nodns', family: 4, inpod: { ingressOnly: true, dnsCapture: false } },
  { name: 'ingress-vif', family: 4, inpod: { ingressOnly: true, dnsCapture: false, virtualInterfaces: VIFS } },
  {
    name: 'ingress-vif-probe-source-ipv6',
    family: 6,
    inpod: { family: 6, ingressOnly: true, dnsCapture: false, virtualInterfaces: VIFS, probeSource: PROBE_V6 },
  },
  { name: 'probe-source', family: 4, inpod: { probeSource: PROBE_V4 }, host: { probeSource: PROBE_V4 } },
  { name: 'probe-source-ipv6', family: 6, inpod: { family: 6, probeSource: PROBE_V6 }, host: { family: 6, probeSource: PROBE_V6 } },
  {
    name: 'probe-source-nodns-vif',
    family: 4,
    inpod: { probeSource: PROBE_V4, dnsCapture: false, virtualInterfaces: ['tun0'] },
    host: { probeSource: PROBE_V4 },
  },
];

const ruleSets = (v: Variant): RuleSet[] => [inpodRules(v.inpod), ...(v.host ? [hostProbeRules(v.host)] : [])];
const fixture = (file: string) => readFileSync(join(fixtures, file), 'utf8');

/** The lines of each table of iptables-save output, in order, without comments (tables may come in any order). */
function byTable(text: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  let table: string[] | undefined;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    if (line.startsWith('*')) out[line.slice(1).trim()] = table = [];
    else table!.push(line);
  }
  return out;
}

/** "-A" arguments keyed "table chain", and the user chains ("-" policy) each table declares. */
function parseSaved(text: string): { rules: Record<string, string[]>; chains: Record<string, string[]> } {
  const rules: Record<string, string[]> = {};
  const chains: Record<string, string[]> = {};
  for (const [table, lines] of Object.entries(byTable(text))) {
    chains[table] = [];
    for (const line of lines) {
      const rule = /^-A (\S+) (.*)$/.exec(line);
      if (rule) (rules[`${table} ${rule[1]}`] ??= []).push(rule[2]!);
      const chain = /^:(\S+) - /.exec(line);
      if (chain) chains[table]!.push(chain[1]!);
    }
  }
  return { rules, chains };
}

function podnetParsed(sets: RuleSet[]): { rules: Record<string, string[]>; chains: Record<string, string[]> } {
  const rules: Record<string, string[]> = {};
  const chains: Record<string, string[]> = {};
  for (const set of sets) {
    for (const rule of set.rules()) (rules[`${rule.table} ${rule.chain}`] ??= []).push(renderArgs(rule.args));
    for (const table of set.tables) (chains[table] ??= []).push(...set.ownedChains(table));
  }
  for (const list of Object.values(chains)) list.sort();
  return { rules, chains };
}

const ruleTexts = (set: RuleSet) => set.rules().map((r) => `${r.table} ${r.chain} ${renderArgs(r.args)}`);

describe('agent rule set variants', () => {
  for (const v of variants) {
    it(`${v.name}: equal the reference's rules as iptables-save prints them, chain for chain`, () => {
      const saved = parseSaved(fixture(`${v.name}.saved`));
      for (const list of Object.values(saved.chains)) list.sort();
      expect(podnetParsed(ruleSets(v))).toEqual(saved);
    });
  }

  it('ingress-only mode drops exactly the probe ACCEPT and the 15006 REDIRECT, and keeps the connmark of proxy-marked inbound', () => {
    for (const family of [4, 6] as const) {
      const full = ruleTexts(inpodRules({ family }));
      const ingress = ruleTexts(inpodRules({ family, ingressOnly: true }));
      const localhost = family === 4 ? '127.0.0.1/32' : '::1/128';
      const probe = family === 4 ? `${INPOD.probeSourceV4}/32` : `${INPOD.probeSourceV6}/128`;
      expect(full.filter((r) => !ingress.includes(r))).toEqual([
        `nat ISTIO_PRERT -s ${probe} -p tcp -m tcp -j ACCEPT`,
        `nat ISTIO_PRERT ! -d ${localhost} -p tcp -m tcp ! --dport 15008 -m mark ! --mark 0x539/0xfff -j REDIRECT --to-ports 15006`,
      ]);
      expect(ingress.filter((r) => !full.includes(r))).toEqual([]);
      expect(ingress).toContain(`nat ISTIO_OUTPUT -d ${probe} -p tcp -m tcp -j ACCEPT`);
      // Inbound HBONE's replies reach the proxy only through it (istio/istio#58546, #58577).
      expect(ingress).toContain('mangle ISTIO_PRERT -m mark --mark 0x539/0xfff -j CONNMARK --set-xmark 0x111/0xfff');
    }
  });

  it('render byte for byte as before when the new options are given their defaults', () => {
    for (const family of [4, 6] as const) {
      const probeSource = family === 4 ? INPOD.probeSourceV4 : INPOD.probeSourceV6;
      expect(inpodRules({ family, ingressOnly: false, probeSource }).render()).toBe(inpodRules({ family }).render());
      expect(hostProbeRules({ family, probeSource }).render()).toBe(hostProbeRules({ family }).render());
    }
  });

  const refused: { name: string; family: 4 | 6; value: unknown; code: string }[] = [
    { name: 'an IPv6 address for family 4', family: 4, value: 'fd00::1', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a prefix length', family: 4, value: '169.254.7.127/32', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a leading zero', family: 4, value: '169.254.07.127', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a shortened IPv4 address', family: 4, value: '169.254.1', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a newline and a rule', family: 4, value: '169.254.7.127\n-A INPUT -j DROP', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'quotes', family: 4, value: '"169.254.7.127"', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a NUL', family: 4, value: '169.254.7.127\0', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'surrounding space', family: 4, value: ' 169.254.7.127', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'an empty string', family: 4, value: '', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a number', family: 4, value: 0xa9fe077f, code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'null', family: 6, value: null, code: 'ERR_INVALID_ARG_TYPE' },
    { name: 'an IPv4 address for family 6', family: 6, value: '169.254.7.127', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'upper case', family: 6, value: 'FD16::1', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'an uncompressed zero run', family: 6, value: 'fd16:0:0:0:0:0:0:1', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a leading zero in a group', family: 6, value: 'fd16::01', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'an IPv6 prefix length', family: 6, value: 'fd16::1/128', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'a zone id', family: 6, value: 'fe80::1%eth0', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'an IPv4-mapped address', family: 6, value: '::ffff:169.254.7.127', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'an IPv4-compatible address', family: 6, value: '::1.2.3.4', code: 'ERR_INVALID_ARG_VALUE' },
    { name: 'the loopback address', family: 6, value: '::1', code: 'ERR_INVALID_ARG_VALUE' },
  ];
  for (const c of refused) {
    it(`refuse a probe source with ${c.name}, naming config.probeSource`, () => {
      const expected = expect.objectContaining({ code: c.code, argument: 'config.probeSource' });
      expect(() => inpodRules({ family: c.family, probeSource: c.value as string })).toThrow(expected);
      expect(() => hostProbeRules({ family: c.family, probeSource: c.value as string })).toThrow(expected);
    });
  }

  it('accept canonical probe sources of the family', () => {
    for (const [family, probeSource] of [[4, '10.0.0.1'], [6, 'fd00::1'], [6, '2001:db8:0:1::7127'], [6, PROBE_V6]] as const) {
      expect(renderArgs(hostProbeRules({ family, probeSource }).rules().at(-1)!.args)).toMatch(new RegExp(`--to-source ${probeSource}$`));
      expect(ruleTexts(inpodRules({ family, probeSource }))).toContain(
        `nat ISTIO_PRERT -s ${probeSource}/${family === 4 ? 32 : 128} -p tcp -m tcp -j ACCEPT`,
      );
    }
  });

  it('refuse an ingressOnly that is not a boolean', () => {
    expect(() => inpodRules({ ingressOnly: 'yes' as unknown as boolean })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE', argument: 'config.ingressOnly' }),
    );
  });
});

function save(ns: TestNetns, family: 4 | 6, backend: 'nft' | 'legacy'): string {
  return ns.exec([`${family === 4 ? 'iptables' : 'ip6tables'}-${backend}-save`]);
}

function createProbeSet(ns: TestNetns, family: 4 | 6): void {
  ns.exec(['ipset', 'create', `istio-inpod-probes-v${family}`, 'hash:ip', 'family', family === 4 ? 'inet' : 'inet6', 'comment']);
}

describePrivileged(
  'agent rule set variants against the kernel',
  () => {
    for (const v of variants) {
      for (const backend of ['nft', 'legacy'] as const) {
        it(`${v.name} (${backend}): the restored reference is what podnet's rule sets describe, and what they apply`, async () => {
          await withNetns(async (reference, own) => {
            const tool = `${v.family === 4 ? 'iptables' : 'ip6tables'}-${backend}-restore`;
            createProbeSet(reference, v.family);
            reference.exec([tool, '--noflush'], fixture(`${v.name}.rules`));
            const saved = save(reference, v.family, backend);
            expect(byTable(saved)).toEqual(byTable(fixture(`${v.name}.saved`)));
            const ipt = await Iptables.open({ netns: reference.path, family: v.family, backend });
            for (const rules of ruleSets(v)) {
              expect(await ipt.verify(rules)).toMatchObject({ inSync: true, missing: [], unexpected: [], reordered: [] });
              expect(await ipt.reconcile(rules)).toEqual({ changed: false });
            }
            expect(byTable(save(reference, v.family, backend))).toEqual(byTable(saved));

            createProbeSet(own, v.family);
            const mine = await Iptables.open({ netns: own.path, family: v.family, backend });
            for (const rules of ruleSets(v)) await mine.apply(rules);
            expect(byTable(save(own, v.family, backend))).toEqual(byTable(saved));
          }, 2);
        });
      }
    }

    for (const backend of ['nft', 'legacy'] as const) {
      it(`switch a pod between full and ingress-only mode with apply, each reading the other as drift (${backend})`, async () => {
        await withNetns(async (ns) => {
          const ipt = await Iptables.open({ netns: ns.path, backend });
          const full = inpodRules();
          const ingress = inpodRules({ ingressOnly: true });
          const dropped = ruleTexts(full).filter((r) => !ruleTexts(ingress).includes(r));
          await ipt.apply(full);
          const asIngress = await ipt.verify(ingress);
          expect(asIngress).toMatchObject({ inSync: false, missing: [] });
          expect(asIngress.unexpected.map((r) => `${r.table} ${r.chain} ${renderArgs(r.args!)}`)).toEqual(dropped);
          await ipt.apply(ingress);
          expect(await ipt.verify(ingress)).toMatchObject({ inSync: true, unexpected: [] });
          const asFull = await ipt.verify(full);
          expect(asFull.missing.map((r) => `${r.table} ${r.chain} ${renderArgs(r.args!)}`)).toEqual(dropped);
          await ipt.remove(ingress);
          expect(save(ns, 4, backend)).not.toContain('ISTIO');
        });
      });
    }
  },
  missingBinary('ipset', 'iptables-nft-restore', 'iptables-legacy-restore', 'ip6tables-nft-restore', 'ip6tables-legacy-restore'),
);
