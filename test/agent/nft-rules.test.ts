// The agent's nftables rules on FakeNftables (no root): each variant listed back equals what was meant, has the
// rules its iptables twin has (rules.ts), goes in as one batch (a refused op leaves the previous variant whole), is
// replaced and removed cleanly; bad configs are refused before anything is sent.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { Nftables, inpodRules } from '../../lib/index.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { NFT_TABLES, nftHostRules, nftInpodRules, type NftInpodRulesConfig } from '../../lib/agent/nft-rules.js';

const IN_SYNC = { inSync: true, missing: [], unexpected: [], reordered: [] };
const IPT_TABLE = { 'istio-ambient-nat': 'nat', 'istio-ambient-mangle': 'mangle', 'istio-ambient-raw': 'raw' } as const;

describe('agent nftables rules on FakeNftables', () => {
  let fake: FakeNftables;
  let nft: Nftables;

  beforeEach(async () => {
    fake = new FakeNftables();
    nft = await Nftables.open({ netlink: fake });
  });
  afterEach(() => nft.close());

  const variants: { name: string; config: NftInpodRulesConfig }[] = [
    { name: 'default', config: {} },
    { name: 'dns capture off', config: { dnsCapture: false } },
    { name: 'ingress-only', config: { ingressOnly: true } },
    { name: 'virtual interfaces', config: { virtualInterfaces: ['istioin', 'eth7'] } },
    { name: 'probe source', config: { probeSourceV4: '169.254.10.1' } },
  ];

  for (const { name, config } of variants) {
    it(`${name}: listed back as meant, with the rules of the iptables variant`, async () => {
      const ruleset = nftInpodRules(config);
      await nft.apply(ruleset);
      expect(await nft.verify(ruleset)).toEqual(IN_SYNC);
      const tables = fake.dump().tables;
      expect(tables.map((t) => [t.family, t.name])).toEqual(ruleset.tables.map((t) => [1, t.name]));
      // Per table, as many rules in the two owned chains as the IPv4 iptables rule set has in ISTIO_PRERT and
      // ISTIO_OUTPUT, and one jump in each base chain.
      const ipt = inpodRules({ ...config, family: 4 }).rules();
      for (const t of tables) {
        const count = (chain: string) => t.chains.find((c) => c.name === chain)!.rules.length;
        const iptCount = (chain: string) => ipt.filter((r) => r.table === IPT_TABLE[t.name as keyof typeof IPT_TABLE] && r.chain === chain).length;
        expect([count('istio-prerouting'), count('istio-output')]).toEqual([iptCount('ISTIO_PRERT'), iptCount('ISTIO_OUTPUT')]);
        expect([count('prerouting'), count('output')]).toEqual([1, 1]);
      }
    });
  }

  it('IPv6 adds an ip6 twin of each address rule to the same inet tables', async () => {
    const v4 = nftInpodRules();
    const both = nftInpodRules({ ipv6: true });
    const nat = (r: typeof v4) => r.tables.find((t) => t.name === NFT_TABLES.nat)!.rules.length;
    // The probe accepts (2), the 15006 and 15001 redirects, the tcp DNS redirect and the lo accept: six address rules.
    expect(nat(both) - nat(v4)).toBe(6);
    await nft.apply(both);
    expect(await nft.verify(both)).toEqual(IN_SYNC);
    expect(fake.dump().tables.map((t) => t.name)).toEqual([NFT_TABLES.nat, NFT_TABLES.mangle, NFT_TABLES.raw]);
  });

  it('switches variants in one batch: the raw table goes with DNS capture, and comes back', async () => {
    await nft.apply(nftInpodRules());
    const off = nftInpodRules({ dnsCapture: false });
    await nft.apply(off);
    expect(fake.dump().tables.map((t) => t.name)).toEqual([NFT_TABLES.nat, NFT_TABLES.mangle]);
    expect(await nft.verify(off)).toEqual(IN_SYNC);
    const on = await nft.verify(nftInpodRules());
    expect(on.inSync).toBe(false);
    expect(on.missing).toContainEqual({ family: 'inet', table: NFT_TABLES.raw });
    expect(await nft.reconcile(nftInpodRules())).toEqual({ changed: true });
    expect(await nft.reconcile(nftInpodRules())).toEqual({ changed: false });
    const back = await nft.verify(off);
    expect(back.inSync).toBe(false);
    expect(back.unexpected).toContainEqual({ family: 'inet', table: NFT_TABLES.raw });
  });

  it('is all or nothing: a refused rule leaves the previous variant whole', async () => {
    const before = nftInpodRules({ ingressOnly: true });
    await nft.apply(before);
    const snapshot = fake.dump();
    // The kernel refuses a rule of the last table: the flushes and rules of the tables before it are undone too.
    fake.failNext(22, { message: 'newrule', table: NFT_TABLES.raw });
    await expect(nft.apply(nftInpodRules())).rejects.toMatchObject({ code: 'EINVAL', errno: -22, operation: 'run', index: 32 });
    expect(fake.dump().tables).toEqual(snapshot.tables);
    expect(await nft.verify(before)).toEqual(IN_SYNC);
  });

  it('reports a lost, a foreign and a reordered rule, and apply restores exactly the ruleset', async () => {
    const ruleset = nftInpodRules();
    await nft.apply(ruleset);
    const mangle = ruleset.tables.find((t) => t.name === NFT_TABLES.mangle)!;
    const listed = await nft.rules({ family: 'inet', name: NFT_TABLES.mangle });
    const restore = listed.find((r) => r.chain === 'istio-output')!;
    await nft.run(
      nft
        .transaction()
        .deleteRule({ family: 'inet', table: NFT_TABLES.mangle, chain: 'istio-output', handle: restore.handle! })
        .addRule({ family: 'inet', table: NFT_TABLES.mangle, chain: 'istio-prerouting', exprs: [{ type: 'counter' }] }),
    );
    const drift = await nft.verify(ruleset);
    expect(drift.missing).toEqual([{ family: 'inet', table: NFT_TABLES.mangle, chain: 'istio-output', rule: mangle.rules.at(-1)!.exprs.flat() }]);
    expect(drift.unexpected).toEqual([{ family: 'inet', table: NFT_TABLES.mangle, chain: 'istio-prerouting', rule: [{ type: 'counter', packets: 0, bytes: 0 }] }]);

    await nft.apply(ruleset);
    expect(await nft.verify(ruleset)).toEqual(IN_SYNC);
    // The same rules in the other order.
    const nat = await nft.rules({ family: 'inet', name: NFT_TABLES.nat });
    const first = nat.find((r) => r.chain === 'istio-output')!;
    await nft.run(
      nft
        .transaction()
        .deleteRule({ family: 'inet', table: NFT_TABLES.nat, chain: 'istio-output', handle: first.handle! })
        .addRule({ family: 'inet', table: NFT_TABLES.nat, chain: 'istio-output', exprs: first.exprs }),
    );
    expect(await nft.verify(ruleset)).toEqual({ inSync: false, missing: [], unexpected: [], reordered: [{ family: 'inet', table: NFT_TABLES.nat, chain: 'istio-output' }] });
  });

  it('removes every owned table in one batch, and again without error', async () => {
    const ruleset = nftInpodRules({ ipv6: true });
    await nft.apply(ruleset);
    await nft.run(nft.transaction().addTable({ family: 'inet', name: 'someone-else' }));
    await nft.remove(ruleset);
    expect(fake.dump().tables.map((t) => t.name)).toEqual(['someone-else']);
    await nft.remove(ruleset);
    const missing = await nft.verify(ruleset);
    expect(missing.missing.filter((d) => d.chain === undefined && d.set === undefined)).toEqual(ruleset.tables.map((t) => ({ family: 'inet', table: t.name })));
  });

  it('host rules: the probe sets with the reference comment and the kubelet SNAT, listed back as meant', async () => {
    const host = nftHostRules({ kubeletUid: 1000, ipv6: true });
    await nft.apply(host);
    expect(await nft.verify(host)).toEqual(IN_SYNC);
    const [table] = fake.dump().tables;
    expect(table!.sets.map((s) => [s.name, s.keyLength, s.comment])).toEqual([
      ['istio-inpod-probes-v4', 4, 'UUID of the pods that are part of ambient mesh'],
      ['istio-inpod-probes-v6', 16, 'UUID of the pods that are part of ambient mesh'],
    ]);
    // Re-applied with elements in the sets: the rules are refilled, the elements stay.
    await nft.addElement({ family: 'inet', name: NFT_TABLES.nat }, 'istio-inpod-probes-v4', { address: '10.0.0.5', comment: 'pod-uid' });
    await nft.apply(host);
    expect(await nft.elements({ family: 'inet', name: NFT_TABLES.nat }, 'istio-inpod-probes-v4')).toEqual([{ address: '10.0.0.5', comment: 'pod-uid' }]);
    expect(fake.dump().tables[0]!.chains[0]!.rules).toHaveLength(2);
    // Another uid is drift.
    expect((await nft.verify(nftHostRules({ kubeletUid: 1001, ipv6: true }))).inSync).toBe(false);
  });

  it('refuses bad configs with a typed error naming the field, and sends nothing', async () => {
    const gen = fake.genId;
    const cases: [() => unknown, string, string][] = [
      [() => nftInpodRules({ ipv6: 'yes' as unknown as boolean }), 'ERR_INVALID_ARG_TYPE', 'config.ipv6'],
      [() => nftInpodRules({ dnsCapture: 1 as unknown as boolean }), 'ERR_INVALID_ARG_TYPE', 'config.dnsCapture'],
      [() => nftInpodRules({ ingressOnly: null as unknown as boolean }), 'ERR_INVALID_ARG_TYPE', 'config.ingressOnly'],
      [() => nftInpodRules({ virtualInterfaces: 'eth0' as unknown as string[] }), 'ERR_INVALID_ARG_TYPE', 'config.virtualInterfaces'],
      [() => nftInpodRules({ virtualInterfaces: ['a-name-that-is-too-long'] }), 'ERR_INVALID_ARG_VALUE', 'config.virtualInterfaces[0]'],
      [() => nftInpodRules({ probeSourceV4: 'fd00::1' }), 'ERR_INVALID_ARG_VALUE', 'config.probeSourceV4'],
      [() => nftInpodRules({ ipv6: true, probeSourceV6: 'FD00::1' }), 'ERR_INVALID_ARG_VALUE', 'config.probeSourceV6'],
      [() => nftHostRules({ kubeletUid: -1 }), 'ERR_INVALID_ARG_VALUE', 'config.kubeletUid'],
      [() => nftHostRules({} as { kubeletUid: number }), 'ERR_INVALID_ARG_TYPE', 'config.kubeletUid'],
      [() => nftHostRules({ kubeletUid: 0, probeSetPrefix: '' }), 'ERR_INVALID_ARG_VALUE', 'config.probeSetPrefix'],
    ];
    for (const [fn, code, argument] of cases) expect(fn, argument).toThrow(expect.objectContaining({ code, argument }));
    expect(fake.genId).toBe(gen);
    expect(fake.dump().tables).toEqual([]);
  });
});
