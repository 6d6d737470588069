// Arrays a user hands podnet are checked index by index: a hole (`[, x]`, skipped by forEach, map, every and some)
// is refused by its index before anything is sent, in every part. Each case ran past validation before checkArray.
import { describe, expect, it } from 'vitest';

import { Nftables, NodeNetwork, nftExpr, runInNetns, type NftRuleset } from '../../lib/index.js';
import { checkArray } from '../../lib/validate.js';
import { FakeNftables, FakeNode } from '../../lib/testing/index.js';
import { thrown, rejection } from '../helpers/rejection.js';

function holed<T>(items: T[], at: number): T[] {
  const out = [...items];
  delete out[at];
  return out;
}

const T = { family: 'inet', table: 't' } as const;

describe('arrays with holes', () => {
  it('checkArray names the hole and returns a dense copy', () => {
    expect(thrown(() => checkArray('xs', holed([1, 2, 3], 1), 'numbers', (v) => v))).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument: 'xs[1]' });
    const copy = checkArray('xs', [1, 2], 'numbers', (v) => (v as number) * 2);
    expect(copy).toEqual([2, 4]);
    expect(thrown(() => checkArray('xs', 'ab', 'numbers', (v) => v))).toMatchObject({ code: 'ERR_INVALID_ARG_TYPE', argument: 'xs' });
  });

  it('nftables refuses a hole in tables, in a table list and in a rule, and writes nothing', async () => {
    const fake = new FakeNftables();
    const nft = await Nftables.open({ netlink: fake });
    try {
      const rule = { ...T, chain: 'c', exprs: holed([nftExpr.port('tcp dport', 80), nftExpr.counter(), nftExpr.drop()], 1) };
      const cases: [unknown, string][] = [
        [{ tables: holed([{ family: 'inet', name: 'x' }, { family: 'inet', name: 't', sets: [], chains: [], rules: [] }], 0) }, 'ruleset.tables[0]'],
        [{ tables: [{ family: 'inet', name: 't', sets: [], chains: holed([{ ...T, name: 'a' }, { ...T, name: 'c' }], 0), rules: [] }] }, 'ruleset.tables[0].chains[0]'],
        [{ tables: [{ family: 'inet', name: 't', sets: [], chains: [{ ...T, name: 'c' }], rules: [rule] }] }, 'rule.exprs[1]'],
        [{ tables: [{ family: 'inet', name: 't', sets: [], chains: [], rules: [] }], owned: new Array(1) }, 'ruleset.owned[0]'],
      ];
      for (const [ruleset, argument] of cases) {
        const err = await rejection(nft.apply(ruleset as NftRuleset));
        expect(err).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE' });
        expect((err as { argument: string }).argument.endsWith(argument) || (err as { argument: string }).argument === argument).toBe(true);
      }
      expect(thrown(() => nftExpr.ctState(holed(['established', 'related'], 0)))).toMatchObject({ argument: 'states[0]' });
      expect(fake.dump().tables).toEqual([]);
    } finally {
      nft.close();
    }
  });

  it('runInNetns, the ZDS server and the agent refuse holes by index', async () => {
    expect(await rejection(runInNetns('/proc/self/ns/net', holed(['true', 'a', 'b'], 1)))).toMatchObject({ argument: 'argv[1]' });
    const fakes = new FakeNode();
    try {
      const { server } = await fakes.proxy();
      const w = { name: 'n', namespace: 'ns', serviceAccount: 'sa' };
      expect(thrown(() => server.replaceWorkloads(holed([{ uid: 'a', workload: w }, { uid: 'b', workload: w }], 0)))).toMatchObject({ argument: 'workloads[0]' });
      expect(server.workloads).toEqual([]);
      const node = new NodeNetwork({ ...(await fakes.options()), proxy: server });
      await node.start();
      fakes.netns.add('/run/netns/p');
      const pod = { uid: 'u', ips: holed(['10.0.0.4', '10.0.0.5'], 0), netns: '/run/netns/p', workload: w };
      expect(await rejection(node.addPod(pod))).toMatchObject({ code: 'ERR_INVALID_ARG_VALUE', argument: 'pod.ips[0]' });
      expect(fakes.netlink.dump().sets.flatMap((s) => s.entries)).toEqual([]);
      expect(fakes.iptablesOf('/run/netns/p').dump()).toEqual({});
      await node.stop();
    } finally {
      await fakes.close();
    }
  });
});
