// Rules on the kernel, in fresh namespaces: what podnet writes `nft -j list ruleset` shows exactly as it shows the
// same rules written by `nft -f` (test/fixtures/nftables/rules.nft); what `nft -f` writes podnet lists as the
// expressions its own rule API builds; a listing with expressions podnet does not model keeps them raw and can be
// written back; positions, inserts, deletes and flushes land where nft puts them; refusals change nothing.
import { join } from 'node:path';
import { expect, it } from 'vitest';

import { Nftables, NftablesError, isNotFound, nftExpr as x, type NftExpr, type NftRule } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { RULES, fam, objectsTx, positionsTx, rulesTx, table } from './rule-batches.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures', 'nftables');
const T = { family: fam, name: table } as const;

type Json = Record<string, unknown>;

/** `nft -j list ruleset` without its metainfo entry. */
function rulesetJson(ns: TestNetns): Json[] {
  const parsed = JSON.parse(ns.exec(['nft', '-j', 'list', 'ruleset'])) as { nftables: Json[] };
  return parsed.nftables.filter((e) => !('metainfo' in e));
}

function jsonRules(ns: TestNetns): Json[] {
  return rulesetJson(ns).flatMap((e) => ('rule' in e ? [e.rule as Json] : []));
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

/**
 * What a written rule lists as: counters with what they counted, bitwise without its explicit op, nat and redirect
 * to one address or port with the range the kernel makes of it (max = min; for addresses NF_NAT_RANGE_MAP_IPS).
 */
function asListed(exprs: NftExpr[]): NftExpr[] {
  return exprs.map((e) => {
    if (e.type === 'counter') return { type: 'counter', packets: 0, bytes: 0 };
    if (e.type === 'nat' && e.addrMin !== undefined && e.addrMax === undefined) return { ...e, addrMax: e.addrMin, flags: (e.flags ?? 0) | 1 };
    if (e.type === 'redirect' && e.protoMin !== undefined && e.protoMax === undefined) return { ...e, protoMax: e.protoMin };
    if (e.type === 'bitwise') {
      const { op: _op, ...rest } = e;
      return { ...rest, mask: Buffer.from(e.mask), xor: Buffer.from(e.xor) };
    }
    if ('data' in e) return { ...e, data: Buffer.from(e.data) };
    return e;
  });
}

function byChain(rules: NftRule[], chain: string): NftRule[] {
  return rules.filter((r) => r.chain === chain);
}

describePrivileged(
  'nftables rules on the kernel',
  () => {
    it('nft -j list ruleset shows podnet-written rules exactly as the same rules written by nft -f', async () => {
      using theirs = new TestNetns('nftrref');
      theirs.exec(['nft', '-f', join(fixtures, 'rules.nft')]);
      await withNft('nftrk', async (nft, ns) => {
        await nft.run(rulesTx(nft.transaction()));
        const ours = rulesetJson(ns);
        expect(ours).toEqual(rulesetJson(theirs));
        // And the JSON says what the rules are about, read as nft reads it.
        const rules = jsonRules(ns);
        expect(rules).toHaveLength(RULES.length);
        const dns = rules.find((r) => r.comment === 'dns')!;
        expect(dns.expr).toEqual([
          { match: { op: '!=', left: { meta: { key: 'oifname' } }, right: 'lo' } },
          { match: { op: '==', left: { payload: { protocol: 'udp', field: 'dport' } }, right: 53 } },
          { counter: { packets: 0, bytes: 0 } },
          { redirect: { port: 15053 } },
        ]);
        const snat = rules.find((r) => JSON.stringify(r.expr).includes('snat'))!;
        expect(snat.expr).toEqual([
          { match: { op: '==', left: { meta: { key: 'l4proto' } }, right: 'tcp' } },
          { match: { op: '==', left: { meta: { key: 'skuid' } }, right: 1000 } },
          { match: { op: '==', left: { payload: { protocol: 'ip', field: 'daddr' } }, right: '@probes' } },
          { counter: { packets: 0, bytes: 0 } },
          { snat: { family: 'ip', addr: '169.254.7.127' } },
        ]);
      });
    });

    it('rules written by nft -f are listed by podnet with the expressions its rule API builds, handles and comments', async () => {
      await withNft('nftrl', async (nft, ns) => {
        ns.exec(['nft', '-f', join(fixtures, 'rules.nft')]);
        const listed = await nft.rules(T);
        const order = ['pre', 'post', 'reg', 'reg2'];
        const expected = order.flatMap((chain) => RULES.filter((r) => r.chain === chain));
        expect(listed.map((r) => r.chain)).toEqual(expected.map((r) => r.chain));
        listed.forEach((r, i) => {
          expect(r.exprs, `rule ${r.handle} of ${r.chain}`).toEqual(asListed(expected[i]!.exprs.flat()));
          expect(r.comment).toBe(expected[i]!.comment);
          expect(r.family).toBe('inet');
          expect(r.table).toBe(table);
        });
        // Handles as `nft -a` gives them: chains and the set take 1..5, the rules 6.. in file order.
        expect(byChain(listed, 'pre').map((r) => r.handle)).toEqual([6, 16, 17, 18, 19]);
        expect(listed.every((r) => r.exprs.every((e) => e.type !== 'raw'))).toBe(true);
      });
    });

    it('positions, inserts, deletes by handle and flush chain land where nft puts them', async () => {
      using theirs = new TestNetns('nftrpref');
      theirs.exec(['nft', '-f', join(fixtures, 'rules.nft')]);
      theirs.exec(['nft', '-f', join(fixtures, 'rules-positions.nft')]);
      await withNft('nftrp', async (nft, ns) => {
        await nft.run(rulesTx(nft.transaction()));
        await nft.run(positionsTx(nft.transaction()));
        expect(rulesetJson(ns)).toEqual(rulesetJson(theirs));
        const reg = byChain(await nft.rules(T), 'reg');
        expect(reg.map((r) => r.handle)).toEqual([22, 7, 20, 21, 8, 9, 11, 12]);
        expect(reg[2]!.comment).toBe('after');
        expect(byChain(await nft.rules(T), 'reg2')).toEqual([]);
      });
    });

    it('expressions podnet does not model are listed raw, never break the listing, and are written back unchanged', async () => {
      await withNft('nftrraw', async (nft, ns) => {
        ns.exec(['nft', 'add table inet t2; add chain inet t2 c; add rule inet t2 c limit rate 10/second log prefix "x" tcp dport set 80 accept comment "odd"']);
        const [rule] = await nft.rules(T);
        const types = rule!.exprs.map((e) => (e.type === 'raw' ? `raw:${e.name}` : e.type));
        // `tcp dport set` is a payload write: the AST has no field for it.
        expect(types).toEqual(['raw:limit', 'raw:log', 'meta', 'cmp', 'immediate', 'raw:payload', 'verdict']);
        const before = jsonRules(ns);
        await nft.run(nft.transaction().flushChain({ family: fam, table, name: 'c' }).addRule({ family: fam, table, chain: 'c', exprs: rule!.exprs, comment: rule!.comment }));
        const after = jsonRules(ns);
        expect(after.map(({ handle: _h, ...r }) => r)).toEqual(before.map(({ handle: _h, ...r }) => r));
      });
    });

    it('a rule jumping to a missing chain fails the whole batch with ENOENT naming that op, and nothing is applied', async () => {
      await withNft('nftrerr', async (nft, ns) => {
        const tx = objectsTx(nft.transaction())
          .addRule({ family: fam, table, chain: 'reg', exprs: [x.counter(), x.accept()] })
          .addRule({ family: fam, table, chain: 'reg', exprs: [x.jump('missing')] });
        const err = await nft.run(tx).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(NftablesError);
        expect(isNotFound(err)).toBe(true);
        expect((err as NftablesError).index).toBe(7);
        expect((err as NftablesError).object).toEqual({ family: fam, table, chain: 'reg', exprs: [x.jump('missing')] });
        expect(rulesetJson(ns)).toEqual([]);
      });
    });

    it('deleting a missing handle is ENOENT and leaves the chain as it was', async () => {
      await withNft('nftrdel', async (nft, ns) => {
        await nft.run(rulesTx(nft.transaction()));
        const before = rulesetJson(ns);
        const err = await nft.run(nft.transaction().deleteRule({ family: fam, table, chain: 'reg', handle: 9 }).deleteRule({ family: fam, table, chain: 'reg', handle: 999 })).catch((e: unknown) => e);
        expect(isNotFound(err)).toBe(true);
        expect((err as NftablesError).index).toBe(1);
        expect(rulesetJson(ns)).toEqual(before);
      });
    });
  },
  missingBinary('nft'),
);
