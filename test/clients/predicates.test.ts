// The predicates tell the truth alike for every client, on the kernel and on the fakes: an add of something already
// there is isAlreadyExists (and no other), a delete or lookup of something missing is isNotFound (and no other), a
// batch planned at an older nf_tables generation is isGenerationChanged (and no other; only Nftables has
// generations). The kernel's ipset code IPSET_ERR_EXIST means both of the first, and the ipset client reads it by
// operation.
import { describe, expect, it } from 'vitest';

import { isAlreadyExists, isGenerationChanged, isNotFound, type Ipset, type Nftables, type NftTableRef, type RouteSpec, type RoutingRuleSpec } from '../../lib/index.js';
import { describePrivileged } from '../helpers/privileged.js';
import { rejection, thrown } from '../helpers/rejection.js';
import { type World, fakeWorld, kernelWorld, worldPerTest } from './worlds.js';

const T: NftTableRef = { family: 'inet', name: 'podnet-pred' };
const ROUTE: RouteSpec = { dst: '10.9.0.0', dstLength: 16, table: 100, type: 'blackhole' };
const RULE: RoutingRuleSpec = { priority: 32764, mark: 0x111, mask: 0xfff, table: 100 };
const IP = { ip: '10.0.0.1' };

async function ipsetWithEntry(world: World): Promise<Ipset> {
  const ipset = await world.ipset();
  await ipset.create('s', { type: 'hash:ip' });
  await ipset.add('s', IP);
  return ipset;
}

async function nftWithElement(world: World): Promise<Nftables> {
  const nft = await world.nftables();
  await nft.run(nft.transaction().addTable(T).addSet({ family: 'inet', table: T.name, name: 's', type: 'ipv4_addr' }));
  await nft.addElement(T, 's', { address: '10.0.0.1' });
  return nft;
}

interface Case {
  name: string;
  /** 'exists': isAlreadyExists only; 'missing': isNotFound only; 'generation': isGenerationChanged only. */
  means: 'exists' | 'missing' | 'generation';
  /** The code the error has. */
  code: string;
  /** Makes the failure and returns the error; it keeps every client it opens in `opened`, closed after the case. */
  run(world: World, opened: { close(): void }[]): Promise<unknown>;
}

function keep<C extends { close(): void }>(opened: { close(): void }[], client: C): C {
  opened.push(client);
  return client;
}

const cases: Case[] = [
  // Ipset
  { name: 'Ipset add of an entry in the set', means: 'exists', code: 'IPSET_ERR_EXIST', run: async (w, o) => rejection(keep(o, await ipsetWithEntry(w)).add('s', IP)) },
  { name: 'Ipset addSync of an entry in the set', means: 'exists', code: 'IPSET_ERR_EXIST', run: async (w, o) => {
    const ipset = keep(o, await ipsetWithEntry(w));
    return thrown(() => ipset.addSync('s', IP));
  } },
  { name: 'Ipset addMany of an entry in the set', means: 'exists', code: 'IPSET_ERR_EXIST', run: async (w, o) => (await keep(o, await ipsetWithEntry(w)).addMany('s', [IP])).failed[0]?.error },
  { name: 'Ipset create of a set that is there', means: 'exists', code: 'EEXIST', run: async (w, o) => rejection(keep(o, await ipsetWithEntry(w)).create('s', { type: 'hash:ip' })) },
  { name: 'Ipset del of an entry not in the set', means: 'missing', code: 'IPSET_ERR_ENTRY_MISSING', run: async (w, o) => rejection(keep(o, await ipsetWithEntry(w)).del('s', { ip: '10.0.0.2' })) },
  { name: 'Ipset delSync of an entry not in the set', means: 'missing', code: 'IPSET_ERR_ENTRY_MISSING', run: async (w, o) => {
    const ipset = keep(o, await ipsetWithEntry(w));
    return thrown(() => ipset.delSync('s', { ip: '10.0.0.2' }));
  } },
  { name: 'Ipset delMany of an entry not in the set', means: 'missing', code: 'IPSET_ERR_ENTRY_MISSING', run: async (w, o) => (await keep(o, await ipsetWithEntry(w)).delMany('s', [{ ip: '10.0.0.2' }])).failed[0]?.error },
  { name: 'Ipset header of a missing set', means: 'missing', code: 'ENOENT', run: async (w, o) => rejection(keep(o, await w.ipset()).header('nope')) },
  { name: 'Ipset del from a missing set', means: 'missing', code: 'ENOENT', run: async (w, o) => rejection(keep(o, await w.ipset()).del('nope', IP)) },
  // Rtnetlink
  { name: 'Rtnetlink addRoute of a route that is there', means: 'exists', code: 'EEXIST', run: async (w, o) => {
    const rt = keep(o, await w.rtnetlink());
    await rt.addRoute(ROUTE);
    return rejection(rt.addRoute(ROUTE));
  } },
  { name: 'Rtnetlink addRule of a rule that is there', means: 'exists', code: 'EEXIST', run: async (w, o) => {
    const rt = keep(o, await w.rtnetlink());
    await rt.addRule(RULE);
    return rejection(rt.addRule(RULE));
  } },
  { name: 'Rtnetlink delRoute of a missing route', means: 'missing', code: 'ESRCH', run: async (w, o) => rejection(keep(o, await w.rtnetlink()).delRoute(ROUTE)) },
  { name: 'Rtnetlink delRule of a missing rule', means: 'missing', code: 'ENOENT', run: async (w, o) => rejection(keep(o, await w.rtnetlink()).delRule(RULE)) },
  { name: 'Rtnetlink link of a missing link', means: 'missing', code: 'ENOENT', run: async (w, o) => rejection(keep(o, await w.rtnetlink()).link('nope0')) },
  // Nftables
  { name: 'Nftables addElement of an element that is there', means: 'exists', code: 'EEXIST', run: async (w, o) => rejection(keep(o, await nftWithElement(w)).addElement(T, 's', { address: '10.0.0.1' })) },
  { name: 'Nftables exclusive addTable of a table that is there', means: 'exists', code: 'EEXIST', run: async (w, o) => {
    const nft = keep(o, await nftWithElement(w));
    return rejection(nft.run(nft.transaction().addTable(T, { exclusive: true })));
  } },
  { name: 'Nftables deleteElement of a missing element', means: 'missing', code: 'ENOENT', run: async (w, o) => rejection(keep(o, await nftWithElement(w)).deleteElement(T, 's', { address: '10.0.0.2' })) },
  { name: 'Nftables chains of a missing table', means: 'missing', code: 'ENOENT', run: async (w, o) => rejection(keep(o, await w.nftables()).chains(T)) },
  { name: 'Nftables deleteTable of a missing table', means: 'missing', code: 'ENOENT', run: async (w, o) => {
    const nft = keep(o, await w.nftables());
    return rejection(nft.run(nft.transaction().deleteTable(T)));
  } },
  { name: 'Nftables run planned at a generation the ruleset moved on from', means: 'generation', code: 'ERESTART', run: async (w, o) => {
    const nft = keep(o, await w.nftables());
    const generation = await nft.generation();
    await nft.run(nft.transaction().addTable(T));
    return rejection(nft.run(nft.transaction().addTable(T), { generation }));
  } },
];

const MEANINGS = { exists: [true, false, false], missing: [false, true, false], generation: [false, false, true] };

function predicateContract(makeWorld: () => World): void {
  const each = worldPerTest(makeWorld);

  it.each(cases.map((c) => [c.name, c] as const))('%s', async (_, c) => {
    const err = await c.run(each.world, each.opened);
    expect(err).toMatchObject({ code: c.code });
    expect([isAlreadyExists(err), isNotFound(err), isGenerationChanged(err)]).toEqual(MEANINGS[c.means]);
  });

  it("keeps the kernel's ipset code on a del of a missing entry", async () => {
    const ipset = await ipsetWithEntry(each.world);
    each.opened.push(ipset);
    expect(await rejection(ipset.del('s', { ip: '10.0.0.2' }))).toMatchObject({ code: 'IPSET_ERR_ENTRY_MISSING', ipsetCode: 'IPSET_ERR_EXIST', errno: -4103, command: 'del', set: 's' });
    expect(await rejection(ipset.add('s', IP))).toMatchObject({ code: 'IPSET_ERR_EXIST', ipsetCode: 'IPSET_ERR_EXIST', errno: -4103, command: 'add' });
  });
}

describe('predicates on the fakes', () => {
  predicateContract(fakeWorld);
});

describePrivileged('predicates on the kernel', () => {
  predicateContract(() => kernelWorld('pred'));
});
