// Golden bytes of rules: the batch podnet sends for test/fixtures/nftables/rules.nft (every expression kind the rule
// AST has, in the reference agent's rules) and rules-positions.nft (add after a handle, insert before one and first,
// delete by handle, flush chain) is the batch nft sends. rules.mnl.txt and rules-positions.mnl.txt are what
// `nft --debug=mnl -f` printed in a fresh namespace (nftables 1.0.6, colours stripped; rules-positions.nft right
// after rules.nft), rules.netlink.txt what `--debug=netlink` printed for rules.nft: the expression lists to read.
// Flags and seqs are compared apart (nft prints neither). The privileged tests take the same output live.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { Nftables, type NftTransaction } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { AckPeer } from './helpers/ack-peer.js';
import { parseMnlDebug, splitMessages, withoutFlagsAndSeq } from './helpers/mnl-debug.js';
import { positionsTx, rulesTx } from './rule-batches.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures', 'nftables');
const NLM_F_REQUEST = 1;
const NLM_F_ACK = 4;
const NLM_F_CREATE = 0x400;
const NLM_F_APPEND = 0x800;
const NEWRULE = 0xa06;
const DELRULE = 0xa08;

async function podnetBatch(build: (tx: NftTransaction) => NftTransaction): Promise<Buffer[]> {
  const peer = new AckPeer();
  const nft = await Nftables.open({ netlink: peer });
  try {
    await nft.run(build(nft.transaction()));
  } finally {
    nft.close();
  }
  expect(peer.requests).toHaveLength(1); // one sendmsg
  return splitMessages(peer.requests[0]!);
}

function compare(sent: Buffer[], nftText: string): void {
  const expected = parseMnlDebug(nftText);
  expect(sent.map((m) => m.readUInt16LE(4))).toEqual(expected.map((m) => m.type));
  sent.forEach((m, i) => expect(withoutFlagsAndSeq(m).toString('hex'), `message ${i}`).toBe(expected[i]!.bytes.toString('hex')));
}

const fixture = (name: string): string => readFileSync(join(fixtures, name), 'utf8');

describe('nftables rule golden bytes', () => {
  it('every expression kind of rules.nft is sent as nft sends it', async () => {
    const sent = await podnetBatch(rulesTx);
    expect(sent.filter((m) => m.readUInt16LE(4) === NEWRULE)).toHaveLength(14);
    compare(sent, fixture('rules.mnl.txt'));
  });

  it('add after a handle, insert before one and first, delete by handle and flush chain are sent as nft sends them', async () => {
    compare(await podnetBatch(positionsTx), fixture('rules-positions.mnl.txt'));
  });

  it('adds append (CREATE | APPEND), inserts do not, deletes and flushes carry no create flags; the last asks for the ACK', async () => {
    const sent = await podnetBatch(positionsTx);
    expect(sent.slice(1, -1).map((m) => [m.readUInt16LE(4), m.readUInt16LE(6)])).toEqual([
      [NEWRULE, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_APPEND],
      [NEWRULE, NLM_F_REQUEST | NLM_F_CREATE],
      [NEWRULE, NLM_F_REQUEST | NLM_F_CREATE],
      [DELRULE, NLM_F_REQUEST],
      [DELRULE, NLM_F_REQUEST | NLM_F_ACK],
    ]);
  });
});

describePrivileged(
  'nftables rule golden bytes against the installed nft',
  () => {
    it('nft --debug=mnl prints the rule batches podnet sends', async () => {
      using ns = new TestNetns('nftrgold');
      compare(await podnetBatch(rulesTx), ns.exec(['nft', '--debug=mnl', '-f', join(fixtures, 'rules.nft')]));
      compare(await podnetBatch(positionsTx), ns.exec(['nft', '--debug=mnl', '-f', join(fixtures, 'rules-positions.nft')]));
    });
  },
  missingBinary('nft'),
);
