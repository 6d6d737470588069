// The in-pod policy routing helpers (lib/agent/routes.ts) on the kernel and on FakeRtnetlink: what applyPodRouting
// reports as created, what it does with a rule or route already there, and, on the fake (a refusal needs a fault),
// that a refused change leaves nothing of the call behind.
import { afterEach, describe, expect, it } from 'vitest';

import { applyPodRouting, removePodRouting, undoPodRouting } from '../../lib/agent/routes.js';
import { Rtnetlink, RtnetlinkError } from '../../lib/index.js';
import { FakeRtnetlink } from '../../lib/testing/index.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';

interface World {
  rt: Rtnetlink;
  cleanup(): void;
}

const open: [string, () => Promise<World>, boolean][] = [
  ['FakeRtnetlink', async () => ({ rt: await Rtnetlink.open({ netlink: new FakeRtnetlink() }), cleanup: () => undefined }), false],
  [
    'kernel',
    async () => {
      const ns = new TestNetns('rts');
      try {
        return { rt: await Rtnetlink.open({ netns: ns.path }), cleanup: () => ns.delete() };
      } catch (err) {
        ns.delete();
        throw err;
      }
    },
    true,
  ],
];

async function state(rt: Rtnetlink): Promise<[number[], number[]]> {
  const rules = (await rt.rules()).filter((r) => r.priority === 32764).map((r) => r.family);
  const routes = (await rt.routes({ table: 100 })).map((r) => r.family);
  return [rules.sort(), routes.sort()];
}

for (const [name, make, privileged] of open) {
  (privileged ? describePrivileged : describe)(`in-pod policy routing: ${name}`, () => {
    let world: World | undefined;
    afterEach(() => {
      world?.rt.close();
      world?.cleanup();
      world = undefined;
    });

    it('applyPodRouting creates the rule and the route of each family, and reports them created', async () => {
      world = await make();
      const created = await applyPodRouting(world.rt, [4, 6]);
      expect(created).toEqual([
        { family: 4, rule: true, route: true },
        { family: 6, rule: true, route: true },
      ]);
      expect(await state(world.rt)).toEqual([
        [4, 6],
        [4, 6],
      ]);
    });

    it('a second applyPodRouting creates nothing, keeps one of each, and removePodRouting takes them out (twice is fine)', async () => {
      world = await make();
      await applyPodRouting(world.rt, [4]);
      expect(await applyPodRouting(world.rt, [4])).toEqual([{ family: 4, rule: false, route: false }]);
      expect(await state(world.rt)).toEqual([[4], [4]]);
      await removePodRouting(world.rt, [4]);
      await removePodRouting(world.rt, [4]);
      expect(await state(world.rt)).toEqual([[], []]);
    });

    it('undoPodRouting takes out only what a call created', async () => {
      world = await make();
      await world.rt.addRule({ family: 4, priority: 32764, mark: 0x111, mask: 0xfff, table: 100 });
      const created = await applyPodRouting(world.rt, [4]);
      expect(created).toEqual([{ family: 4, rule: false, route: true }]);
      await undoPodRouting(world.rt, created);
      expect(await state(world.rt)).toEqual([[4], []]);
    });
  });
}

describe('in-pod policy routing: a refused change (FakeRtnetlink faults)', () => {
  it('a refused route throws its error and takes out the rule the same call created', async () => {
    const fake = new FakeRtnetlink();
    using rt = await Rtnetlink.open({ netlink: fake });
    fake.failNext(-12, { type: 'newroute', family: 6 });
    const err = await rejection(applyPodRouting(rt, [4, 6]));
    expect(err).toBeInstanceOf(RtnetlinkError);
    expect(err).toMatchObject({ code: 'ENOMEM', operation: 'addRoute' });
    expect(await state(rt)).toEqual([[], []]);
  });

  it('a route refused where one was there throws, takes out the rule it created, and leaves the route', async () => {
    const fake = new FakeRtnetlink();
    using rt = await Rtnetlink.open({ netlink: fake });
    await rt.addRoute({ family: 4, table: 100, type: 'local', oif: 1 });
    fake.failNext(-16, { type: 'newroute' });
    const err = await rejection(applyPodRouting(rt, [4]));
    expect(err).toMatchObject({ code: 'EBUSY', operation: 'addRoute' });
    expect(await state(rt)).toEqual([[], [4]]);
    expect(fake.pendingFaults).toBe(0);
  });
});
