// The agent's nftables rules on the kernel, per variant, in fresh namespaces: `nft -j list ruleset` of what podnet
// wrote equals that of the reference's rules written by `nft -f` (nft-reference.ts), and podnet's verify reads the
// nft-written rules as in sync; switching variants and removing leave exactly the wanted tables.
import { expect, it } from 'vitest';

import { Nftables } from '../../lib/index.js';
import { nftHostRules, nftInpodRules, type NftInpodRulesConfig } from '../../lib/agent/nft-rules.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { referenceHostText, referenceInpodText, type ReferenceVariant } from './nft-reference.js';

type Json = Record<string, unknown>;

/** `nft -j list ruleset` without its metainfo entry. */
function rulesetJson(ns: TestNetns): Json[] {
  const parsed = JSON.parse(ns.exec(['nft', '-j', 'list', 'ruleset'])) as { nftables: Json[] };
  return parsed.nftables.filter((e) => !('metainfo' in e));
}

async function withNft<R>(tag: string, fn: (nft: Nftables, ns: TestNetns) => Promise<R>): Promise<R> {
  using ns = new TestNetns(tag);
  const nft = await Nftables.open({ netns: ns.path });
  try {
    return await fn(nft, ns);
  } finally {
    nft.close();
  }
}

const VARIANTS: { name: string; config: NftInpodRulesConfig & ReferenceVariant }[] = [
  { name: 'default (IPv4, DNS capture)', config: {} },
  { name: 'IPv6 in the same inet tables', config: { ipv6: true } },
  { name: 'DNS capture off', config: { dnsCapture: false } },
  { name: 'ingress-only', config: { ingressOnly: true } },
  { name: 'ingress-only with IPv6 and no DNS capture', config: { ingressOnly: true, ipv6: true, dnsCapture: false } },
  { name: 'virtual interfaces', config: { virtualInterfaces: ['istioin', 'veth-x1'], ipv6: true } },
  { name: 'probe sources', config: { ipv6: true, probeSourceV4: '169.254.10.1', probeSourceV6: 'fd00:7127::1' } },
];

describePrivileged(
  'agent nftables rules on the kernel',
  () => {
    for (const { name, config } of VARIANTS) {
      it(`in-pod rules, ${name}: nft -j list ruleset equals the reference's, and each side verifies the other`, async () => {
        using theirs = new TestNetns('nftref');
        theirs.exec(['nft', '-f', '-'], referenceInpodText(config));
        const ruleset = nftInpodRules(config);
        await withNft('nftpod', async (nft, ns) => {
          await nft.apply(ruleset);
          expect(rulesetJson(ns)).toEqual(rulesetJson(theirs));
          expect(await nft.verify(ruleset)).toEqual({ inSync: true, missing: [], unexpected: [], reordered: [] });
        });
        const reader = await Nftables.open({ netns: theirs.path });
        try {
          expect(await reader.verify(ruleset)).toMatchObject({ inSync: true });
        } finally {
          reader.close();
        }
      });
    }

    for (const config of [{ kubeletUid: 1000 }, { kubeletUid: 0, ipv6: true }, { kubeletUid: 4242, ipv6: true, probeSourceV4: '169.254.10.1', probeSourceV6: 'fd00:7127::1' }]) {
      it(`host rules ${JSON.stringify(config)}: sets and SNAT rule as the reference writes them`, async () => {
        using theirs = new TestNetns('nftrefh');
        theirs.exec(['nft', '-f', '-'], referenceHostText(config));
        const ruleset = nftHostRules(config);
        await withNft('nfthost', async (nft, ns) => {
          await nft.apply(ruleset);
          expect(rulesetJson(ns)).toEqual(rulesetJson(theirs));
          expect((await nft.verify(ruleset)).inSync).toBe(true);
          // Applied again (a restarted agent): the same, nothing duplicated.
          await nft.apply(ruleset);
          expect(rulesetJson(ns).filter((e) => 'rule' in e)).toHaveLength(config.ipv6 ? 2 : 1);
        });
      });
    }

    it('a variant switch replaces the tables in one batch, drift is reported, and remove leaves nothing', async () => {
      await withNft('nftswitch', async (nft, ns) => {
        const full = nftInpodRules({ ipv6: true });
        const noDns = nftInpodRules({ dnsCapture: false });
        await nft.apply(full);
        await nft.apply(noDns);
        const tables = rulesetJson(ns).flatMap((e) => ('table' in e ? [(e.table as Json).name] : []));
        expect(tables).toEqual(['istio-ambient-nat', 'istio-ambient-mangle']);
        expect((await nft.verify(noDns)).inSync).toBe(true);
        const drift = await nft.verify(full);
        expect(drift.inSync).toBe(false);
        expect(drift.missing).toContainEqual({ family: 'inet', table: 'istio-ambient-raw' });

        // Someone deletes one rule by hand: verify names it, apply puts it back.
        ns.exec(['nft', 'flush', 'chain', 'inet', 'istio-ambient-mangle', 'istio-output']);
        const lost = await nft.verify(noDns);
        expect(lost.missing).toEqual([{ family: 'inet', table: 'istio-ambient-mangle', chain: 'istio-output', rule: noDns.tables[1]!.rules.at(-1)!.exprs.flat() }]);
        await nft.apply(noDns);
        expect((await nft.verify(noDns)).inSync).toBe(true);

        await nft.remove(noDns);
        expect(rulesetJson(ns)).toEqual([]);
        // Removing again is fine: the tables are already gone.
        await nft.remove(noDns);
      });
    });
  },
  missingBinary('nft'),
);
