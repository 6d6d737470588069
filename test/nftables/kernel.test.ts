// nf_tables on the kernel, in a fresh namespace per test: what podnet writes `nft -j list ruleset` shows, what
// `nft -f` writes podnet lists, batches are all or nothing, element adds are exclusive, and replace is explicit.
import { expect, it } from 'vitest';

import { Nftables, NftablesError, isAlreadyExists, isNotFound, nftExpr, type NftTableRef } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

const T: NftTableRef = { family: 'inet', name: 'istio-ambient-nat' };
const SET = 'istio-inpod-probes-v4';

async function withNft<R>(fn: (nft: Nftables, ns: TestNetns) => Promise<R>): Promise<R> {
  using ns = new TestNetns('nft');
  const nft = await Nftables.open({ netns: ns.path });
  try {
    return await fn(nft, ns);
  } finally {
    nft.close();
  }
}

type NftJson = { nftables: Record<string, Record<string, unknown>>[] };

function listJson(ns: TestNetns): Record<string, Record<string, unknown>[]> {
  const parsed = JSON.parse(ns.exec(['nft', '-j', 'list', 'ruleset'])) as NftJson;
  const byKind: Record<string, Record<string, unknown>[]> = {};
  for (const entry of parsed.nftables) {
    for (const [kind, value] of Object.entries(entry)) (byKind[kind] ??= []).push(value);
  }
  return byKind;
}

function hostProbeTx(nft: Nftables) {
  return nft
    .transaction()
    .addTable(T)
    .addSet({ family: 'inet', table: T.name, name: SET, type: 'ipv4_addr', comment: 'UUID of the pods that are part of ambient mesh' })
    .addChain({ family: 'inet', table: T.name, name: 'postrouting', type: 'nat', hook: 'postrouting', priority: 100 })
    .addChain({ family: 'inet', table: T.name, name: 'istio-output' })
    .addElement(T, SET, [{ address: '10.244.0.5', comment: 'pod-uid-a' }, { address: '10.244.0.6', comment: 'pod-uid-b' }]);
}

describePrivileged(
  'nftables on the kernel',
  () => {
    it('what podnet writes, nft -j list ruleset shows: table, base and regular chains, set with comment, element comments', async () => {
      await withNft(async (nft, ns) => {
        await nft.run(hostProbeTx(nft));
        const j = listJson(ns);
        expect(j.table).toEqual([expect.objectContaining({ family: 'inet', name: T.name })]);
        const chains = j.chain!.map((c) => ({ name: c.name, type: c.type, hook: c.hook, prio: c.prio, policy: c.policy }));
        expect(chains).toEqual(
          expect.arrayContaining([
            { name: 'postrouting', type: 'nat', hook: 'postrouting', prio: 100, policy: 'accept' },
            { name: 'istio-output', type: undefined, hook: undefined, prio: undefined, policy: undefined },
          ]),
        );
        expect(j.chain).toHaveLength(2);
        expect(j.set).toEqual([
          expect.objectContaining({
            family: 'inet',
            table: T.name,
            name: SET,
            type: 'ipv4_addr',
            comment: 'UUID of the pods that are part of ambient mesh',
            elem: expect.arrayContaining([
              { elem: { val: '10.244.0.5', comment: 'pod-uid-a' } },
              { elem: { val: '10.244.0.6', comment: 'pod-uid-b' } },
            ]),
          }),
        ]);
      });
    });

    it('what nft -f writes, podnet lists: tables of every family, chains, sets, element comments, rules raw', async () => {
      await withNft(async (nft, ns) => {
        ns.exec(['nft', '-f', '-'], [
          'add table inet t',
          'add table netdev nd',
          'add chain inet t pre { type filter hook prerouting priority -150 ; policy drop ; }',
          'add chain inet t reg { comment "a regular chain" ; }',
          'add set inet t s6 { type ipv6_addr ; flags interval ; comment "six" ; }',
          'add set inet t s4 { type ipv4_addr ; }',
          'add element inet t s4 { 192.0.2.1 comment "owner-1", 192.0.2.2 }',
          'add rule inet t pre ip saddr @s4 counter accept comment "first"',
          '',
        ].join('\n'));
        const tables = await nft.tables();
        expect(tables.map((t) => [t.family, t.name]).sort()).toEqual([['inet', 't'], ['netdev', 'nd']]);
        const t: NftTableRef = { family: 'inet', name: 't' };
        const chains = await nft.chains(t);
        expect(chains.map((c) => ({ name: c.name, type: c.type, hook: c.hook, priority: c.priority, policy: c.policy, comment: c.comment }))).toEqual(
          expect.arrayContaining([
            { name: 'pre', type: 'filter', hook: 'prerouting', priority: -150, policy: 'drop', comment: undefined },
            { name: 'reg', type: undefined, hook: undefined, priority: undefined, policy: undefined, comment: 'a regular chain' },
          ]),
        );
        const sets = await nft.sets(t);
        expect(sets.map((s) => ({ name: s.name, type: s.type, comment: s.comment, interval: (s.flags & 4) !== 0 })).sort((a, b) => a.name.localeCompare(b.name))).toEqual([
          { name: 's4', type: 'ipv4_addr', comment: undefined, interval: false },
          { name: 's6', type: 'ipv6_addr', comment: 'six', interval: true },
        ]);
        const elements = await nft.elements(t, 's4');
        expect(elements.sort((a, b) => a.address.localeCompare(b.address))).toEqual([
          { address: '192.0.2.1', comment: 'owner-1' },
          { address: '192.0.2.2', comment: undefined },
        ]);
        const rules = await nft.rules(t);
        expect(rules).toHaveLength(1);
        expect(rules[0]).toMatchObject({ table: 't', chain: 'pre', comment: 'first' });
        expect(rules[0]!.handle).toBeGreaterThan(0);
        expect(rules[0]!.exprs.length).toBeGreaterThan(0);
      });
    });

    it('a batch whose 3rd op fails leaves nothing of the first two, and its error names op 2', async () => {
      await withNft(async (nft, ns) => {
        const tx = nft
          .transaction()
          .addTable({ family: 'inet', name: 'a' })
          .addChain({ family: 'inet', table: 'a', name: 'c' })
          .addChain({ family: 'inet', table: 'missing', name: 'c' });
        const err = await nft.run(tx).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NftablesError);
        const e = err as NftablesError;
        expect(e.code).toBe('ENOENT');
        expect(e.errno).toBe(-2);
        expect(e.index).toBe(2);
        expect(e.object).toEqual({ family: 'inet', table: 'missing', name: 'c' });
        expect(e.operation).toBe('run');
        expect(e.netns).toBe(ns.path);
        expect(isNotFound(e)).toBe(true);
        expect(await nft.tables()).toEqual([]);
        expect(ns.exec(['nft', 'list', 'ruleset']).trim()).toBe('');
      });
    });

    it('element add is exclusive (EEXIST, nothing else of the batch applied); replace takes the new comment', async () => {
      await withNft(async (nft) => {
        await nft.run(hostProbeTx(nft));
        const err = await nft
          .addElement(T, SET, [{ address: '10.244.0.7', comment: 'pod-uid-c' }, { address: '10.244.0.5', comment: 'pod-uid-x' }])
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NftablesError);
        expect((err as NftablesError).code).toBe('EEXIST');
        expect((err as NftablesError).index).toBe(0);
        expect(isAlreadyExists(err)).toBe(true);
        expect(await nft.testElement(T, SET, '10.244.0.7')).toBeUndefined();
        expect(await nft.testElement(T, SET, '10.244.0.5')).toEqual({ address: '10.244.0.5', comment: 'pod-uid-a' });

        await nft.addElement(T, SET, { address: '10.244.0.5', comment: 'pod-uid-x' }, { replace: true });
        await nft.addElement(T, SET, { address: '10.244.0.8', comment: 'pod-uid-d' }, { replace: true });
        const listed = (await nft.elements(T, SET)).sort((a, b) => a.address.localeCompare(b.address));
        expect(listed).toEqual([
          { address: '10.244.0.5', comment: 'pod-uid-x' },
          { address: '10.244.0.6', comment: 'pod-uid-b' },
          { address: '10.244.0.8', comment: 'pod-uid-d' },
        ]);
      });
    });

    it('delete element: gone afterwards; a missing one is ENOENT', async () => {
      await withNft(async (nft) => {
        await nft.run(hostProbeTx(nft));
        await nft.deleteElement(T, SET, { address: '10.244.0.6' });
        expect(await nft.testElement(T, SET, '10.244.0.6')).toBeUndefined();
        const err = await nft.deleteElement(T, SET, { address: '10.244.0.6' }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NftablesError);
        expect(isNotFound(err)).toBe(true);
      });
    });

    it('IPv6 sets and elements, flush and delete table', async () => {
      await withNft(async (nft, ns) => {
        await nft.run(
          nft
            .transaction()
            .addTable(T)
            .addSet({ family: 'inet', table: T.name, name: 'v6', type: 'ipv6_addr' })
            .addElement(T, 'v6', [{ address: 'fd00::1', comment: 'six' }, { address: '2001:db8::a:0:0:1' }]),
        );
        expect((await nft.elements(T, 'v6')).sort((a, b) => a.address.localeCompare(b.address))).toEqual([
          { address: '2001:db8::a:0:0:1', comment: undefined },
          { address: 'fd00::1', comment: 'six' },
        ]);
        const j = listJson(ns);
        expect(j.set![0]!.elem).toEqual(expect.arrayContaining(['2001:db8::a:0:0:1', { elem: { val: 'fd00::1', comment: 'six' } }]));
        await nft.run(nft.transaction().flushTable(T).deleteTable(T));
        expect(await nft.tables()).toEqual([]);
      });
    });

    it('the longest names and comments the kernel and nft take pass; nft lists them', async () => {
      await withNft(async (nft, ns) => {
        const name = 'n'.repeat(255);
        const comment = 'c'.repeat(128);
        await nft.run(
          nft
            .transaction()
            .addTable({ family: 'inet', name })
            .addSet({ family: 'inet', table: name, name, type: 'ipv4_addr', comment })
            .addElement({ family: 'inet', name }, name, { address: '10.1.1.1', comment }),
        );
        expect(await nft.testElement({ family: 'inet', name }, name, '10.1.1.1')).toEqual({ address: '10.1.1.1', comment });
        const j = listJson(ns);
        expect(j.set![0]).toMatchObject({ name, comment, elem: [{ elem: { val: '10.1.1.1', comment } }] });
      });
    });

    it('a rule of 128 expressions that nft wrote and podnet listed is written back (its encoded size counted, not a bound)', async () => {
      await withNft(async (nft, ns) => {
        // 64 `meta mark 0x..` matches: 128 expressions (a meta load and a cmp each), about 5 KiB encoded.
        const matches = Array.from({ length: 64 }, (_, i) => `meta mark != 0x${(i + 1).toString(16)}`).join(' ');
        ns.exec(['nft', '-f', '-'], `table inet t {\n chain c {\n ${matches}\n }\n}\n`);
        const [listed] = await nft.rules({ family: 'inet', name: 't' });
        expect(listed!.exprs).toHaveLength(128);
        const written = listJson(ns).rule![0]!.expr;
        await nft.run(nft.transaction().flushChain({ family: 'inet', table: 't', name: 'c' }).addRule({ family: 'inet', table: 't', chain: 'c', exprs: listed!.exprs }));
        const [again] = await nft.rules({ family: 'inet', name: 't' });
        expect(again!.exprs).toEqual(listed!.exprs);
        expect(listJson(ns).rule![0]!.expr).toEqual(written);
      });
    });

    it('a rule podnet writes is one a listing returns whole: the largest it takes lists back, a larger one is refused', async () => {
      await withNft(async (nft) => {
        const T = { family: 'inet', name: 't' } as const;
        const target = 'j'.repeat(200);
        const rule = (n: number, name: string) => ({ family: 'inet' as const, table: 't', chain: 'c', exprs: Array.from({ length: n }, () => nftExpr.jump(name)).flat() });
        const small = { family: 'inet' as const, table: 't', chain: 'c', exprs: nftExpr.counter() };
        const big = rule(120, target);
        await nft.run(nft.transaction().addTable(T).addChain({ family: 'inet', table: 't', name: 'c' }).addChain({ family: 'inet', table: 't', name: target }).addRule(small).addRule(big).addRule(small));
        const listed = await nft.rules(T);
        expect(listed.filter((r) => r.chain === 'c').map((r) => r.exprs.length)).toEqual([small.exprs.length, 120, small.exprs.length]);
        // 127 jumps to a 255-byte chain name encode to about 39 KiB: the kernel takes it, but its dump could not hold it.
        const longer = 'k'.repeat(255);
        const err = await nft.run(nft.transaction().addChain({ family: 'inet', table: 't', name: longer }).addRule(rule(127, longer))).catch((e: unknown) => e);
        expect(err).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument: 'rule.exprs' });
        expect((await nft.rules(T)).filter((r) => r.chain === 'c')).toHaveLength(3);
      });
    });
  },
  missingBinary('nft'),
);
