// The reference agent's own nftables rules (test/fixtures/nftables/inpod.nft, host-probes.nft: the text of
// ../shared/reference/nftables.md) written by podnet in one batch: `nft -j list ruleset` shows them exactly as it
// shows the same text loaded with `nft -f`, and the batch is byte for byte the one `nft --debug=mnl -f` sends.
import { join } from 'node:path';
import { expect, it } from 'vitest';

import { Nftables, type NftTransaction } from '../../lib/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { AckPeer } from './helpers/ack-peer.js';
import { parseMnlDebug, splitMessages, withoutFlagsAndSeq } from './helpers/mnl-debug.js';
import { hostProbesTx, inpodTx } from './reference-rules.js';

const fixtures = join(import.meta.dirname, '..', 'fixtures', 'nftables');

function ruleset(ns: TestNetns): unknown[] {
  const parsed = JSON.parse(ns.exec(['nft', '-j', 'list', 'ruleset'])) as { nftables: Record<string, unknown>[] };
  return parsed.nftables.filter((e) => !('metainfo' in e));
}

async function sent(build: (tx: NftTransaction) => NftTransaction): Promise<Buffer[]> {
  const peer = new AckPeer();
  const nft = await Nftables.open({ netlink: peer });
  try {
    await nft.run(build(nft.transaction()));
  } finally {
    nft.close();
  }
  expect(peer.requests).toHaveLength(1);
  return splitMessages(peer.requests[0]!).map(withoutFlagsAndSeq);
}

describePrivileged(
  'the reference agent\'s nftables rules written by podnet',
  () => {
    it.each([
      ['in-pod nat, mangle and raw tables', 'inpod.nft', inpodTx, 18],
      ['host probe set and SNAT rule', 'host-probes.nft', hostProbesTx, 1],
    ] as const)('%s: nft -j list ruleset shows what nft -f of the reference text shows', async (_name, file, build, rules) => {
      using ref = new TestNetns('nftref');
      ref.exec(['nft', '-f', join(fixtures, file)]);
      using ns = new TestNetns('nftpod');
      const nft = await Nftables.open({ netns: ns.path });
      try {
        await nft.run(build(nft.transaction()));
      } finally {
        nft.close();
      }
      const ours = ruleset(ns);
      expect(ours.filter((e) => Object.hasOwn(e as object, 'rule'))).toHaveLength(rules);
      expect(ours).toEqual(ruleset(ref));
    });

    it.each([
      ['inpod.nft', inpodTx],
      ['host-probes.nft', hostProbesTx],
    ] as const)('%s: podnet sends the batch nft --debug=mnl sends', async (file, build) => {
      using ns = new TestNetns('nftrefmnl');
      const expected = parseMnlDebug(ns.exec(['nft', '--debug=mnl', '-f', join(fixtures, file)]));
      expect((await sent(build)).map((m) => m.toString('hex'))).toEqual(expected.map((m) => m.bytes.toString('hex')));
    });
  },
  missingBinary('nft'),
);
