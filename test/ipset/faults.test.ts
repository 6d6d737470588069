// The netlink engine under faults, driven through FakeIpsetKernel: a lost ACK, an
// injected error, a truncated reply. Each ends in a typed error, nothing
// hangs, and the same client keeps working afterwards.
import { beforeEach, describe, expect, it } from 'vitest';

import { Ipset, IpsetError, PodnetSystemError } from '../../lib/index.js';
import { FakeIpsetKernel } from '../../lib/testing/index.js';

describe('ipset engine faults (FakeIpsetKernel)', () => {
  let fake: FakeIpsetKernel;
  let ipset: Ipset;

  beforeEach(async () => {
    fake = new FakeIpsetKernel();
    ipset = await Ipset.open({ netlink: fake, timeoutMs: 100 });
    await ipset.create('s', { type: 'hash:ip', comment: true });
  });

  it('reports a lost ACK as ETIMEDOUT and stays usable', async () => {
    fake.dropNextReply({ command: 'add' });
    const err = await ipset.add('s', { ip: '10.0.0.1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'ETIMEDOUT', errno: -110, set: 's' });
    // The add itself was applied (only its ACK was lost), as with the kernel.
    expect(await ipset.test('s', { ip: '10.0.0.1' })).toBe(true);
    await ipset.add('s', { ip: '10.0.0.2' });
    expect((await ipset.list('s')).entries.map((e) => e.ip).sort()).toEqual(['10.0.0.1', '10.0.0.2']);
  });

  it('passes an injected kernel error through as IpsetError and applies nothing', async () => {
    fake.failNext(4100, { command: 'destroy' });
    const err = await ipset.destroy('s').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpsetError);
    expect(err).toMatchObject({ code: 'IPSET_ERR_BUSY', errno: -4100, command: 'destroy', set: 's' });
    expect(await ipset.listNames()).toEqual(['s']);
    await ipset.destroy('s');
    expect(await ipset.listNames()).toEqual([]);
  });

  it('rejects a truncated reply as malformed instead of reading past it', async () => {
    await ipset.addMany('s', Array.from({ length: 3000 }, (_, i) => ({ ip: `10.0.${i >> 8}.${i & 255}`, comment: `c${i}` })));
    fake.truncateNextReply(100, { command: 'list' });
    const err = await ipset.list('s').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PodnetSystemError);
    expect(err).toMatchObject({ code: 'EBADMSG', set: 's' });
    expect((await ipset.list('s')).entries).toHaveLength(3000);
  });

  it('reports BUSY and REFERENCED for a set in use', async () => {
    fake.setReferenced('s', 1);
    expect(await ipset.destroy('s').catch((e: unknown) => e)).toMatchObject({ code: 'IPSET_ERR_BUSY' });
    expect(await ipset.rename('s', 't').catch((e: unknown) => e)).toMatchObject({ code: 'IPSET_ERR_REFERENCED' });
    expect((await ipset.header('s')).references).toBe(1);
  });

  it('lets the fake state be inspected read-only', async () => {
    await ipset.add('s', { ip: '10.0.0.9', comment: 'pod-a' });
    const dump = fake.dump();
    expect(dump.sets).toHaveLength(1);
    expect(dump.sets[0]).toMatchObject({ name: 's', type: 'hash:ip', family: 'inet', entries: [{ ip: '10.0.0.9', comment: 'pod-a' }] });
    expect(Object.isFrozen(dump.sets[0])).toBe(true);
  });
});
