// Golden bytes: the batch podnet sends for test/fixtures/nftables/golden.nft is the batch nft sends for it.
// golden.mnl.txt is what `ip netns exec NS nft --debug=mnl -f golden.nft` printed in a fresh namespace (nftables
// 1.0.6, ANSI colours stripped; not `-c`, which leaves BATCH_END out so that the kernel aborts); helpers/mnl-debug.ts reads it back into bytes. nft prints neither NLM_F_CREATE/EXCL/ACK nor real seqs,
// so both sides are compared with nlmsg_flags and nlmsg_seq zeroed, and podnet's flags are checked on their own.
// The privileged test at the end takes the same output from the nft installed here, live, in a fresh namespace.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { Nftables } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { AckPeer } from './helpers/ack-peer.js';
import { parseMnlDebug, splitMessages, withoutFlagsAndSeq } from './helpers/mnl-debug.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures', 'nftables');
const NLM_F_REQUEST = 1;
const NLM_F_ACK = 4;
const NLM_F_EXCL = 0x200;
const NLM_F_CREATE = 0x400;

const table = { family: 'inet', name: 't1' } as const;

async function podnetBatch(): Promise<Buffer[]> {
  const peer = new AckPeer();
  const nft = await Nftables.open({ netlink: peer });
  try {
    const tx = nft
      .transaction()
      .addTable(table)
      .addChain({ family: 'inet', table: 't1', name: 'pre', type: 'nat', hook: 'prerouting', priority: -100, policy: 'accept' })
      .addChain({ family: 'inet', table: 't1', name: 'reg' })
      .addSet({ family: 'inet', table: 't1', name: 's4', type: 'ipv4_addr', comment: 'hello' })
      .addSet({ family: 'inet', table: 't1', name: 's6', type: 'ipv6_addr', size: 65536 })
      .addElement(table, 's4', { address: '10.0.0.5', comment: 'pod-uid' });
    await nft.run(tx);
  } finally {
    nft.close();
  }
  expect(peer.requests).toHaveLength(1); // one sendmsg
  return splitMessages(peer.requests[0]!);
}

function compare(sent: Buffer[], nftText: string): void {
  const expected = parseMnlDebug(nftText);
  expect(expected.map((m) => m.type)).toEqual([16, 0xa00, 0xa03, 0xa03, 0xa09, 0xa09, 0xa0c, 17]);
  expect(sent.map((m) => withoutFlagsAndSeq(m).toString('hex'))).toEqual(expected.map((m) => m.bytes.toString('hex')));
}

describe('nftables golden bytes', () => {
  it('a table, a base chain, a regular chain, a set with a comment, a set with a size and an element with a comment are sent as nft sends them', async () => {
    compare(await podnetBatch(), readFileSync(join(fixtures, 'golden.mnl.txt'), 'utf8'));
  });

  it('only the last message asks for an ACK (refusals come anyway), in consecutive seqs; adds are CREATE, the element add also EXCL', async () => {
    const sent = await podnetBatch();
    const flags = sent.map((m) => m.readUInt16LE(6));
    expect(flags).toEqual([
      NLM_F_REQUEST,
      NLM_F_REQUEST | NLM_F_CREATE,
      NLM_F_REQUEST | NLM_F_CREATE,
      NLM_F_REQUEST | NLM_F_CREATE,
      NLM_F_REQUEST | NLM_F_CREATE,
      NLM_F_REQUEST | NLM_F_CREATE,
      NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
      NLM_F_REQUEST,
    ]);
    const seqs = sent.map((m) => m.readUInt32LE(8));
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i));
    // BATCH_BEGIN / END name the nf_tables subsystem in res_id, big-endian.
    expect(sent[0]!.readUInt16BE(18)).toBe(10);
    expect(sent[7]!.readUInt16BE(18)).toBe(10);
  });
});

describePrivileged(
  'nftables golden bytes against the installed nft',
  () => {
    it('nft --debug=mnl prints the batch podnet sends', async () => {
      using ns = new TestNetns('nftgold');
      const text = ns.exec(['nft', '--debug=mnl', '-f', join(fixtures, 'golden.nft')]);
      compare(await podnetBatch(), text);
    });
  },
  missingBinary('nft'),
);
