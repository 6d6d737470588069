// The rtnetlink contract: one suite, run against the real kernel (in a fresh namespace with lo up) and against
// FakeRtnetlink. Whatever the fake answers here, the kernel answered first.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import {
  InvalidArgumentError,
  RtnetlinkError,
  isAlreadyExists,
  isNotFound,
  type Rtnetlink,
  type RouteSpec,
  type RoutingRuleSpec,
  type RtnetlinkChange,
} from '../../lib/index.js';
import { rejection } from '../helpers/rejection.js';

export interface RtnetlinkBackend {
  /** A fresh namespace (lo up, with its addresses) and a client on it. */
  open(): Promise<Rtnetlink>;
  /** Releases what open() made. */
  cleanup(): void;
}

const LOCAL4: RouteSpec = { dst: '0.0.0.0', dstLength: 0, table: 100, type: 'local', oif: 'lo' };
const LOCAL6: RouteSpec = { family: 6, table: 100, type: 'local', oif: 'lo' };
const MARK_RULE: RoutingRuleSpec = { priority: 32764, mark: 0x111, mask: 0xfff, table: 100 };

export function rtnetlinkContract(name: string, backend: () => RtnetlinkBackend): void {
  describe(`rtnetlink contract: ${name}`, () => {
    let world: RtnetlinkBackend;
    let rt: Rtnetlink;

    beforeEach(async () => {
      world = backend();
      rt = await world.open();
    });
    afterEach(() => {
      rt?.close();
      world?.cleanup();
    });

    it('lists lo, finds it by name and by index, and reports a missing link as ENOENT', async () => {
      const links = await rt.links();
      const lo = links.find((l) => l.name === 'lo');
      expect(lo).toMatchObject({ index: 1, up: true, mtu: 65536, linkType: 772 });
      expect(lo!.flags & 0x8).toBe(0x8); // IFF_LOOPBACK
      expect(await rt.link('lo')).toMatchObject({ index: 1, name: 'lo', up: true });
      expect(await rt.link(1)).toMatchObject({ index: 1, name: 'lo' });
      for (const missing of ['nope0', 4242]) {
        const err = await rejection(rt.link(missing));
        expect(err).toBeInstanceOf(RtnetlinkError);
        expect(err).toMatchObject({ code: 'ENOENT', errno: -2, operation: 'link', object: missing });
        expect(isNotFound(err)).toBe(true);
      }
    });

    it("lists lo's addresses of both families, filtered by link and family", async () => {
      const all = await rt.addresses();
      expect(all).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ family: 4, address: '127.0.0.1', prefixLength: 8, link: 1, scope: 'host', label: 'lo' }),
          expect.objectContaining({ family: 6, address: '::1', prefixLength: 128, link: 1, scope: 'host' }),
        ]),
      );
      expect((await rt.addresses({ family: 6 })).every((a) => a.family === 6)).toBe(true);
      expect((await rt.addresses({ link: 'lo', family: 4 })).map((a) => a.address)).toEqual(['127.0.0.1']);
      expect(await rt.addresses({ link: 4242 })).toEqual([]);
    });

    it('adds the local default route on lo in table 100 exclusively, replaces it on request, deletes it once', async () => {
      await rt.addRoute(LOCAL4);
      const routes = await rt.routes({ table: 100 });
      expect(routes).toHaveLength(1);
      expect(routes[0]).toMatchObject({
        family: 4, dst: '0.0.0.0', dstLength: 0, table: 100, type: 'local', scope: 'host', protocol: 'boot', oif: 1,
      });
      const dup = await rejection(rt.addRoute(LOCAL4));
      expect(dup).toBeInstanceOf(RtnetlinkError);
      expect(dup).toMatchObject({ code: 'EEXIST', errno: -17, operation: 'addRoute', object: LOCAL4 });
      expect(isAlreadyExists(dup)).toBe(true);
      await rt.addRoute(LOCAL4, { replace: true });
      expect(await rt.routes({ table: 100 })).toHaveLength(1);

      await rt.delRoute(LOCAL4);
      expect(await rt.routes({ table: 100 })).toEqual([]);
      const gone = await rejection(rt.delRoute(LOCAL4));
      expect(gone).toMatchObject({ code: 'ESRCH', errno: -3, operation: 'delRoute' });
      expect(isNotFound(gone)).toBe(true);
      await rt.delRoute(LOCAL4, { ignoreMissing: true });
    });

    it('does the same for IPv6 (local ::/0 dev lo table 100)', async () => {
      await rt.addRoute(LOCAL6);
      const routes = await rt.routes({ table: 100, family: 6 });
      expect(routes).toHaveLength(1);
      expect(routes[0]).toMatchObject({ family: 6, dst: '::', dstLength: 0, table: 100, type: 'local', oif: 1 });
      expect(await rejection(rt.addRoute(LOCAL6))).toMatchObject({ code: 'EEXIST' });
      expect(await rt.routes({ table: 100, family: 4 })).toEqual([]);
      await rt.delRoute(routes[0]!);
      expect(await rt.routes({ table: 100 })).toEqual([]);
    });

    it('keeps table ids above 255, blackhole routes and metrics apart', async () => {
      await rt.addRoute({ dst: '10.9.0.0', dstLength: 16, table: 70000, type: 'blackhole' });
      await rt.addRoute({ dst: '10.9.0.0', dstLength: 16, table: 70000, type: 'blackhole', priority: 10 });
      await rt.addRoute({ dst: '10.8.0.0', dstLength: 24, table: 300, oif: 1, priority: 7 });
      const big = await rt.routes({ table: 70000 });
      expect(big.map((r) => [r.dst, r.dstLength, r.type, r.priority ?? 0]).sort()).toEqual([
        ['10.9.0.0', 16, 'blackhole', 0],
        ['10.9.0.0', 16, 'blackhole', 10],
      ]);
      expect(await rt.routes({ table: 300 })).toEqual([
        expect.objectContaining({ dst: '10.8.0.0', dstLength: 24, type: 'unicast', scope: 'link', oif: 1, priority: 7 }),
      ]);
      // A delete without a metric takes the first match; with one, exactly that route.
      await rt.delRoute({ dst: '10.9.0.0', dstLength: 16, table: 70000, priority: 10 });
      expect((await rt.routes({ table: 70000 })).map((r) => r.priority ?? 0)).toEqual([0]);
    });

    it('answers ENODEV for an unknown oif and ENETUNREACH for an unreachable gateway, and adds nothing', async () => {
      const nodev = await rejection(rt.addRoute({ dst: '10.1.0.0', dstLength: 16, table: 100, oif: 4242 }));
      expect(nodev).toMatchObject({ code: 'ENODEV', operation: 'addRoute' });
      const named = await rejection(rt.addRoute({ dst: '10.1.0.0', dstLength: 16, table: 100, oif: 'nope0' }));
      expect(named).toMatchObject({ code: 'ENODEV' });
      const unreach = await rejection(rt.addRoute({ dst: '10.1.0.0', dstLength: 16, table: 100, gateway: '192.0.2.1' }));
      expect(unreach).toBeInstanceOf(RtnetlinkError);
      expect(unreach).toMatchObject({ code: 'ENETUNREACH', errno: -101 });
      expect(await rt.routes({ table: 100 })).toEqual([]);
    });

    it("lists the namespace's default rules", async () => {
      const v4 = (await rt.rules({ family: 4 })).map((r) => [r.priority, r.table, r.action]);
      expect(v4).toEqual([
        [0, 255, 'toTable'],
        [32766, 254, 'toTable'],
        [32767, 253, 'toTable'],
      ]);
      const v6 = (await rt.rules({ family: 6 })).map((r) => [r.priority, r.table]);
      expect(v6).toEqual([
        [0, 255],
        [32766, 254],
      ]);
      expect(await rt.rules()).toHaveLength(5);
    });

    it('adds the fwmark rule exclusively and deletes it once, for both families', async () => {
      for (const family of [4, 6] as const) {
        const rule = { ...MARK_RULE, family };
        await rt.addRule(rule);
        const found = (await rt.rules({ family })).filter((r) => r.priority === 32764);
        expect(found).toEqual([expect.objectContaining({ family, priority: 32764, mark: 0x111, mask: 0xfff, table: 100, action: 'toTable' })]);
        const dup = await rejection(rt.addRule(rule));
        expect(dup).toMatchObject({ code: 'EEXIST', errno: -17, operation: 'addRule', object: rule });
        expect(isAlreadyExists(dup)).toBe(true);
        await rt.delRule(found[0]!);
        const gone = await rejection(rt.delRule(rule));
        expect(gone).toMatchObject({ code: 'ENOENT', errno: -2, operation: 'delRule' });
        expect(isNotFound(gone)).toBe(true);
        await rt.delRule(rule, { ignoreMissing: true });
      }
      expect(await rt.rules()).toHaveLength(5);
    });

    it('keeps a rule with source, interface and invert fields as written', async () => {
      const rule: RoutingRuleSpec = { priority: 100, src: '10.1.0.0', srcLength: 16, iifname: 'lo', invert: true, table: 300 };
      await rt.addRule(rule);
      const found = (await rt.rules({ family: 4 })).find((r) => r.priority === 100);
      expect(found).toMatchObject({ src: '10.1.0.0', srcLength: 16, iifname: 'lo', invert: true, table: 300 });
      await rt.delRule(rule);
      expect((await rt.rules({ family: 4 })).some((r) => r.priority === 100)).toBe(false);
    });

    const badRoutes: [string, unknown, string][] = [
      ['host bits in dst', { dst: '10.0.0.1', dstLength: 8, oif: 1 }, 'route.dst'],
      ['a prefix longer than the family', { dst: '10.0.0.0', dstLength: 33, oif: 1 }, 'route.dstLength'],
      ['table 0', { table: 0, oif: 1 }, 'route.table'],
      ['a gateway of the other family', { dst: '10.0.0.0', dstLength: 8, gateway: 'fd00::1' }, 'route.gateway'],
      ['an unknown type', { type: 'nat', oif: 1 }, 'route.type'],
      ['an unknown field', { oif: 1, via: '10.0.0.1' }, 'route.via'],
      ['a unicast route with no way out', { dst: '10.0.0.0', dstLength: 8 }, 'route'],
      ['a blackhole with an oif', { type: 'blackhole', oif: 1 }, 'route'],
      ['an address with a newline', { dst: '10.0.0.0\n', oif: 1 }, 'route.dst'],
      ['a link name with a slash', { oif: 'a/b' }, 'route.oif'],
    ];
    for (const [what, spec, argument] of badRoutes) {
      it(`refuses a route with ${what} before sending anything`, async () => {
        const before = await rt.routes();
        const err = await rejection(rt.addRoute(spec as RouteSpec));
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ argument });
        expect(await rt.routes()).toEqual(before);
      });
    }

    const badRules: [string, unknown, string][] = [
      ['a mask without a mark', { mask: 0xfff, table: 100 }, 'rule.mask'],
      ['no table for toTable', { priority: 5 }, 'rule.table'],
      ['a mark past 32 bits', { mark: 2 ** 32, table: 100 }, 'rule.mark'],
      ['a negative priority', { priority: -1, table: 100 }, 'rule.priority'],
      ['an interface name over 15 bytes', { iifname: 'a'.repeat(16), table: 100 }, 'rule.iifname'],
      ['a family that is neither', { family: 5, table: 100 }, 'rule.family'],
    ];
    for (const [what, spec, argument] of badRules) {
      it(`refuses a rule with ${what} before sending anything`, async () => {
        const before = await rt.rules();
        const err = await rejection(rt.addRule(spec as RoutingRuleSpec));
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ argument });
        expect(await rt.rules()).toEqual(before);
      });
    }

    it('batch makes rule and route changes in one exchange, each answered on its own, in order', async () => {
      const MISSING: RouteSpec = { dst: '10.7.0.0', dstLength: 16, table: 100, type: 'blackhole' };
      const changes: RtnetlinkChange[] = [
        { op: 'addRule', rule: MARK_RULE },
        { op: 'addRoute', route: LOCAL4 },
        { op: 'addRoute', route: LOCAL4 },
        { op: 'addRule', rule: { ...MARK_RULE, family: 6 } },
        { op: 'delRoute', route: MISSING },
        { op: 'delRule', rule: { ...MARK_RULE, priority: 7 }, ignoreMissing: true },
        { op: 'addRoute', route: LOCAL4, replace: true },
      ];
      const outcomes = await rt.batch(changes);
      expect(outcomes).toHaveLength(7);
      expect(outcomes.map((o) => o?.code)).toEqual([undefined, undefined, 'EEXIST', undefined, 'ESRCH', undefined, undefined]);
      expect(outcomes[2]).toBeInstanceOf(RtnetlinkError);
      expect(outcomes[2]).toMatchObject({ errno: -17, operation: 'addRoute', object: LOCAL4 });
      expect(isAlreadyExists(outcomes[2])).toBe(true);
      expect(outcomes[4]).toMatchObject({ errno: -3, operation: 'delRoute', object: MISSING });
      expect(isNotFound(outcomes[4])).toBe(true);
      expect((await rt.rules()).filter((r) => r.priority === 32764).map((r) => r.family).sort()).toEqual([4, 6]);
      expect(await rt.routes({ table: 100 })).toEqual([expect.objectContaining({ family: 4, type: 'local', oif: 1 })]);

      const undo = await rt.batch([
        { op: 'delRule', rule: MARK_RULE },
        { op: 'delRule', rule: { ...MARK_RULE, family: 6 } },
        { op: 'delRoute', route: LOCAL4 },
        { op: 'delRoute', route: LOCAL4, ignoreMissing: true },
      ]);
      expect(undo).toEqual([undefined, undefined, undefined, undefined]);
      expect(await rt.rules()).toHaveLength(5);
      expect(await rt.routes({ table: 100 })).toEqual([]);
      expect(await rt.batch([])).toEqual([]);
    });

    it('batch answers a route whose interface name is unknown with ENODEV in its place, and makes the others', async () => {
      const outcomes = await rt.batch([
        { op: 'addRoute', route: { dst: '10.1.0.0', dstLength: 16, table: 100, oif: 'nope0' } },
        { op: 'addRoute', route: LOCAL4 },
      ]);
      expect(outcomes[0]).toMatchObject({ code: 'ENODEV', operation: 'addRoute' });
      expect(outcomes[1]).toBeUndefined();
      expect(await rt.routes({ table: 100 })).toEqual([expect.objectContaining({ type: 'local', oif: 1 })]);
    });

    it('batch sends more changes than one exchange takes, and keeps each answer at its index', async () => {
      const route = (i: number): RouteSpec => ({ dst: `10.${i >> 8}.${i & 255}.0`, dstLength: 24, table: 300, type: 'blackhole' });
      const changes: RtnetlinkChange[] = Array.from({ length: 150 }, (_, i) => ({ op: 'addRoute', route: route(i) }));
      changes[100] = { op: 'addRoute', route: route(3) };
      changes[149] = { op: 'addRoute', route: route(70) };
      const outcomes = await rt.batch(changes);
      const refused = outcomes.flatMap((o, i) => (o === undefined ? [] : [[i, o.code]]));
      expect(refused).toEqual([
        [100, 'EEXIST'],
        [149, 'EEXIST'],
      ]);
      expect(await rt.routes({ table: 300 })).toHaveLength(148);
    });

    it('batch refuses a bad change, a hole or an unknown op before sending anything, naming it', async () => {
      const before = [await rt.rules(), await rt.routes()];
      const bad: [unknown, string][] = [
        [[{ op: 'addRule', rule: MARK_RULE }, { op: 'addRoute', route: { dst: '10.0.0.1', dstLength: 8, oif: 1 } }], 'changes[1].route.dst'],
        [[{ op: 'addRule', rule: MARK_RULE }, , { op: 'addRoute', route: LOCAL4 }], 'changes[1]'],
        [[{ op: 'replaceRoute', route: LOCAL4 }], 'changes[0].op'],
        [[{ op: 'delRule', rule: MARK_RULE, ignoreMissing: 'yes' }], 'changes[0].ignoreMissing'],
        [[null], 'changes[0]'],
        ['addRule', 'changes'],
      ];
      for (const [changes, argument] of bad) {
        const err = await rejection(rt.batch(changes as RtnetlinkChange[]));
        expect(err, argument).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ argument });
      }
      expect([await rt.rules(), await rt.routes()]).toEqual(before);
    });

    it('runs operations in call order, and finishes what was queued when closed', async () => {
      const add = rt.addRoute(LOCAL4);
      const list = rt.routes({ table: 100 });
      const del = rt.delRoute(LOCAL4);
      const after = rt.routes({ table: 100 });
      rt.close();
      await add;
      expect(await list).toHaveLength(1);
      await del;
      expect(await after).toEqual([]);
      expect(await rejection(rt.links())).toMatchObject({ code: 'ERR_RTNETLINK_CLOSED' });
    });
  });
}
