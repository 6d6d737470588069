// The rule codec against itself, without root: every rule of rules.nft written and listed back (through a peer
// that answers the dump with the NEWRULE messages podnet sent) gives the same expressions; raw expressions and
// known ones in forms the AST has no field for come back raw with their bytes; a broken expression list is a
// malformed reply (EBADMSG), never a silent stop, while a known attribute of an unexpected size only makes its
// expression raw.
import { describe, expect, it } from 'vitest';

import { Nftables, PodnetSystemError, type NftExpr, type NftRule } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { RuleDumpPeer } from './helpers/rule-dump-peer.js';
import { RULES, fam, table } from './rule-batches.js';

const T = { family: fam, name: table } as const;

/** Counters list what they counted; an explicit bitwise op is the kernel's default and lists as nothing. */
function asListed(exprs: NftExpr[]): NftExpr[] {
  return exprs.map((e) => {
    if (e.type === 'counter') return { type: 'counter', packets: e.packets ?? 0, bytes: e.bytes ?? 0 };
    if (e.type === 'bitwise') {
      const { op: _op, ...rest } = e;
      return { ...rest, mask: Buffer.from(e.mask), xor: Buffer.from(e.xor) };
    }
    if ('data' in e) return { ...e, data: Buffer.from(e.data) };
    return e;
  });
}

async function roundTrip(exprs: NftExpr[], comment?: string): Promise<NftRule> {
  const peer = new RuleDumpPeer();
  const nft = await Nftables.open({ netlink: peer });
  try {
    await nft.run(nft.transaction().addRule(comment === undefined ? { family: fam, table, chain: 'c', exprs } : { family: fam, table, chain: 'c', exprs, comment }));
    const [rule, ...rest] = await nft.rules(T);
    expect(rest).toEqual([]);
    return rule!;
  } finally {
    nft.close();
  }
}

async function listPayload(payload: Buffer): Promise<NftRule[]> {
  const peer = new RuleDumpPeer();
  peer.rules = [payload];
  const nft = await Nftables.open({ netlink: peer });
  try {
    return await nft.rules(T);
  } finally {
    nft.close();
  }
}

// Netlink attribute builders for hand-made dumps.
function attr(type: number, data: Buffer, nested = false): Buffer {
  const len = 4 + data.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type | (nested ? 0x8000 : 0), 2);
  data.copy(out, 4);
  return out;
}
const str = (type: number, s: string): Buffer => attr(type, Buffer.from(`${s}\0`));
const be32 = (type: number, v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return attr(type, b);
};
/** A NEWRULE payload of table t2, chain c, with this NFTA_RULE_EXPRESSIONS payload. */
function rulePayload(exprs: Buffer): Buffer {
  return Buffer.concat([Buffer.from([1, 0, 0, 0]), str(1, table), str(2, 'c'), attr(4, exprs, true)]);
}
/** One NFTA_LIST_ELEM: name and data. */
function expr(name: string, data: Buffer[]): Buffer {
  return attr(1, Buffer.concat([str(1, name), attr(2, Buffer.concat(data), true)]), true);
}

describe('nftables rule codec round trip', () => {
  it.each(RULES.map((r, i) => [i, r] as const))('rule %i of rules.nft lists back as written', async (_i, r) => {
    const listed = await roundTrip(r.exprs.flat(), r.comment);
    expect(listed.exprs).toEqual(asListed(r.exprs.flat()));
    expect(listed.comment).toBe(r.comment);
    expect(listed.handle).toBe(1);
  });

  it('a raw expression goes out and comes back byte for byte', async () => {
    // limit: rate 10, unit 1 s, burst 5, type pkts, flags 0.
    const data = Buffer.concat([attr(1, Buffer.from('000000000000000a', 'hex')), attr(2, Buffer.from('0000000000000001', 'hex')), be32(3, 5), be32(4, 0), be32(5, 0)]);
    const listed = await roundTrip([{ type: 'raw', name: 'limit', data }, { type: 'verdict', verdict: 'accept' }]);
    expect(listed.exprs).toEqual([{ type: 'raw', name: 'limit', data }, { type: 'verdict', verdict: 'accept' }]);
  });

  it('known expressions in forms the AST has no field for are listed raw with their attributes', async () => {
    const cases: [string, Buffer[]][] = [
      ['payload', [be32(5, 1), be32(2, 2), be32(3, 2), be32(4, 2), be32(6, 1), be32(7, 16)]], // a payload write with checksum
      ['lookup', [be32(2, 1), str(1, 'm'), be32(3, 1)]], // a map lookup (dreg)
      ['bitwise', [be32(1, 1), be32(2, 1), be32(6, 1), be32(3, 4), attr(7, be32(1, 8), true)]], // a shift
      ['immediate', [be32(1, 0), attr(2, attr(2, Buffer.concat([be32(1, -3), be32(3, 7)]), true), true)]], // jump by chain id
      ['meta', [attr(2, Buffer.from([3, 0])), be32(1, 1)]], // a key of 2 bytes
      ['ct', [be32(2, 3), be32(1, 1), be32(99, 0)]], // an attribute podnet does not know
      ['socket', [be32(1, 0), be32(2, 1)]], // an expression podnet does not decode
      ['payload', [be32(1, 1), be32(2, 4), be32(3, 0), be32(4, 4)]], // a base the AST has no name for
      ['cmp', [be32(1, 1), be32(2, 6), attr(3, attr(1, Buffer.from([1])), true)]], // an op the AST has no name for
      ['lookup', [str(1, 's'), be32(2, 1), be32(5, 2)]], // a flag other than invert
      ['ct', [be32(2, 3), be32(4, 1), attr(3, Buffer.from([0]))]], // a direction on a ct set
      ['nat', [be32(1, 0), be32(2, 7)]], // a family the AST has no name for
      ['immediate', [be32(1, 0), attr(2, attr(2, be32(1, -2), true), true)]], // a verdict (break) the AST has no name for
    ];
    const listed = await listPayload(rulePayload(Buffer.concat(cases.map(([name, data]) => expr(name, data)))));
    expect(listed).toHaveLength(1);
    expect(listed[0]!.exprs).toEqual(cases.map(([name, data]) => ({ type: 'raw', name, data: Buffer.concat(data) })));
  });

  it('an expression crosses from the addon in one form: fields when the AST holds it, else its bytes; no rule bytes beside', async () => {
    const peer = new RuleDumpPeer();
    peer.rules = [rulePayload(Buffer.concat([expr('counter', [attr(1, Buffer.alloc(8)), attr(2, Buffer.alloc(8))]), expr('socket', [be32(1, 0), be32(2, 1)])]))];
    const handle = new native.NftablesHandle(-1, 5000, (req) => peer.exchange(req));
    try {
      const { objects } = await handle.rules(1, table); // NFPROTO_INET
      expect(objects).toHaveLength(1);
      expect(Object.keys(objects[0]!)).not.toContain('expressions');
      expect(objects[0]!.exprs).toEqual([
        { name: 'counter', fields: { bytes: 0, packets: 0 } },
        { name: 'socket', data: Buffer.concat([be32(1, 0), be32(2, 1)]) },
      ]);
    } finally {
      handle.close();
    }
  });

  it.each([
    ['a truncated expression list', Buffer.from([8, 0, 1, 0x80, 4, 0])],
    ['an item that is not NFTA_LIST_ELEM', attr(2, str(1, 'counter'), true)],
    ['an expression without a name', attr(1, attr(2, Buffer.alloc(0), true), true)],
    ['an expression name without NUL', attr(1, attr(1, Buffer.from('counter')), true)],
  ])('%s is a malformed reply (EBADMSG)', async (_name, exprs) => {
    const err = await listPayload(rulePayload(exprs)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'EBADMSG' });
  });

  it('a rule comment is user data type 0; other user data is no comment', async () => {
    const udata = (bytes: number[]): Buffer => attr(7, Buffer.from(bytes));
    const base = rulePayload(expr('counter', []));
    const [withComment] = await listPayload(Buffer.concat([base, udata([0, 3, 0x68, 0x69, 0])]));
    expect(withComment!.comment).toBe('hi');
    const [other] = await listPayload(Buffer.concat([base, udata([5, 1, 0])]));
    expect(other!.comment).toBeUndefined();
  });
});
