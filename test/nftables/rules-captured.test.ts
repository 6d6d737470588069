// Rule dumps captured from the kernel (test/fixtures/nftables/rule-replies.hex, by capture-rules.py in a throwaway
// namespace) decoded without root: the reference agent's rules and rules.nft list with the expressions podnet's
// rule API builds, and the chain of expressions podnet does not model lists them raw without breaking.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { Nftables, type NetlinkPeer, type NftExpr, type NftTableRef } from '../../lib/index.js';
import { RULES } from './rule-batches.js';

const steps = new Map<string, Buffer[]>();
{
  let label = '';
  for (const line of readFileSync(join(import.meta.dirname, '..', 'fixtures', 'nftables', 'rule-replies.hex'), 'utf8').split('\n')) {
    const [kind, ...rest] = line.split(' ');
    if (kind === 'step') steps.set((label = rest.join(' ')), []);
    else if (kind === 'reply') steps.get(label)!.push(Buffer.from(rest[0]!, 'hex'));
  }
}

/** Answers the next dump with a captured step's datagrams, their seqs set to the request's. */
class ReplayPeer implements NetlinkPeer {
  constructor(private readonly replies: Buffer[]) {}
  exchange(request: Uint8Array): Uint8Array[] {
    const seq = Buffer.from(request).readUInt32LE(8);
    return this.replies.map((d) => {
      const out = Buffer.from(d);
      for (let off = 0; off + 16 <= out.length; off += (out.readUInt32LE(off) + 3) & ~3) {
        out.writeUInt32LE(seq, off + 8);
        out.writeUInt32LE(0, off + 12);
      }
      return out;
    });
  }
}

async function listed(step: string, table: NftTableRef) {
  const replies = steps.get(step);
  expect(replies, step).toBeDefined();
  const nft = await Nftables.open({ netlink: new ReplayPeer(replies!) });
  try {
    return await nft.rules(table);
  } finally {
    nft.close();
  }
}

function written(exprs: NftExpr[]): NftExpr[] {
  return exprs.map((e) => {
    if (e.type === 'counter') return { type: 'counter', packets: 0, bytes: 0 };
    if (e.type === 'bitwise') {
      const { op: _op, ...rest } = e;
      return { ...rest, mask: Buffer.from(e.mask), xor: Buffer.from(e.xor) };
    }
    if (e.type === 'nat' && e.addrMax === undefined) return { ...e, addrMax: e.addrMin!, flags: 1 };
    if (e.type === 'redirect' && e.protoMax === undefined) return { ...e, protoMax: e.protoMin! };
    if ('data' in e) return { ...e, data: Buffer.from(e.data) };
    return e;
  });
}

describe('captured rule dumps', () => {
  it('rules.nft as the kernel dumps it lists with the expressions podnet builds for it', async () => {
    const rules = await listed('rules inet t2', { family: 'inet', name: 't2' });
    const order = ['pre', 'post', 'reg', 'reg2'];
    const expected = order.flatMap((chain) => RULES.filter((r) => r.chain === chain));
    expect(rules.map((r) => [r.chain, r.comment])).toEqual(expected.map((r) => [r.chain, r.comment]));
    rules.forEach((r, i) => expect(r.exprs).toEqual(written(expected[i]!.exprs.flat())));
  });

  it('every captured dump decodes: the whole ruleset, one family, the reference tables', async () => {
    const all = await listed('rules all', { family: 'inet', name: 'x' });
    expect(all.length).toBeGreaterThanOrEqual(14 + 18 + 1 + 4);
    const nat = await listed('rules inet istio-ambient-nat', { family: 'inet', name: 'istio-ambient-nat' });
    expect(nat.map((r) => r.chain)).toContain('postrouting');
    expect(nat.flatMap((r) => r.exprs).filter((e) => e.type === 'raw')).toEqual([]);
  });

  it('expressions podnet does not model list raw, the rest of their rules decoded', async () => {
    const rules = await listed('rules ip raw', { family: 'ip', name: 'raw' });
    const kinds = rules.map((r) => r.exprs.map((e) => (e.type === 'raw' ? `raw:${e.name}` : e.type)));
    expect(kinds).toEqual([
      ['raw:limit', 'raw:log', 'meta', 'cmp', 'immediate', 'raw:payload', 'raw:quota', 'verdict'],
      ['meta', 'raw:bitwise', 'meta'],
      ['payload', 'raw:lookup', 'nat'],
      ['ct', 'cmp', 'counter'],
    ]);
    expect(rules[0]!.comment).toBe('odd');
    // ct keys podnet does not name stay numbers (NFT_CT_SRC_IP 19), with their direction.
    expect(rules[3]!.exprs[0]).toEqual({ type: 'ct', key: 19, dreg: 1, direction: 'original' });
  });
});
