// A dump the kernel flags NLM_F_DUMP_INTR (the table changed while it was read) is taken again; one that keeps
// being interrupted fails with EAGAIN instead of returning a listing that may miss or repeat objects.
import { expect, it } from 'vitest';

import { Rtnetlink } from '../../lib/index.js';
import { FakeRtnetlink } from '../../lib/testing/index.js';
import { rejection } from '../helpers/rejection.js';

it('takes an interrupted dump again and returns the complete listing', async () => {
  const fake = new FakeRtnetlink();
  using rt = await Rtnetlink.open({ netlink: fake });
  const whole = await rt.rules();
  fake.interruptNextDump();
  expect(await rt.rules()).toEqual(whole);
  expect(whole).toHaveLength(5);
});

it('fails with EAGAIN after 5 interrupted attempts in a row, and works after', async () => {
  const fake = new FakeRtnetlink();
  using rt = await Rtnetlink.open({ netlink: fake });
  for (let i = 0; i < 5; i++) fake.interruptNextDump();
  expect(await rejection(rt.routes())).toMatchObject({ code: 'EAGAIN', errno: -11 });
  expect((await rt.links()).map((l) => l.name)).toEqual(['lo']);
});
