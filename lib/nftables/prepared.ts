/**
 * A transaction converted to the addon's native form once, to be run many times. Building and converting a batch
 * costs the JS thread more than the kernel takes to apply it when the same tables go into every new pod; a prepared
 * transaction pays that once.
 */
import { native, type RawNftBatch } from '../native.js';
import type { NftTransaction } from './transaction.js';

type OpAt = ReturnType<NftTransaction['compile']>['opAt'];

/**
 * NftPreparedTransaction is what Nftables.prepare returns: the transaction's ops as they were when it was prepared
 * (later changes to the transaction do not reach it), for Nftables.run on any client, as often as wanted.
 */
export class NftPreparedTransaction {
  /** size is how many ops the transaction held. */
  readonly size: number;
  /** @internal */
  readonly batch: RawNftBatch | undefined;
  /** @internal */
  readonly opAt: OpAt;

  /** @internal Throws the transaction's first argument error (InvalidArgumentError). */
  constructor(tx: NftTransaction) {
    if (tx.error) throw tx.error;
    const { ops, opAt } = tx.compile();
    this.size = tx.size;
    this.batch = ops.length === 0 ? undefined : native.nftPrepare(ops);
    this.opAt = opAt;
  }
}
