// Bad input is refused in JS before any byte is sent (the peer sees no request), the transaction keeps its first
// error, and a closed client refuses work. Limits: names NFT_NAME_MAXLEN - 1 = 255 bytes (nf_tables.h), comments
// 128 bytes (nft's NFTNL_UDATA_COMMENT_MAXLEN); the kernel test shows both limits pass on the kernel and in nft.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Nftables, NftablesError, isAlreadyExists, type NftTransaction } from '../../lib/index.js';
import { AckPeer } from './helpers/ack-peer.js';

const T = { family: 'inet', name: 't' } as const;

async function refused(build: (tx: NftTransaction) => NftTransaction, argument: string): Promise<void> {
  const peer = new AckPeer();
  const nft = await Nftables.open({ netlink: peer });
  try {
    const tx = build(nft.transaction());
    const err = await nft.run(tx).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).argument).toBe(argument);
    expect(tx.error).toBe(err);
    expect(peer.requests).toHaveLength(0);
  } finally {
    nft.close();
  }
}

describe('nftables input checks', () => {
  it('names longer than 255 bytes, empty or with NUL', async () => {
    await refused((tx) => tx.addTable({ family: 'inet', name: 'x'.repeat(256) }), 'table.name');
    await refused((tx) => tx.addTable({ family: 'inet', name: '' }), 'table.name');
    await refused((tx) => tx.addChain({ family: 'inet', table: 't', name: 'a\0b' }), 'chain.name');
    await refused((tx) => tx.addSet({ family: 'inet', table: 't'.repeat(256), name: 's', type: 'ipv4_addr' }), 'set.table');
  });

  it('options a call does not know (a misspelling is refused, not taken as the default) and addresses with a zone', async () => {
    const rule = { family: 'inet' as const, table: 't', chain: 'c', exprs: [] };
    await refused((tx) => tx.addElement(T, 's', { address: '10.0.0.1' }, { replce: true } as never), 'options.replce');
    await refused((tx) => tx.insertRule(rule, { after: 3 } as never), 'options.after');
    await refused((tx) => tx.addRule(rule, { before: 3 } as never), 'options.before');
    await refused((tx) => tx.addTable(T, { exclusive: true, force: true } as never), 'options.force');
    await refused((tx) => tx.addElement(T, 's', { address: 'fe80::1%eth0' }), 'elements.address');
  });

  it('a rule whose expressions do not fit in one 64 KiB attribute', async () => {
    const big = { type: 'raw', name: 'counter', data: new Uint8Array(40000) } as const;
    await refused((tx) => tx.addRule({ family: 'inet', table: 't', chain: 'c', exprs: [big, big] }), 'rule.exprs');
  });

  it('comments longer than 128 bytes (multi-byte characters counted in bytes)', async () => {
    await refused((tx) => tx.addSet({ family: 'inet', table: 't', name: 's', type: 'ipv4_addr', comment: 'c'.repeat(129) }), 'set.comment');
    await refused((tx) => tx.addElement(T, 's', { address: '10.0.0.1', comment: 'é'.repeat(65) }), 'elements.comment');
  });

  it('bad families, chain specs, set types and flags', async () => {
    await refused((tx) => tx.addTable({ family: 'ipv4' as never, name: 't' }), 'table.family');
    await refused((tx) => tx.addChain({ family: 'inet', table: 't', name: 'c', hook: 'input', priority: 0 }), 'chain.type');
    await refused((tx) => tx.addChain({ family: 'inet', table: 't', name: 'c', type: 'nat', priority: 0 }), 'chain.hook');
    await refused((tx) => tx.addChain({ family: 'inet', table: 't', name: 'c', type: 'nat', hook: 'output', priority: 2 ** 31 }), 'chain.priority');
    await refused((tx) => tx.addChain({ family: 'inet', table: 't', name: 'c', type: 'nat', hook: 'output', priority: 0, policy: 'reject' as never }), 'chain.policy');
    await refused((tx) => tx.addSet({ family: 'inet', table: 't', name: 's', type: 'ether_addr' as never }), 'set.type');
    await refused((tx) => tx.addSet({ family: 'inet', table: 't', name: 's', type: 'ipv4_addr', size: 0 }), 'set.size');
    await refused((tx) => tx.addSet({ family: 'inet', table: 't', name: 's', type: 'ipv4_addr', size: 2 ** 32 }), 'set.size');
    await refused((tx) => tx.addSet({ family: 'inet', table: 't', name: 's', type: 'ipv4_addr', size: 1.5 }), 'set.size');
    await refused((tx) => tx.addSet({ family: 'inet', table: 't', name: 's', type: 'ipv4_addr', flags: ['bogus' as never] }), 'set.flags[0]');
  });

  it('bad elements: not an address, the wrong family for a set of this transaction, a duplicate, none', async () => {
    await refused((tx) => tx.addElement(T, 's', { address: '10.0.0.256' }), 'elements.address');
    await refused(
      (tx) => tx.addSet({ family: 'inet', table: 't', name: 's', type: 'ipv4_addr' }).addElement(T, 's', { address: 'fd00::1' }),
      'elements.address',
    );
    await refused((tx) => tx.addElement(T, 's', [{ address: '10.0.0.1' }, { address: '10.0.0.1' }]), 'elements[1].address');
    await refused((tx) => tx.addElement(T, 's', []), 'elements');
  });

  it('the first error wins; later good ops do not clear it', async () => {
    await refused((tx) => tx.addTable({ family: 'inet', name: '' }).addTable({ family: 'inet', name: 'ok' }), 'table.name');
  });

  it('a closed client refuses with ERR_NFTABLES_CLOSED and sends nothing', async () => {
    const peer = new AckPeer();
    const nft = await Nftables.open({ netlink: peer });
    nft.close();
    expect(nft.closed).toBe(true);
    await expect(nft.tables()).rejects.toMatchObject({ code: 'ERR_NFTABLES_CLOSED' });
    await expect(nft.run(nft.transaction().addTable(T))).rejects.toMatchObject({ code: 'ERR_NFTABLES_CLOSED' });
    expect(peer.requests).toHaveLength(0);
    nft.close();
  });

  it('a kernel error for message k names the op it came from (element ops expanded by replace included)', async () => {
    const peer = new AckPeer();
    const nft = await Nftables.open({ netlink: peer });
    try {
      // Messages: BEGIN, table, 3 for the replace, the exclusive add (index 5).
      peer.failAt = { index: 5, errno: 17 };
      const tx = nft
        .transaction()
        .addTable(T)
        .addElement(T, 's', { address: '10.0.0.1', comment: 'a' }, { replace: true })
        .addElement(T, 's', [{ address: '10.0.0.2' }, { address: '10.0.0.3' }]);
      const err = await nft.run(tx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NftablesError);
      expect(err).toMatchObject({ code: 'EEXIST', errno: -17, index: 2, element: 0, operation: 'run' });
      expect((err as NftablesError).object).toEqual({ table: T, set: 's', elements: [{ address: '10.0.0.2' }, { address: '10.0.0.3' }] });
      expect(isAlreadyExists(err)).toBe(true);
    } finally {
      nft.close();
    }
  });

  it('a batch refused as a whole (an error for BATCH_BEGIN) fails at once, naming no op', async () => {
    const peer = new AckPeer();
    const nft = await Nftables.open({ netlink: peer, timeoutMs: 60_000 });
    try {
      peer.failAt = { index: 0, errno: 1 };
      const err = await nft.run(nft.transaction().addTable(T)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NftablesError);
      expect(err).toMatchObject({ code: 'EPERM', index: undefined });
      expect((err as Error).message).toContain('the batch as a whole');
    } finally {
      nft.close();
    }
  });
});
