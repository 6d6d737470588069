// elementsStream() and the batch limit, on the fake and on the kernel (a fresh namespace per test): a streamed
// listing equals elements() (a big hash set, an interval set, a map), it ends early without leaking its socket, it
// refuses bad arguments and missing sets; a batch over the 16 MiB the kernel takes in one sendmsg is refused before
// anything is sent, with nothing changed.
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, Nftables, NftablesError, PodnetSystemError, type NftElement, type NftElementSpec, type NftTableRef } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { FakeNftables } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

const T: NftTableRef = { family: 'inet', name: 'big' };

const addressOf = (i: number): string => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`;

function specs(n: number, comment: (i: number) => string | undefined = (i) => `pod-${i}`): NftElementSpec[] {
  const out: NftElementSpec[] = [];
  for (let i = 0; i < n; i++) {
    const c = comment(i);
    out.push(c === undefined ? { address: addressOf(i) } : { address: addressOf(i), comment: c });
  }
  return out;
}

async function collect(it: AsyncIterable<NftElement>): Promise<NftElement[]> {
  const out: NftElement[] = [];
  for await (const e of it) out.push(e);
  return out;
}

const byAddress = (a: NftElement, b: NftElement): number => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);

type Opener = (fn: (nft: Nftables, ns?: TestNetns) => Promise<void>) => Promise<void>;

const onFake: Opener = async (fn) => {
  const nft = await Nftables.open({ netlink: new FakeNftables(), timeoutMs: 60_000 });
  try {
    await fn(nft);
  } finally {
    nft.close();
  }
};

const onKernel: Opener = async (fn) => {
  using ns = new TestNetns('nftstream');
  const nft = await Nftables.open({ netns: ns.path, timeoutMs: 60_000 });
  try {
    await fn(nft, ns);
  } finally {
    nft.close();
  }
};

async function withSets(nft: Nftables, n: number): Promise<void> {
  await nft.run(
    nft
      .transaction()
      .addTable(T)
      .addSet({ family: 'inet', table: T.name, name: 'hosts', type: 'ipv4_addr', size: 1 << 20 })
      .addElement(T, 'hosts', specs(n)),
  );
}

function contract(name: string, open: Opener, big: number): void {
  describe(name, () => {
    it(`streams a set of ${big} elements as elements() lists it, in small chunks and the default`, { timeout: 300_000 }, async () => {
      await open(async (nft) => {
        await withSets(nft, big);
        const listed = (await nft.elements(T, 'hosts')).slice().sort(byAddress);
        expect(listed).toHaveLength(big);
        expect((await collect(nft.elementsStream(T, 'hosts'))).sort(byAddress)).toEqual(listed);
        expect((await collect(nft.elementsStream(T, 'hosts', { chunk: 7 }))).sort(byAddress)).toEqual(listed);
        expect(listed.find((e) => e.address === addressOf(big - 1))).toEqual({ address: addressOf(big - 1), comment: `pod-${big - 1}` });
      });
    });

    it('a loop left early closes the stream, and the client and a second stream go on', async () => {
      await open(async (nft) => {
        await withSets(nft, 5000);
        let seen = 0;
        for await (const e of nft.elementsStream(T, 'hosts', { chunk: 100 })) {
          expect(e.comment).toMatch(/^pod-/);
          if (++seen === 150) break;
        }
        expect(seen).toBe(150);
        await nft.addElement(T, 'hosts', { address: '10.200.0.1' });
        expect(await collect(nft.elementsStream(T, 'hosts'))).toHaveLength(5001);
      });
    });

    it('a missing set or table rejects with ENOENT when iteration begins', async () => {
      await open(async (nft) => {
        await withSets(nft, 1);
        for (const [table, set] of [[T, 'nope'], [{ family: 'inet', name: 'none' } as NftTableRef, 'hosts']] as const) {
          const err = await collect(nft.elementsStream(table, set)).catch((e: unknown) => e);
          expect(err).toBeInstanceOf(NftablesError);
          expect((err as NftablesError).code).toBe('ENOENT');
        }
      });
    });

    it(`a batch over ${native.nftablesConstants.batchMax} bytes is refused before sending, nothing changed`, { timeout: 120_000 }, async () => {
      await open(async (nft) => {
        await withSets(nft, 1);
        // 150k elements with 100-byte comments encode to about 18 MiB.
        const many = specs(150_000, (i) => `${i}`.padStart(100, 'c'));
        const err = await nft.addElement(T, 'hosts', many).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PodnetSystemError);
        expect(err).toMatchObject({ code: 'ERR_NFTABLES_BATCH_TOO_LARGE', syscall: 'sendmsg' });
        expect((err as PodnetSystemError).message).toMatch(/over the 16777184 bytes the kernel takes in one transaction/);
        expect(await nft.elements(T, 'hosts')).toHaveLength(1);
        // The same elements in transactions under the limit go in.
        await nft.addElement(T, 'hosts', many.slice(1, 75_000));
        await nft.addElement(T, 'hosts', many.slice(75_000));
        expect(await nft.elements(T, 'hosts')).toHaveLength(150_000);
      });
    });
  });
}

describe('elementsStream arguments', () => {
  it('refuses bad arguments with InvalidArgumentError before anything is sent', async () => {
    await onFake(async (nft) => {
      const cases: [string, () => AsyncGenerator<NftElement>, string, RegExp][] = [
        ['table', () => nft.elementsStream({ family: 'nope' } as unknown as NftTableRef, 's'), 'ERR_INVALID_ARG_TYPE', /table\.family/],
        ['set', () => nft.elementsStream(T, 5 as unknown as string), 'ERR_INVALID_ARG_TYPE', /set/],
        ['chunk 0', () => nft.elementsStream(T, 's', { chunk: 0 }), 'ERR_INVALID_ARG_VALUE', /options\.chunk/],
        ['unknown option', () => nft.elementsStream(T, 's', { limit: 1 } as unknown as { chunk: number }), 'ERR_INVALID_ARG_VALUE', /options\.limit/],
      ];
      for (const [name, make, code, message] of cases) {
        const err = await collect(make()).catch((e: unknown) => e);
        expect(err, name).toBeInstanceOf(InvalidArgumentError);
        expect(err, name).toMatchObject({ code });
        expect((err as Error).message, name).toMatch(message);
      }
    });
  });

  it('after close() rejects with ERR_NFTABLES_CLOSED', async () => {
    const nft = await Nftables.open({ netlink: new FakeNftables() });
    nft.close();
    await expect(collect(nft.elementsStream(T, 's'))).rejects.toMatchObject({ code: 'ERR_NFTABLES_CLOSED' });
  });

  it('the fake answers nothing to, and applies nothing of, a datagram over the kernel limit', () => {
    const fake = new FakeNftables();
    expect(fake.exchange(new Uint8Array(native.nftablesConstants.batchMax + 1))).toEqual([]);
    expect(fake.dump()).toEqual(new FakeNftables().dump());
  });
});

contract('elementsStream on FakeNftables', onFake, 20_000);

describePrivileged('elementsStream on the kernel', () => {
  contract('in a fresh namespace', onKernel, 100_000);

  // podnet writes no interval sets: nft does, on the kernel.
  it('streams an interval set as merged ranges, equal to elements()', async () => {
    await onKernel(async (nft, ns) => {
      await withSets(nft, 10);
      ns!.exec(['nft', 'add set inet big ranges { type ipv4_addr; flags interval; }; add element inet big ranges { 10.0.0.0/24 comment "a", 10.1.0.1-10.1.0.5, 192.168.7.7 }']);
      const streamed = await collect(nft.elementsStream(T, 'ranges', { chunk: 1 }));
      expect(streamed).toEqual(await nft.elements(T, 'ranges'));
      expect(streamed.map((e) => e.address)).toEqual(['10.0.0.0/24', '10.1.0.1-10.1.0.5', '192.168.7.7']);
    });
  });
});
