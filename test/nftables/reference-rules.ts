// The reference agent's nftables rules (../shared/reference/nftables.md, as test/fixtures/nftables/inpod.nft and
// host-probes.nft hold them) built with podnet's rule API: the in-pod nat, mangle and raw tables (default config,
// IPv4) and the host's probe set with its SNAT rule.
import { nftExpr as x, type NftChainType, type NftHook, type NftRuleSpec, type NftTransaction } from '../../lib/index.js';

const inet = 'inet';
const PROBE = '169.254.7.127';
const LOCAL = '127.0.0.1/32';
const MARK_MASK = 0xfff;
const MARK = 0x539;
const CONNMARK = 0x111;

/** One of the reference's tables: flushed, its two base chains and the istio- chains they jump to, then rules. */
function table(tx: NftTransaction, name: string, type: NftChainType, priority: number, outputType: NftChainType, rules: [string, NftRuleSpec['exprs']][], jumpsFirst: 'output' | 'prerouting'): NftTransaction {
  const t = { family: inet, name } as const;
  tx.addTable(t).flushTable(t);
  for (const [hook, chainType] of [['prerouting', type], ['output', outputType]] as [NftHook, NftChainType][]) {
    tx.addChain({ family: inet, table: name, name: hook, type: chainType, hook, priority });
  }
  tx.addChain({ family: inet, table: name, name: 'istio-prerouting' }).addChain({ family: inet, table: name, name: 'istio-output' });
  const jumps: ['output' | 'prerouting', string][] = [['output', 'istio-output'], ['prerouting', 'istio-prerouting']];
  if (jumpsFirst === 'prerouting') jumps.reverse();
  for (const [from, to] of jumps) tx.addRule({ family: inet, table: name, chain: from, exprs: [x.jump(to)] });
  for (const [chain, exprs] of rules) tx.addRule({ family: inet, table: name, chain, exprs });
  return tx;
}

/** inpod.nft: the pod's three tables in one transaction. */
export function inpodTx(tx: NftTransaction): NftTransaction {
  const notOurs = x.mark(MARK, MARK_MASK, { not: true });
  table(tx, 'istio-ambient-nat', 'nat', -100, 'nat', [
    ['istio-prerouting', [x.l4proto('tcp'), x.addr('ip saddr', PROBE), x.counter(), x.accept()]],
    ['istio-output', [x.l4proto('tcp'), x.addr('ip daddr', PROBE), x.counter(), x.accept()]],
    ['istio-prerouting', [x.addr('ip daddr', LOCAL, { not: true }), x.port('tcp dport', 15008, { not: true }), notOurs, x.counter(), x.redirect(15006)]],
    ['istio-output', [x.oifname('lo', { not: true }), notOurs, x.port('udp dport', 53), x.counter(), x.redirect(15053)]],
    ['istio-output', [x.addr('ip daddr', LOCAL, { not: true }), x.port('tcp dport', 53), notOurs, x.counter(), x.redirect(15053)]],
    ['istio-output', [x.l4proto('tcp'), x.mark(CONNMARK, MARK_MASK), x.counter(), x.accept()]],
    ['istio-output', [x.oifname('lo'), x.addr('ip daddr', LOCAL, { not: true }), x.counter(), x.accept()]],
    ['istio-output', [x.l4proto('tcp'), x.addr('ip daddr', LOCAL, { not: true }), notOurs, x.counter(), x.redirect(15001)]],
  ], 'output');
  table(tx, 'istio-ambient-mangle', 'filter', -150, 'route', [
    ['istio-prerouting', [x.mark(MARK, MARK_MASK), x.counter(), x.setCtMark(0xfffff000, CONNMARK)]],
    ['istio-output', [x.ctMark(CONNMARK, MARK_MASK), x.counter(), x.setMarkFromCtMark()]],
  ], 'prerouting');
  return table(tx, 'istio-ambient-raw', 'filter', -300, 'filter', [
    ['istio-output', [x.port('udp dport', 53), x.mark(MARK, MARK_MASK), x.counter(), x.setCtZone(1)]],
    ['istio-prerouting', [x.port('udp sport', 53), notOurs, x.counter(), x.setCtZone(1)]],
  ], 'prerouting');
}

/** host-probes.nft: the host's probe set, its SNAT rule for the kubelet's uid, one pod's element. */
export function hostProbesTx(tx: NftTransaction): NftTransaction {
  const t = { family: inet, name: 'istio-ambient-nat' } as const;
  const set = 'istio-inpod-probes-v4';
  return tx
    .addTable(t)
    .addSet({ family: inet, table: t.name, name: set, type: 'ipv4_addr', comment: 'UUID of the pods that are part of ambient mesh' })
    .addChain({ family: inet, table: t.name, name: 'postrouting', type: 'nat', hook: 'postrouting', priority: 100 })
    .addRule({ family: inet, table: t.name, chain: 'postrouting', exprs: [x.l4proto('tcp'), x.skuid(1000), x.addrInSet('ip daddr', set), x.counter(), x.snat(PROBE)] })
    .addElement(t, set, { address: '10.244.0.5', comment: 'pod-uid' });
}
