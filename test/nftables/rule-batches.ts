// The rules of test/fixtures/nftables/rules.nft and rules-positions.nft built with podnet's rule API, for the
// golden-byte and kernel tests: the reference agent's in-pod and host rules plus one of every expression kind.
import { nftExpr as x, type NftRuleSpec, type NftTransaction } from '../../lib/index.js';

export const fam = 'inet';
export const table = 't2';

function rule(chain: string, exprs: NftRuleSpec['exprs'], comment?: string): NftRuleSpec {
  return comment === undefined ? { family: fam, table, chain, exprs } : { family: fam, table, chain, exprs, comment };
}

/** The rules of rules.nft in order (handles 6 to 19 in a fresh namespace, after 4 chains and the set). */
export const RULES: NftRuleSpec[] = [
  rule('pre', [x.jump('reg')]),
  rule('reg', [x.l4proto('tcp'), x.addr('ip saddr', '169.254.7.127'), x.counter(), x.accept()]),
  rule('reg', [
    x.addr('ip daddr', '127.0.0.1/32', { not: true }),
    x.port('tcp dport', 15008, { not: true }),
    x.mark(0x539, 0xfff, { not: true }),
    x.counter(),
    x.redirect(15006),
  ]),
  rule('reg', [x.oifname('lo', { not: true }), x.port('udp dport', 53), x.counter(), x.redirect(15053)], 'dns'),
  rule('reg', [x.addr('ip6 daddr', '::1'), x.port('udp sport', 53), x.drop()]),
  rule('reg', [x.iifname('eth0'), x.nfproto('ipv4'), x.return()]),
  rule('reg', [x.addrInSet('ip saddr', 'probes', { not: true }), x.goto('reg2')]),
  rule('post', [x.l4proto('tcp'), x.skuid(1000), x.addrInSet('ip daddr', 'probes'), x.counter(), x.snat('169.254.7.127')]),
  rule('post', [x.ctState(['established', 'related']), x.accept()]),
  rule('post', [x.addr('ip saddr', '10.0.0.0/12'), x.masquerade()]),
  rule('pre', [x.mark(0x539, 0xfff), x.counter(), x.setCtMark(0xfffff000, 0x111)]),
  rule('pre', [x.ctMark(0x111, 0xfff), x.counter(), x.setMarkFromCtMark()]),
  rule('pre', [x.port('udp dport', 53), x.counter(), x.setCtZone(1)]),
  rule('pre', [x.setMark(0x539)]),
];

/** rules.nft's tables, chains and set. */
export function objectsTx(tx: NftTransaction): NftTransaction {
  return tx
    .addTable({ family: fam, name: table })
    .addChain({ family: fam, table, name: 'pre', type: 'nat', hook: 'prerouting', priority: -100 })
    .addChain({ family: fam, table, name: 'post', type: 'nat', hook: 'postrouting', priority: 100 })
    .addChain({ family: fam, table, name: 'reg' })
    .addChain({ family: fam, table, name: 'reg2' })
    .addSet({ family: fam, table, name: 'probes', type: 'ipv4_addr' });
}

/** rules.nft, statement by statement. */
export function rulesTx(tx: NftTransaction): NftTransaction {
  return RULES.reduce((t, r) => t.addRule(r), objectsTx(tx));
}

/** rules-positions.nft, on top of rules.nft (whose rules have handles 6 to 19 in a fresh namespace). */
export function positionsTx(tx: NftTransaction): NftTransaction {
  return tx
    .addRule(rule('reg', [x.counter()], 'after'), { after: 7 })
    .insertRule(rule('reg', [x.drop()]), { before: 8 })
    .insertRule(rule('reg', [x.accept()]))
    .deleteRule({ family: fam, table, chain: 'reg', handle: 10 })
    .flushChain({ family: fam, table, name: 'reg2' });
}
