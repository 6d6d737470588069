// The ipset contract: one suite, run against the real kernel (in a fresh
// namespace) and against FakeIpsetKernel. Whatever a fake answers here, the
// kernel answered first.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { InvalidArgumentError, IpsetError, isAlreadyExists, type Ipset, type IpsetEntry } from '../../lib/index.js';

export interface IpsetBackend {
  /** A fresh, empty ipset world and a client on it. */
  open(): Promise<Ipset>;
  /** Releases what open() made (namespace, fake). */
  cleanup(): void;
}

async function rejection(p: Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await p;
  } catch (err) {
    return err as Record<string, unknown>;
  }
  throw new Error('expected a rejection');
}

function v4(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

export function ipsetContract(name: string, backend: () => IpsetBackend): void {
  describe(`ipset contract: ${name}`, () => {
    let world: IpsetBackend;
    let ipset: Ipset;

    beforeEach(async () => {
      world = backend();
      ipset = await world.open();
    });
    afterEach(() => {
      ipset?.close();
      world?.cleanup();
    });

    it('creates a set with the newest revision and reports its header', async () => {
      await ipset.create('p4', { type: 'hash:ip', family: 'inet', comment: true, maxelem: 1000, hashsize: 128 });
      const h = await ipset.header('p4');
      expect(h).toMatchObject({ name: 'p4', type: 'hash:ip', family: 'inet', comment: true, counters: false, maxelem: 1000, hashsize: 128, references: 0, elements: 0, decoded: true });
      expect(h.timeout).toBeUndefined();
      expect(h.revision).toBeGreaterThanOrEqual(2);
      expect(await ipset.listNames()).toEqual(['p4']);
    });

    it('refuses a second create of a set, and accepts an identical one with exist', async () => {
      await ipset.create('p4', { type: 'hash:ip', comment: true });
      const err = await rejection(ipset.create('p4', { type: 'hash:ip', comment: true }));
      expect(err).toBeInstanceOf(IpsetError);
      expect(err).toMatchObject({ code: 'EEXIST', errno: -17, command: 'create', set: 'p4' });
      await ipset.create('p4', { type: 'hash:ip', comment: true }, { exist: true });
      const different = await rejection(ipset.create('p4', { type: 'hash:net' }, { exist: true }));
      expect(isAlreadyExists(different)).toBe(true);
    });

    it('adds exclusively: a duplicate fails with IPSET_ERR_EXIST and keeps the first owner', async () => {
      await ipset.create('p4', { type: 'hash:ip', comment: true });
      await ipset.add('p4', { ip: '10.0.0.1', comment: 'uid-a' });
      const err = await rejection(ipset.add('p4', { ip: '10.0.0.1', comment: 'uid-b' }));
      expect(err).toBeInstanceOf(IpsetError);
      expect(err).toMatchObject({ code: 'IPSET_ERR_EXIST', errno: -4103, command: 'add', set: 'p4', entry: { ip: '10.0.0.1', comment: 'uid-b' } });
      expect(isAlreadyExists(err)).toBe(true);
      expect((await ipset.list('p4')).entries).toEqual([{ ip: '10.0.0.1', comment: 'uid-a' }]);
    });

    it('replaces only when asked', async () => {
      await ipset.create('p4', { type: 'hash:ip', comment: true });
      await ipset.add('p4', { ip: '10.0.0.1', comment: 'uid-a' });
      await ipset.add('p4', { ip: '10.0.0.1', comment: 'uid-b' }, { replace: true });
      expect((await ipset.list('p4')).entries).toEqual([{ ip: '10.0.0.1', comment: 'uid-b' }]);
    });

    it('deletes, tests, and reports a missing entry unless told to ignore it', async () => {
      await ipset.create('p4', { type: 'hash:ip' });
      await ipset.add('p4', { ip: '10.0.0.1' });
      expect(await ipset.test('p4', { ip: '10.0.0.1' })).toBe(true);
      expect(await ipset.test('p4', { ip: '10.0.0.2' })).toBe(false);
      await ipset.del('p4', { ip: '10.0.0.1' });
      expect(await ipset.test('p4', { ip: '10.0.0.1' })).toBe(false);
      expect(await rejection(ipset.del('p4', { ip: '10.0.0.1' }))).toMatchObject({ code: 'IPSET_ERR_ENTRY_MISSING', ipsetCode: 'IPSET_ERR_EXIST', errno: -4103, command: 'del' });
      await ipset.del('p4', { ip: '10.0.0.1' }, { ignoreMissing: true });
    });

    it('fails on a missing set with ENOENT naming it', async () => {
      expect(await rejection(ipset.add('nope', { ip: '10.0.0.1' }))).toMatchObject({ code: 'ENOENT', errno: -2, set: 'nope', command: 'add' });
      expect(await rejection(ipset.destroy('nope'))).toMatchObject({ code: 'ENOENT', set: 'nope' });
      expect(await rejection(ipset.flush('nope'))).toMatchObject({ code: 'ENOENT', set: 'nope' });
      expect(await rejection(ipset.list('nope'))).toMatchObject({ code: 'ENOENT', set: 'nope' });
      expect(await rejection(ipset.header('nope'))).toMatchObject({ code: 'ENOENT', set: 'nope' });
    });

    it('flushes, renames, swaps and destroys', async () => {
      await ipset.create('a', { type: 'hash:ip' });
      await ipset.create('b', { type: 'hash:ip' });
      await ipset.create('n', { type: 'hash:net' });
      await ipset.add('a', { ip: '10.0.0.1' });
      await ipset.add('b', { ip: '10.0.0.2' });
      await ipset.swap('a', 'b');
      expect((await ipset.list('a')).entries).toEqual([{ ip: '10.0.0.2' }]);
      expect(await rejection(ipset.swap('a', 'n'))).toMatchObject({ code: 'IPSET_ERR_TYPE_MISMATCH', command: 'swap' });
      expect(await rejection(ipset.rename('a', 'b'))).toMatchObject({ code: 'IPSET_ERR_EXIST_SETNAME2', command: 'rename' });
      await ipset.rename('a', 'c');
      expect((await ipset.listNames()).sort()).toEqual(['b', 'c', 'n']);
      await ipset.flush('c');
      expect((await ipset.list('c')).entries).toEqual([]);
      await ipset.add('b', { ip: '10.0.0.3' });
      await ipset.flush();
      expect((await ipset.list('b')).entries).toEqual([]);
      await ipset.destroy('c');
      expect((await ipset.listNames()).sort()).toEqual(['b', 'n']);
      await ipset.destroy();
      expect(await ipset.listNames()).toEqual([]);
    });

    it('speaks hash:net, hash:ip,port and inet6', async () => {
      await ipset.create('nets', { type: 'hash:net', family: 'inet' });
      await ipset.create('ports', { type: 'hash:ip,port', family: 'inet', comment: true });
      await ipset.create('six', { type: 'hash:ip', family: 'inet6', comment: true });
      await ipset.add('nets', { ip: '10.1.0.0', cidr: 16 });
      await ipset.add('nets', { ip: '192.168.7.0/24' });
      await ipset.add('ports', { ip: '10.0.0.1', port: 8080, proto: 'tcp', comment: 'web' });
      await ipset.add('ports', { ip: '10.0.0.1', port: 53, proto: 'udp' });
      await ipset.add('six', { ip: 'fd00::1', comment: 'pod' });
      await ipset.add('six', { ip: '::ffff:10.0.0.9' });
      const sortIp = (a: { ip: string; port?: number }, b: { ip: string; port?: number }) => (a.ip + (a.port ?? '')).localeCompare(b.ip + (b.port ?? ''));
      expect((await ipset.list('nets')).entries.sort(sortIp)).toEqual([{ ip: '10.1.0.0', cidr: 16 }, { ip: '192.168.7.0', cidr: 24 }]);
      expect(await ipset.test('nets', { ip: '10.1.2.3' })).toBe(true);
      expect((await ipset.list('ports')).entries.sort(sortIp)).toEqual([
        { ip: '10.0.0.1', port: 53, proto: 'udp' },
        { ip: '10.0.0.1', port: 8080, proto: 'tcp', comment: 'web' },
      ]);
      expect(await ipset.test('ports', { ip: '10.0.0.1', port: 53, proto: 'tcp' })).toBe(false);
      const six = await ipset.list('six');
      expect(six.family).toBe('inet6');
      expect(six.entries.sort(sortIp)).toEqual([{ ip: '::ffff:10.0.0.9' }, { ip: 'fd00::1', comment: 'pod' }]);
    });

    it('keeps timeouts and counters', async () => {
      await ipset.create('t', { type: 'hash:ip', timeout: 600, counters: true, comment: true });
      const h = await ipset.header('t');
      expect(h).toMatchObject({ timeout: 600, counters: true, comment: true });
      await ipset.add('t', { ip: '10.0.0.1', timeout: 100, comment: 'x' });
      await ipset.add('t', { ip: '10.0.0.2' });
      const entries = (await ipset.list('t')).entries.sort((a, b) => a.ip.localeCompare(b.ip));
      expect(entries[0]).toMatchObject({ ip: '10.0.0.1', comment: 'x', bytes: 0, packets: 0 });
      expect(entries[0]!.timeout).toBeGreaterThan(90);
      expect(entries[0]!.timeout).toBeLessThanOrEqual(100);
      expect(entries[1]!.timeout).toBeGreaterThan(590);
    });

    it('reports exactly the failing entries of a batch and applies the rest', async () => {
      await ipset.create('big', { type: 'hash:ip', comment: true, maxelem: 200000 });
      const n = 20000;
      const dupAt = [1, 777, 2699, 2700, 2701, 5000, 12345, 19999];
      const entries: IpsetEntry[] = [];
      for (let i = 0; i < n; i++) entries.push({ ip: v4(dupAt.includes(i) ? 0 : i), comment: `uid-${i}` });
      const result = await ipset.addMany('big', entries);
      expect(result.failed.map((f) => f.index)).toEqual(dupAt);
      for (const f of result.failed) expect(f.error).toMatchObject({ code: 'IPSET_ERR_EXIST', index: f.index, set: 'big' });
      expect(result.applied).toBe(n - dupAt.length);
      const listed = await ipset.list('big');
      expect(listed.entries.length).toBe(n - dupAt.length);
      expect(listed.entries.find((e) => e.ip === v4(0))?.comment).toBe('uid-0');
    });

    it('streams entries from a generator and deletes them in a batch', async () => {
      await ipset.create('g', { type: 'hash:ip' });
      function* gen() {
        for (let i = 0; i < 5000; i++) yield { ip: v4(i) };
      }
      expect(await ipset.addMany('g', gen())).toEqual({ applied: 5000, failed: [] });
      const del = await ipset.delMany('g', [{ ip: v4(1) }, { ip: v4(1) }, { ip: v4(2) }]);
      expect(del.applied).toBe(2);
      expect(del.failed.map((f) => [f.index, (f.error as IpsetError).code])).toEqual([[1, 'IPSET_ERR_ENTRY_MISSING']]);
      expect(await ipset.delMany('g', [{ ip: v4(1) }], { ignoreMissing: true })).toEqual({ applied: 1, failed: [] });
      let count = 0;
      for await (const e of ipset.entries('g', { chunk: 700 })) {
        expect(e.ip).toMatch(/^10\./);
        count++;
      }
      expect(count).toBe(4998);
    });

    it('streams many chunks and reports failures and invalid entries at their stream index', async () => {
      await ipset.create('s', { type: 'hash:ip', comment: true, maxelem: 1 << 16 });
      const n = 20_000;
      const dupAt = new Set([4095, 4096, 8191, 12_000, n - 1]); // on and around chunk edges
      const badAt = new Set([1, 4097, 16_384]);
      function* gen(): Generator<IpsetEntry> {
        for (let i = 0; i < n; i++) {
          if (badAt.has(i)) yield { ip: '10.0.0.256' };
          else yield { ip: v4(dupAt.has(i) ? 7 : i), comment: `c${i}` };
        }
      }
      const result = await ipset.addMany('s', gen());
      expect(result.failed.map((f) => f.index)).toEqual([...dupAt, ...badAt].sort((a, b) => a - b));
      for (const f of result.failed) {
        if (badAt.has(f.index)) expect(f.error).toBeInstanceOf(InvalidArgumentError);
        else expect(f.error).toMatchObject({ code: 'IPSET_ERR_EXIST', index: f.index, set: 's' });
      }
      expect(result.applied).toBe(n - dupAt.size - badAt.size);
      const listed = await ipset.list('s');
      expect(listed.entries.length).toBe(result.applied);
      expect(listed.entries.find((e) => e.ip === v4(7))?.comment).toBe('c7');
    });

    it('rejects with the error of an iterator that throws, after what was sent is applied', async () => {
      await ipset.create('s', { type: 'hash:ip', maxelem: 1 << 16 });
      const boom = new Error('source failed');
      function* gen(): Generator<IpsetEntry> {
        for (let i = 0; i < 9000; i++) yield { ip: v4(i) };
        throw boom;
      }
      await expect(ipset.addMany('s', gen())).rejects.toBe(boom);
      // What reached the kernel is a prefix of the stream, whole: nothing after it, nothing missing in it.
      const ips = new Set((await ipset.list('s')).entries.map((e) => e.ip));
      expect(ips.size).toBeLessThanOrEqual(9000);
      for (let i = 0; i < ips.size; i++) expect(ips.has(v4(i))).toBe(true);
      await ipset.add('s', { ip: '10.200.0.1' }); // the queue goes on
      expect(await ipset.test('s', { ip: '10.200.0.1' })).toBe(true);
    });

    it('keeps an async batch intact while synchronous calls run before it settles', async () => {
      await ipset.create('s', { type: 'hash:ip', comment: true, maxelem: 1 << 16 });
      // Big enough to go to a worker, which reads the records in place while addSync below writes its own: the
      // turn of the loop lets the batch start first, so the first addSync encodes while the worker still reads.
      const pending = Promise.all(Array.from({ length: 3000 }, (_, i) => ipset.add('s', { ip: v4(i), comment: `async-${i}` })));
      await new Promise((r) => setImmediate(r));
      for (let i = 0; i < 50; i++) ipset.addSync('s', { ip: v4(100_000 + i), comment: `sync-${i}` });
      await pending;
      const byIp = new Map((await ipset.list('s')).entries.map((e) => [e.ip, e.comment]));
      expect(byIp.size).toBe(3050);
      for (let i = 0; i < 3000; i++) expect(byIp.get(v4(i))).toBe(`async-${i}`);
      for (let i = 0; i < 50; i++) expect(byIp.get(v4(100_000 + i))).toBe(`sync-${i}`);
    });

    it('lists a set in chunks while synchronous calls use the client between them', async () => {
      await ipset.create('s', { type: 'hash:ip', comment: true, maxelem: 1 << 16 });
      const n = 30_000; // several of list()'s chunks
      expect((await ipset.addMany('s', Array.from({ length: n }, (_, i) => ({ ip: v4(i), comment: `c${i}` })))).applied).toBe(n);
      const listing = ipset.list('s');
      for (let i = 0; i < 20; i++) {
        ipset.addSync('s', { ip: v4(n + i) });
        await new Promise((r) => setImmediate(r)); // let the list's chunks come in between
      }
      const { entries, elements } = await listing;
      expect(elements).toBeGreaterThanOrEqual(n);
      const ips = new Set(entries.map((e) => e.ip));
      for (let i = 0; i < n; i++) expect(ips.has(v4(i))).toBe(true);
      expect(entries.find((e) => e.ip === v4(123))?.comment).toBe('c123');
      expect((await ipset.list('s')).entries.length).toBe(n + 20);
    });

    it('reads each field of an entry once: what was checked is what is sent', async () => {
      await ipset.create('s', { type: 'hash:ip', comment: true });
      let reads = 0;
      const tricky = {
        ip: '10.9.9.9',
        get comment(): string {
          reads++;
          return reads === 1 ? 'checked' : 'x\0-A INPUT -j DROP';
        },
      };
      ipset.addSync('s', tricky);
      expect(reads).toBe(1);
      expect((await ipset.list('s')).entries).toEqual([{ ip: '10.9.9.9', comment: 'checked' }]);
    });

    it('decodes set-type specific errors by type (hash full)', async () => {
      await ipset.create('tiny', { type: 'hash:ip', maxelem: 2 });
      await ipset.add('tiny', { ip: '10.0.0.1' });
      await ipset.add('tiny', { ip: '10.0.0.2' });
      const err = await rejection(ipset.add('tiny', { ip: '10.0.0.3' }));
      expect(err).toBeInstanceOf(IpsetError);
      expect(err).toMatchObject({ code: 'IPSET_ERR_HASH_FULL', errno: -4352, set: 'tiny', command: 'add' });
      const batch = await ipset.addMany('tiny', [{ ip: '10.0.0.4' }, { ip: '10.0.0.1' }]);
      expect(batch.failed.map((f) => [f.index, (f.error as IpsetError).code])).toEqual([
        [0, 'IPSET_ERR_HASH_FULL'],
        [1, 'IPSET_ERR_EXIST'],
      ]);
    });

    it('settles concurrent adds one by one, each with its own result', async () => {
      await ipset.create('c', { type: 'hash:ip', comment: true });
      await ipset.add('c', { ip: '10.0.0.5', comment: 'old' });
      const results = await Promise.allSettled(
        Array.from({ length: 1000 }, (_, i) => ipset.add('c', { ip: v4(i % 500 === 5 ? 5 : i), comment: `n${i}` })),
      );
      const rejected = results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
      expect(rejected).toEqual([5, 505]);
      for (const i of rejected) expect((results[i] as PromiseRejectedResult).reason).toMatchObject({ code: 'IPSET_ERR_EXIST', entry: { ip: '10.0.0.5' } });
      expect((await ipset.header('c')).elements).toBe(999);
    });

    it('keeps call order between queued operations', async () => {
      await ipset.create('o', { type: 'hash:ip' });
      const a = ipset.add('o', { ip: '10.0.0.1' });
      const d = ipset.del('o', { ip: '10.0.0.1' });
      const t = ipset.test('o', { ip: '10.0.0.1' });
      const b = ipset.add('o', { ip: '10.0.0.1' });
      await Promise.all([a, d, b]);
      expect(await t).toBe(false);
      expect(await ipset.test('o', { ip: '10.0.0.1' })).toBe(true);
    });

    it('offers synchronous single operations', async () => {
      await ipset.create('s', { type: 'hash:ip', comment: true });
      ipset.addSync('s', { ip: '10.0.0.1', comment: 'a' });
      expect(() => ipset.addSync('s', { ip: '10.0.0.1', comment: 'b' })).toThrow(expect.objectContaining({ code: 'IPSET_ERR_EXIST' }));
      ipset.addSync('s', { ip: '10.0.0.1', comment: 'b' }, { replace: true });
      expect(ipset.testSync('s', { ip: '10.0.0.1' })).toBe(true);
      ipset.delSync('s', { ip: '10.0.0.1' });
      expect(ipset.testSync('s', { ip: '10.0.0.1' })).toBe(false);
      expect(() => ipset.delSync('s', { ip: '10.0.0.1' })).toThrow(expect.objectContaining({ code: 'IPSET_ERR_ENTRY_MISSING', ipsetCode: 'IPSET_ERR_EXIST' }));
      ipset.delSync('s', { ip: '10.0.0.1' }, { ignoreMissing: true });
      expect(() => ipset.addSync('missing', { ip: '10.0.0.1' })).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    });

    describe('refuses bad arguments before sending anything', () => {
      const cases: [string, () => Promise<unknown> | unknown, string][] = [
        ['short IPv4', () => ipset.add('v4', { ip: '10.1' }), 'ERR_INVALID_ARG_VALUE'],
        ['leading zero', () => ipset.add('v4', { ip: '010.0.0.1' }), 'ERR_INVALID_ARG_VALUE'],
        ['five octets', () => ipset.add('v4', { ip: '1.2.3.4.5' }), 'ERR_INVALID_ARG_VALUE'],
        ['empty address', () => ipset.add('v4', { ip: '' }), 'ERR_INVALID_ARG_VALUE'],
        ['zone id', () => ipset.add('v6', { ip: 'fe80::1%eth0' }), 'ERR_INVALID_ARG_VALUE'],
        ['IPv6 in inet', () => ipset.add('v4', { ip: 'fd00::1' }), 'ERR_INVALID_ARG_VALUE'],
        ['IPv4-mapped in inet', () => ipset.add('v4', { ip: '::ffff:10.0.0.1' }), 'ERR_INVALID_ARG_VALUE'],
        ['IPv4 in inet6', () => ipset.add('v6', { ip: '10.0.0.1' }), 'ERR_INVALID_ARG_VALUE'],
        ['name of 32 characters', () => ipset.add('x'.repeat(32), { ip: '10.0.0.1' }), 'ERR_INVALID_ARG_VALUE'],
        ['create name of 32 characters', () => ipset.create('x'.repeat(32), { type: 'hash:ip' }), 'ERR_INVALID_ARG_VALUE'],
        ['comment of 256 bytes', () => ipset.add('v4', { ip: '10.0.0.1', comment: 'é'.repeat(128) }), 'ERR_INVALID_ARG_VALUE'],
        ['comment with NUL', () => ipset.add('v4', { ip: '10.0.0.1', comment: 'a\0b' }), 'ERR_INVALID_ARG_VALUE'],
        ['port out of range', () => ipset.add('ports', { ip: '10.0.0.1', port: 65536 }), 'ERR_INVALID_ARG_VALUE'],
        ['missing port', () => ipset.add('ports', { ip: '10.0.0.1' }), 'ERR_INVALID_ARG_VALUE'],
        ['port on hash:ip', () => ipset.add('v4', { ip: '10.0.0.1', port: 80 }), 'ERR_INVALID_ARG_VALUE'],
        ['cidr on hash:ip', () => ipset.add('v4', { ip: '10.0.0.0', cidr: 24 }), 'ERR_INVALID_ARG_VALUE'],
        ['cidr 33', () => ipset.add('nets', { ip: '10.0.0.0', cidr: 33 }), 'ERR_INVALID_ARG_VALUE'],
        ['timeout without extension', () => ipset.add('v4', { ip: '10.0.0.1', timeout: 5 }), 'ERR_INVALID_ARG_VALUE'],
        ['comment without extension', () => ipset.add('nets', { ip: '10.0.0.0/8', comment: 'x' }), 'ERR_INVALID_ARG_VALUE'],
        ['ip not a string', () => ipset.add('v4', { ip: 167772161 as unknown as string }), 'ERR_INVALID_ARG_TYPE'],
        ['unknown type', () => ipset.create('z', { type: 'hash:mac' as 'hash:ip' }), 'ERR_INVALID_ARG_VALUE'],
        ['bad array entry', () => ipset.addMany('v4', [{ ip: '10.0.0.7' }, { ip: '10.1' }]), 'ERR_INVALID_ARG_VALUE'],
        ['sync bad entry', () => ipset.addSync('v4', { ip: '10.1' }), 'ERR_INVALID_ARG_VALUE'],
      ];

      it.each(cases)('%s', async (_label, call, code) => {
        await ipset.create('v4', { type: 'hash:ip', comment: true });
        await ipset.create('v6', { type: 'hash:ip', family: 'inet6' });
        await ipset.create('ports', { type: 'hash:ip,port' });
        await ipset.create('nets', { type: 'hash:net' });
        const before = await Promise.all(['v4', 'v6', 'ports', 'nets'].map((n) => ipset.list(n)));
        let err: unknown;
        if (_label.startsWith('sync')) {
          try {
            call();
          } catch (e) {
            err = e;
          }
        } else {
          // Async methods reject; they never throw at the call site.
          err = await (call() as Promise<unknown>).then(
            () => undefined,
            (e: unknown) => e,
          );
        }
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ code });
        expect((await ipset.listNames()).sort()).toEqual(['nets', 'ports', 'v4', 'v6']);
        expect(await Promise.all(['v4', 'v6', 'ports', 'nets'].map((n) => ipset.list(n)))).toEqual(before);
      });
    });
  });
}
