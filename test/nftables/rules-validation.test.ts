// Bad rules are refused in JS before any byte is sent: a typed InvalidArgumentError naming the argument, kept by
// the transaction (its later ops are not taken), and the peer sees no request. Register limits are the kernel's
// (nft_parse_register, nft_validate_register_load/store): 0 is the verdict register, 1..4 hold 16 bytes each and
// 8..23 4 bytes each, and a value may not run past the 64 data bytes.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Nftables, nftExpr as x, type NftExpr, type NftTransaction } from '../../lib/index.js';
import { AckPeer } from './helpers/ack-peer.js';

const R = { family: 'inet', table: 't', chain: 'c' } as const;
const b = (n: number): Buffer => Buffer.alloc(n, 1);

async function refused(build: (tx: NftTransaction) => NftTransaction, argument: string): Promise<void> {
  const peer = new AckPeer();
  const nft = await Nftables.open({ netlink: peer });
  try {
    const tx = build(nft.transaction());
    const err = await nft.run(tx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).code).toMatch(/^ERR_INVALID_ARG_(VALUE|TYPE)$/);
    expect((err as InvalidArgumentError).argument).toBe(argument);
    expect(tx.error).toBe(err);
    expect(peer.requests).toHaveLength(0);
  } finally {
    nft.close();
  }
}

const badExprs: [string, unknown, string][] = [
  ['an unknown register', { type: 'payload', base: 'network', offset: 12, len: 4, dreg: 5 }, 'rule.exprs[0].dreg'],
  ['a register past the last', { type: 'cmp', sreg: 24, op: 'eq', data: b(4) }, 'rule.exprs[0].sreg'],
  ['the verdict register for data', { type: 'immediate', dreg: 0, data: b(4) }, 'rule.exprs[0].dreg'],
  ['a 16-byte load into register 4 plus one more', { type: 'payload', base: 'network', offset: 8, len: 17, dreg: 4 }, 'rule.exprs[0].dreg'],
  ['8 bytes into the last 4-byte register', { type: 'cmp', sreg: 23, op: 'eq', data: b(8) }, 'rule.exprs[0].sreg'],
  ['a payload longer than 64 bytes', { type: 'payload', base: 'network', offset: 0, len: 65, dreg: 1 }, 'rule.exprs[0].len'],
  ['a payload offset past 255', { type: 'payload', base: 'network', offset: 256, len: 4, dreg: 1 }, 'rule.exprs[0].offset'],
  ['an unknown payload base', { type: 'payload', base: 'ether', offset: 0, len: 4, dreg: 1 }, 'rule.exprs[0].base'],
  ['empty cmp data', { type: 'cmp', sreg: 1, op: 'eq', data: b(0) }, 'rule.exprs[0].data'],
  ['cmp data of 65 bytes', { type: 'cmp', sreg: 1, op: 'eq', data: b(65) }, 'rule.exprs[0].data'],
  ['cmp data as a string', { type: 'cmp', sreg: 1, op: 'eq', data: 'lo' }, 'rule.exprs[0].data'],
  ['an unknown cmp op', { type: 'cmp', sreg: 1, op: 'ne', data: b(4) }, 'rule.exprs[0].op'],
  ['a bitwise mask shorter than len', { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: b(2), xor: b(4) }, 'rule.exprs[0].mask'],
  ['a bitwise xor longer than len', { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: b(4), xor: b(8) }, 'rule.exprs[0].xor'],
  ['a bitwise op other than bool', { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: b(4), xor: b(4), op: 'lshift' }, 'rule.exprs[0].op'],
  ['a meta with both dreg and sreg', { type: 'meta', key: 'mark', dreg: 1, sreg: 1 }, 'rule.exprs[0].dreg'],
  ['a meta with neither', { type: 'meta', key: 'mark' }, 'rule.exprs[0].dreg'],
  ['an unknown meta key name', { type: 'meta', key: 'uid', dreg: 1 }, 'rule.exprs[0].key'],
  ['a ct set with a direction', { type: 'ct', key: 'mark', sreg: 1, direction: 'reply' }, 'rule.exprs[0].direction'],
  ['a lookup of a set name too long', { type: 'lookup', sreg: 1, set: 's'.repeat(256) }, 'rule.exprs[0].set'],
  ['a lookup with invert not a boolean', { type: 'lookup', sreg: 1, set: 's', invert: 1 }, 'rule.exprs[0].invert'],
  ['a verdict jump without a chain', { type: 'verdict', verdict: 'jump' }, 'rule.exprs[0].chain'],
  ['a verdict goto to an empty chain name', { type: 'verdict', verdict: 'goto', chain: '' }, 'rule.exprs[0].chain'],
  ['an accept with a chain', { type: 'verdict', verdict: 'accept', chain: 'c' }, 'rule.exprs[0].chain'],
  ['an unknown verdict', { type: 'verdict', verdict: 'reject' }, 'rule.exprs[0].verdict'],
  ['a negative counter', { type: 'counter', packets: -1 }, 'rule.exprs[0].packets'],
  ['a redirect with protoMax but no protoMin', { type: 'redirect', protoMax: 1 }, 'rule.exprs[0].protoMin'],
  ['a nat of an unknown kind', { type: 'nat', nat: 'masq', family: 'ip', addrMin: 1 }, 'rule.exprs[0].nat'],
  ['a nat of family inet', { type: 'nat', nat: 'snat', family: 'inet', addrMin: 1 }, 'rule.exprs[0].family'],
  ['a nat flags past 32 bits', { type: 'nat', nat: 'snat', family: 'ip', addrMin: 1, flags: 2 ** 32 }, 'rule.exprs[0].flags'],
  ['a raw expression without data', { type: 'raw', name: 'limit' }, 'rule.exprs[0].data'],
  ['an unknown expression type', { type: 'reject' }, 'rule.exprs[0].type'],
  ['not an object', 'counter', 'rule.exprs[0]'],
];

describe('nftables rule input checks', () => {
  it.each(badExprs)('%s', async (_name, expr, argument) => {
    await refused((tx) => tx.addRule({ ...R, exprs: [expr as NftExpr, ...x.accept()] }), argument);
  });

  it('the place of a bad expression in nested helper arrays is named', async () => {
    await refused((tx) => tx.addRule({ ...R, exprs: [x.counter(), [x.accept()[0]!, { type: 'verdict', verdict: 'jump' } as NftExpr]] }), 'rule.exprs[1][1].chain');
  });

  it('no expressions, more than 128, no array', async () => {
    await refused((tx) => tx.addRule({ ...R, exprs: [] }), 'rule.exprs');
    await refused((tx) => tx.addRule({ ...R, exprs: Array.from({ length: 129 }, () => x.counter()).flat() }), 'rule.exprs');
    await refused((tx) => tx.addRule({ ...R, exprs: x.counter()[0] as never }), 'rule.exprs');
  });

  it('bad rule places, comments, positions and handles', async () => {
    await refused((tx) => tx.addRule({ ...R, chain: '', exprs: x.accept() }), 'rule.chain');
    await refused((tx) => tx.addRule({ ...R, family: 'ipv4' as never, exprs: x.accept() }), 'rule.family');
    await refused((tx) => tx.addRule({ ...R, exprs: x.accept(), comment: 'c'.repeat(129) }), 'rule.comment');
    await refused((tx) => tx.addRule({ ...R, exprs: x.accept() }, { after: 0 }), 'options.after');
    await refused((tx) => tx.insertRule({ ...R, exprs: x.accept() }, { before: 1.5 }), 'options.before');
    await refused((tx) => tx.deleteRule({ ...R, handle: undefined as never }), 'rule.handle');
    await refused((tx) => tx.deleteRule({ ...R, handle: 2 ** 53 }), 'rule.handle');
    await refused((tx) => tx.flushChain({ family: 'inet', table: 't', name: 'x'.repeat(256) }), 'chain.name');
  });

  it('the helpers check their arguments', async () => {
    const cases: [() => unknown, string][] = [
      [() => x.port('tcp dport', 70000), 'port'],
      [() => x.port('sctp dport' as never, 80), 'field'],
      [() => x.addr('ip saddr', '::1'), 'address'],
      [() => x.addr('ip saddr', '10.0.0.0/33'), 'address'],
      [() => x.addr('ip6 daddr', 'fe80::/0'), 'address'],
      [() => x.iifname('a-name-of-16-byte'), 'name'],
      [() => x.l4proto('gre' as never), 'proto'],
      [() => x.mark(-1), 'value'],
      [() => x.ctState([]), 'states'],
      [() => x.ctState(['old' as never]), 'states[0]'],
      [() => x.redirect(0), 'port'],
      [() => x.snat('10.0.0'), 'address'],
      [() => x.setCtZone(65536), 'zone'],
      [() => x.l4proto('tcp', { not: 'yes' as never }), 'options.not'],
    ];
    for (const [call, argument] of cases) {
      let err: unknown;
      try {
        call();
      } catch (e) {
        err = e;
      }
      expect(err, argument).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).argument).toBe(argument);
    }
  });

  it('a bad rule keeps the first error and the ops after it are not taken', async () => {
    const peer = new AckPeer();
    const nft = await Nftables.open({ netlink: peer });
    try {
      const tx = nft.transaction().addTable({ family: 'inet', name: 't' }).addRule({ ...R, exprs: [{ type: 'verdict', verdict: 'jump' }] as never }).addRule({ ...R, exprs: [{ type: 'bogus' }] as never });
      expect(tx.size).toBe(1);
      expect(tx.error?.argument).toBe('rule.exprs[0].chain');
      await expect(nft.run(tx)).rejects.toBe(tx.error);
      expect(peer.requests).toHaveLength(0);
    } finally {
      nft.close();
    }
  });
});
