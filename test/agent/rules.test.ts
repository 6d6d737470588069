// The agent's rule sets are the reference's, rule for rule: compared line by
// line with the reference as iptables-save prints it, and, with root, by
// restoring the verbatim reference into fresh namespaces (both backends) and
// asking podnet whether its rule sets are what the kernel holds.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { Iptables, hostProbeRules, inpodRules, type RuleSet } from '../../lib/index.js';
import { renderArgs } from '../../lib/iptables/quote.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

const fixtures = join(import.meta.dirname, '../fixtures/agent');

/** "-A CHAIN args" lines grouped by "table chain", in order. */
function savedByChain(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let table = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1).trim();
    const m = /^-A (\S+) (.*)$/.exec(line);
    if (!m) continue;
    const key = `${table} ${m[1]}`;
    out.set(key, [...(out.get(key) ?? []), m[2]!]);
  }
  return out;
}

function podnetByChain(...sets: RuleSet[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const set of sets) {
    for (const rule of set.rules()) {
      const key = `${rule.table} ${rule.chain}`;
      out.set(key, [...(out.get(key) ?? []), renderArgs(rule.args)]);
    }
  }
  return out;
}

const sorted = (m: Map<string, string[]>) => new Map([...m].sort(([a], [b]) => a.localeCompare(b)));

describe('agent rule sets', () => {
  it('equal the reference rule sets for the default config, line by line', () => {
    const reference = savedByChain(readFileSync(join(fixtures, 'reference.saved'), 'utf8'));
    expect(sorted(podnetByChain(inpodRules(), hostProbeRules()))).toEqual(sorted(reference));
  });

  it('own exactly the reference chains', () => {
    const inpod = inpodRules();
    for (const table of ['mangle', 'nat', 'raw'] as const) expect(inpod.ownedChains(table)).toEqual(expect.arrayContaining(['ISTIO_PRERT', 'ISTIO_OUTPUT']));
    expect(inpod.tables).toEqual(['mangle', 'nat', 'raw']);
    expect(hostProbeRules().ownedChains('nat')).toEqual(['ISTIO_POSTRT']);
    expect(hostProbeRules().rules().find((r) => r.chain === 'POSTROUTING')?.position).toBe(1);
  });

  it('drop the raw table and the port-53 rules without DNS capture', () => {
    const rules = inpodRules({ dnsCapture: false });
    expect(rules.tables).toEqual(['mangle', 'nat']);
    expect(rules.rules().some((r) => r.args.includes('53'))).toBe(false);
    expect(rules.rules().length).toBe(inpodRules().rules().length - 6);
  });

  it('use IPv6 loopback and probe source for family 6', () => {
    const text = rulesText(inpodRules({ family: 6 }));
    expect(text).toContain('! -d ::1/128');
    expect(text).toContain('-s fd16:9254:7127:1337:ffff:ffff:ffff:ffff/128');
    expect(text).not.toContain('127.0.0.1');
    expect(rulesText(hostProbeRules({ family: 6, probeSetPrefix: 'p' }))).toContain(
      '--match-set p-v6 dst -j SNAT --to-source fd16:9254:7127:1337:ffff:ffff:ffff:ffff',
    );
  });

  it('put virtual interface rules first in nat ISTIO_PRERT', () => {
    const prert = inpodRules({ virtualInterfaces: ['tun0'] }).rules('nat').filter((r) => r.chain === 'ISTIO_PRERT');
    expect(prert.slice(0, 2).map((r) => renderArgs(r.args))).toEqual([
      '-i tun0 -p tcp -j REDIRECT --to-ports 15001',
      '-i tun0 -p tcp -j RETURN',
    ]);
  });

  it('refuse bad config', () => {
    expect(() => inpodRules({ family: 5 as 4 })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => hostProbeRules({ probeSetPrefix: 'x'.repeat(29) })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => inpodRules({ virtualInterfaces: ['eth0\n-A INPUT -j DROP'] }).render()).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
  });
});

function rulesText(set: RuleSet): string {
  return set.rules().map((r) => `-A ${r.chain} ${renderArgs(r.args)}`).join('\n');
}

describePrivileged(
  'agent rule sets against the kernel',
  () => {
    for (const backend of ['nft', 'legacy'] as const) {
      it(`are what the kernel holds after restoring the verbatim reference (${backend})`, async () => {
        await withNetns(async (ns) => {
          ns.exec(['ipset', 'create', 'istio-inpod-probes-v4', 'hash:ip', 'comment']);
          for (const file of ['inpod-reference.rules', 'host-reference.rules']) {
            ns.exec([`iptables-${backend}-restore`, '--noflush'], readFileSync(join(fixtures, file), 'utf8'));
          }
          // Without the "# Generated ... on <time>" comment lines, which change every second.
          const save = () => ns.exec([`iptables-${backend}-save`]).split('\n').filter((l) => !l.startsWith('#')).join('\n');
          const saved = save();
          expect(sorted(savedByChain(saved))).toEqual(sorted(savedByChain(readFileSync(join(fixtures, 'reference.saved'), 'utf8'))));
          const ipt = await Iptables.open({ netns: ns.path, backend });
          for (const rules of [inpodRules(), hostProbeRules()]) {
            expect(await ipt.verify(rules)).toMatchObject({ inSync: true, missing: [], unexpected: [] });
            expect(await ipt.reconcile(rules)).toEqual({ changed: false });
          }
          expect(save()).toBe(saved);
        });
      });
    }

    it('hold for IPv6 too: applied with ip6tables they verify in sync', async () => {
      await withNetns(async (ns) => {
        ns.exec(['ipset', 'create', 'istio-inpod-probes-v6', 'hash:ip', 'family', 'inet6', 'comment']);
        const ipt = await Iptables.open({ netns: ns.path, family: 6, backend: 'nft' });
        for (const rules of [inpodRules({ family: 6 }), hostProbeRules({ family: 6 })]) {
          await ipt.apply(rules);
          expect(await ipt.verify(rules)).toMatchObject({ inSync: true });
        }
        const saved = execFileSync('ip', ['netns', 'exec', ns.name, 'ip6tables-nft-save'], { encoding: 'utf8' });
        expect(saved).toContain('-A ISTIO_PRERT ! -d ::1/128 -p tcp -m tcp ! --dport 15008');
      });
    });
  },
  missingBinary('ipset', 'iptables-nft-restore', 'iptables-legacy-restore'),
);
