// A rule's expressions go in one attribute whose length is 16 bits. podnet clears most rules with an upper bound of
// each expression's encoding and counts the real encoded size of a rule past that bound: a rule of 128 small
// expressions (as nft writes and podnet lists) is taken; one whose encoding passes what a dump datagram can hold
// (31744 bytes for the expressions) is refused before sending.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Nftables, nftExpr, type NftExpr } from '../../lib/index.js';
import { FakeNftables } from '../../lib/testing/index.js';

const T = { family: 'inet', name: 't' } as const;

describe('the encoded size of a rule', () => {
  it('takes 128 expressions whose bound passes the limit but whose encoding does not, and refuses a rule that does not fit', async () => {
    const fake = new FakeNftables();
    const nft = await Nftables.open({ netlink: fake });
    try {
      const exprs: NftExpr[] = Array.from({ length: 64 }, (_, i) => nftExpr.mark(i + 1, undefined, { not: true })).flat();
      expect(exprs).toHaveLength(128);
      await nft.run(nft.transaction().addTable(T).addChain({ family: 'inet', table: 't', name: 'c' }).addRule({ family: 'inet', table: 't', chain: 'c', exprs }));
      const [listed] = await nft.rules(T);
      expect(listed!.exprs).toEqual(exprs);
      const big = { type: 'raw', name: 'counter', data: new Uint8Array(600) } as const;
      const err = await nft.run(nft.transaction().addRule({ family: 'inet', table: 't', chain: 'c', exprs: Array.from({ length: 60 }, () => big) })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ argument: 'rule.exprs' });
      expect(await nft.rules(T)).toHaveLength(1);
    } finally {
      nft.close();
    }
  });
});
