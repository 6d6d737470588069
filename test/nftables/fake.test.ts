// FakeNftables on its own: options, the read-only dump, scripted faults (an errno for one message, a lost answer, a
// cut datagram) as the Nftables client sees them, small dump pages, and the generation.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Nftables, NftablesError, PodnetSystemError, nftExpr as x, type NftTableRef } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { FakeNftables } from '../../lib/testing/index.js';

const T: NftTableRef = { family: 'inet', name: 'istio-ambient-nat' };

const GETSET = (10 << 8) | 10;
const GETSETELEM = (10 << 8) | 13;

/** A peer that passes each request to fake and records its type, flags and bytes in `seen`. */
function recording(fake: FakeNftables): { netlink: { exchange: (req: Uint8Array) => Uint8Array[] }; seen: { type: number; flags: number; bytes: Buffer }[] } {
  const seen: { type: number; flags: number; bytes: Buffer }[] = [];
  const exchange = (req: Uint8Array) => {
    const bytes = Buffer.from(req);
    seen.push({ type: bytes.readUInt16LE(4), flags: bytes.readUInt16LE(6), bytes });
    return fake.exchange(req);
  };
  return { netlink: { exchange }, seen };
}

async function world(fake = new FakeNftables(), timeoutMs = 5000): Promise<{ fake: FakeNftables; nft: Nftables }> {
  const nft = await Nftables.open({ netlink: fake, timeoutMs });
  await nft.run(
    nft
      .transaction()
      .addTable({ ...T, comment: 'podnet' })
      .addSet({ family: 'inet', table: T.name, name: 'probes', type: 'ipv4_addr', comment: 'pods' })
      .addChain({ family: 'inet', table: T.name, name: 'postrouting', type: 'nat', hook: 'postrouting', priority: 100 })
      .addElement(T, 'probes', [{ address: '10.244.0.5', comment: 'uid-a' }, { address: '10.244.0.6' }])
      .addRule({ family: 'inet', table: T.name, chain: 'postrouting', exprs: [x.addrInSet('ip daddr', 'probes'), x.counter(), x.masquerade()], comment: 'snat' }),
  );
  return { fake, nft };
}

describe('FakeNftables', () => {
  it.each([
    ['options not an object', 5, 'options'],
    ['a page too small', { dumpPageSize: 10 }, 'options.dumpPageSize'],
    ['a port id out of range', { portId: -1 }, 'options.portId'],
    ['a process name not a string', { procName: 7 }, 'options.procName'],
  ])('refuses %s', (_label, options, name) => {
    let err: unknown;
    try {
      new FakeNftables(options as never);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toContain(name);
  });

  it('dumps a frozen snapshot of tables, chains, rules, sets and elements with their comments', async () => {
    const { fake, nft } = await world();
    const snap = fake.dump();
    expect(snap).toEqual({
      genId: 2,
      tables: [
        {
          family: 1,
          name: T.name,
          handle: 1,
          flags: 0,
          comment: 'podnet',
          chains: [
            {
              name: 'postrouting',
              handle: 2,
              type: 'nat',
              hook: 4,
              priority: 100,
              policy: 1,
              comment: undefined,
              rules: [{ handle: 3, comment: 'snat', expressions: expect.stringMatching(/^[0-9a-f]+$/) }],
            },
          ],
          sets: [
            {
              name: 'probes',
              handle: 1,
              keyType: 7,
              keyLength: 4,
              flags: 0,
              comment: 'pods',
              use: 1,
              elements: [
                { key: '10.244.0.5', comment: 'uid-a' },
                { key: '10.244.0.6', comment: undefined },
              ],
            },
          ],
        },
      ],
    });
    expect(Object.isFrozen(snap.tables[0]!.sets[0]!.elements)).toBe(true);
    await nft.deleteElement(T, 'probes', { address: '10.244.0.6' });
    expect(snap.tables[0]!.sets[0]!.elements).toHaveLength(2);
    expect(fake.dump().tables[0]!.sets[0]!.elements).toHaveLength(1);
    nft.close();
  });

  it('moves the generation on with each batch that changed something, not with one that did not or failed', async () => {
    const { fake, nft } = await world();
    const start = fake.genId;
    await nft.run(nft.transaction().addTable(T));
    expect(fake.genId).toBe(start);
    await nft.addElement(T, 'probes', { address: '10.0.0.1' });
    expect(fake.genId).toBe(start + 1);
    await nft.addElement(T, 'probes', { address: '10.0.0.1' }).catch(() => undefined);
    expect(fake.genId).toBe(start + 1);
    nft.close();
  });

  it('failNext fails the next matching message with its errno and aborts its batch; others pass', async () => {
    const { fake, nft } = await world();
    fake.failNext(12, { message: 'newsetelem', table: T.name });
    expect(fake.pendingFaults).toBe(1);
    await nft.run(nft.transaction().addChain({ family: 'inet', table: T.name, name: 'c' }));
    const err = await nft.run(nft.transaction().addChain({ family: 'inet', table: T.name, name: 'd' }).addElement(T, 'probes', { address: '10.0.0.9' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NftablesError);
    expect(err).toMatchObject({ code: 'ENOMEM', errno: -12, index: 1 });
    expect(fake.pendingFaults).toBe(0);
    expect((await nft.chains(T)).map((c) => c.name)).toEqual(['postrouting', 'c']);
    fake.failNext(1, { message: 'getset' });
    expect(await nft.sets(T).catch((e: unknown) => (e as NftablesError).code)).toBe('EPERM');
    expect((await nft.sets(T)).map((s) => s.name)).toEqual(['probes']);
    nft.close();
  });

  it('dropNextReply applies the batch but loses its answer: the client times out, the change is there', async () => {
    const { fake, nft } = await world(new FakeNftables(), 200);
    fake.dropNextReply({ message: 'newsetelem' });
    const err = await nft.addElement(T, 'probes', { address: '10.0.0.9' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect((err as PodnetSystemError).code).toBe('ETIMEDOUT');
    expect(await nft.testElement(T, 'probes', '10.0.0.9')).toEqual({ address: '10.0.0.9', comment: undefined });
    nft.close();
  });

  it('truncateNextReply cuts a dump datagram: the listing fails as a malformed reply, the next one works', async () => {
    const { fake, nft } = await world();
    fake.truncateNextReply(30, { message: 'getsetelem' });
    const err = await nft.elements(T, 'probes').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect((err as PodnetSystemError).code).toMatch(/^E(BADMSG|PROTO)$/);
    expect(await nft.elements(T, 'probes')).toHaveLength(2);
    nft.close();
  });

  it('refuses interval sets (EOPNOTSUPP), which it does not model, and changes nothing', async () => {
    const { fake, nft } = await world();
    nft.close();
    const before = fake.dump();
    // podnet does not make interval sets (InvalidArgumentError below), so the set goes in as raw ops, as another
    // client of the fake would send it.
    const handle = new native.NftablesHandle(-1, 5000, (req) => fake.exchange(req));
    try {
      const op = { kind: 2, flags: native.nftablesConstants.create, family: 1, table: T.name, name: 'ranges', setFlags: 0x4, keyType: 7, keyLen: 4, setId: 1 };
      await expect(handle.run([op])).rejects.toMatchObject({ code: 'EOPNOTSUPP', index: 0 });
    } finally {
      handle.close();
    }
    expect(fake.dump()).toEqual(before);
    const { nft: again } = await world();
    const refused = await again.run(again.transaction().addSet({ family: 'inet', table: T.name, name: 'ranges', type: 'ipv4_addr', flags: ['interval' as never] })).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidArgumentError);
    expect((refused as InvalidArgumentError).message).toContain('set.flags[0]');
    again.close();
  });

  it('rehashDuringNextDump: the dump repeats some elements and misses as many, unflagged; elements() lists again and gets them whole', async () => {
    const { fake, nft } = await world(new FakeNftables({ dumpPageSize: 1024 }));
    const many = Array.from({ length: 200 }, (_, i) => ({ address: `10.9.0.${i}`, comment: `pod-${i}` }));
    await nft.addElement(T, 'probes', many);
    const all = [...many, { address: '10.244.0.5', comment: 'uid-a' }, { address: '10.244.0.6', comment: undefined }];
    const sorted = (list: { address: string }[]) => list.map((e) => e.address).sort();

    // A stream yields what the kernel sends, as it comes: here the rehash shows.
    fake.rehashDuringNextDump({ message: 'getsetelem' });
    const streamed: string[] = [];
    for await (const e of nft.elementsStream(T, 'probes')) streamed.push(e.address);
    expect(streamed).toHaveLength(all.length);
    const repeated = streamed.filter((a, i) => streamed.indexOf(a) !== i);
    expect(repeated.length).toBeGreaterThan(0);
    expect(all.filter((e) => !streamed.includes(e.address))).toHaveLength(repeated.length);

    // elements() takes the dump again when a key comes twice.
    const { netlink, seen } = recording(fake);
    const watched = await Nftables.open({ netlink });
    fake.rehashDuringNextDump();
    const listed = await watched.elements(T, 'probes');
    expect(sorted(listed)).toEqual(sorted(all));
    expect(listed).toHaveLength(all.length);
    expect(seen.filter((r) => r.type === GETSETELEM && (r.flags & 0x300) === 0x300)).toHaveLength(2);
    expect(fake.pendingFaults).toBe(0);
    watched.close();
    nft.close();
  });

  it('elements() rejects with EAGAIN, naming the repeats, when every one of five dumps lists a key twice, and lists whole after', async () => {
    const { fake, nft } = await world(new FakeNftables({ dumpPageSize: 1024 }));
    await nft.addElement(T, 'probes', Array.from({ length: 100 }, (_, i) => ({ address: `10.9.1.${i}` })));
    for (let i = 0; i < 5; i++) fake.rehashDuringNextDump();
    const err = await nft.elements(T, 'probes').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'EAGAIN', operation: 'elements' });
    expect((err as Error).message).toContain('listing an object twice');
    expect(fake.pendingFaults).toBe(0);
    expect(await nft.elements(T, 'probes')).toHaveLength(102);
    nft.close();
  });

  it('refuses bad fault arguments with InvalidArgumentError', () => {
    const fake = new FakeNftables();
    expect(() => fake.failNext(0)).toThrow(InvalidArgumentError);
    expect(() => fake.failNext(2, { message: 'nosuch' as never })).toThrow(InvalidArgumentError);
    expect(() => fake.truncateNextReply(-1)).toThrow(InvalidArgumentError);
    expect(() => fake.dropNextReply({ table: 5 as never })).toThrow(InvalidArgumentError);
    expect(() => fake.rehashDuringNextDump({ message: 'nosuch' as never })).toThrow(InvalidArgumentError);
    expect(fake.pendingFaults).toBe(0);
    fake.failNext(2);
    fake.clearFaults();
    expect(fake.pendingFaults).toBe(0);
  });

  it('elements() and testElement() ask for their set alone (one GETSET, not a dump of the table\'s sets)', async () => {
    const fake = new FakeNftables();
    const { nft } = await world(fake);
    await nft.run(nft.transaction().addSet({ family: 'inet', table: T.name, name: 'other', type: 'ipv6_addr' }));
    const { netlink, seen } = recording(fake);
    const watched = await Nftables.open({ netlink });
    expect(await watched.elements(T, 'probes')).toEqual([
      { address: '10.244.0.5', comment: 'uid-a' },
      { address: '10.244.0.6', comment: undefined },
    ]);
    expect(await watched.testElement(T, 'probes', '10.244.0.5')).toEqual({ address: '10.244.0.5', comment: 'uid-a' });
    expect(seen.map((r) => [r.type, r.flags])).toEqual([
      [GETSETELEM, 0x301],
      [GETSET, 0x5],
      [GETSETELEM, 0x5],
      [GETSET, 0x5],
    ]);
    // The GETSET names the table and the set (NFTA_SET_TABLE, NFTA_SET_NAME), as nft's `list set` does.
    const strAttr = (type: number, v: string): Buffer => {
      const b = Buffer.alloc((4 + v.length + 1 + 3) & ~3);
      b.writeUInt16LE(4 + v.length + 1, 0);
      b.writeUInt16LE(type, 2);
      b.write(v, 4);
      return b;
    };
    expect(seen[1]!.bytes.subarray(16)).toEqual(Buffer.concat([Buffer.from([1, 0, 0, 0]), strAttr(1, T.name), strAttr(2, 'probes')]));
    watched.close();
    nft.close();
  });

  it('pages dumps into datagrams of the page size it is given, and the client reads them all', async () => {
    const fake = new FakeNftables({ dumpPageSize: 512 });
    const { nft } = await world(fake);
    const many = Array.from({ length: 400 }, (_, i) => ({ address: `10.1.${i >> 8}.${i & 255}`, comment: `uid-${i}` }));
    await nft.addElement(T, 'probes', many);
    // GETSETELEM dump of inet istio-ambient-nat probes, as the codec sends it.
    const str = (type: number, v: string) => {
      const b = Buffer.alloc((4 + v.length + 1 + 3) & ~3);
      b.writeUInt16LE(4 + v.length + 1, 0);
      b.writeUInt16LE(type, 2);
      b.write(v, 4);
      return b;
    };
    const body = Buffer.concat([Buffer.from([1, 0, 0, 0]), str(1, T.name), str(2, 'probes')]);
    const head = Buffer.alloc(16);
    head.writeUInt32LE(16 + body.length, 0);
    head.writeUInt16LE((10 << 8) | 13, 4);
    head.writeUInt16LE(0x301, 6);
    const datagrams = fake.exchange(Buffer.concat([head, body]));
    expect(datagrams.length).toBeGreaterThan(20);
    expect(datagrams.every((d) => d.length <= 512)).toBe(true);
    expect((await nft.elements(T, 'probes')).length).toBe(402);
    nft.close();
  });
});
