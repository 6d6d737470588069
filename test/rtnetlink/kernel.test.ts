// The rtnetlink contract against the kernel in fresh namespaces, and interop with iproute2 both ways: `ip` sees what
// podnet wrote, podnet lists what `ip` wrote.
import { describe, expect, it } from 'vitest';

import { Netns, Rtnetlink } from '../../lib/index.js';
import { TestNetns, withNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { rtnetlinkContract } from './contract.js';

describePrivileged('rtnetlink against the kernel', () => {
  rtnetlinkContract('kernel', () => {
    const ns = new TestNetns('rt');
    return {
      open: () => Rtnetlink.open({ netns: ns.path }),
      cleanup: () => ns.delete(),
    };
  });

  describe('interop with iproute2', () => {
    it('ip shows the policy rule and the local route podnet wrote, for both families', async () => {
      await withNetns(async (ns) => {
        using rt = await Rtnetlink.open({ netns: Netns.open(ns.path) });
        for (const family of [4, 6] as const) {
          await rt.addRule({ family, priority: 32764, mark: 0x111, mask: 0xfff, table: 100 });
          await rt.addRoute({ family, table: 100, type: 'local', oif: 'lo' });
        }
        expect(ns.ip('rule', 'show')).toContain('32764:\tfrom all fwmark 0x111/0xfff lookup 100');
        expect(ns.ip('-6', 'rule', 'show')).toContain('32764:\tfrom all fwmark 0x111/0xfff lookup 100');
        expect(ns.ip('route', 'show', 'table', '100').trim()).toBe('local default dev lo scope host');
        expect(ns.ip('-6', 'route', 'show', 'table', '100').trim()).toMatch(/^local default dev lo metric 1024 pref medium$/);
      });
    });

    it('lists what ip wrote: routes with metrics, gateways and big tables, rules with selectors', async () => {
      await withNetns(async (ns) => {
        ns.ip('link', 'add', 'pn0', 'mtu', '1400', 'type', 'veth', 'peer', 'name', 'pn1');
        ns.ip('link', 'set', 'pn1', 'up');
        ns.ip('link', 'set', 'pn0', 'up');
        ns.ip('addr', 'add', '192.0.2.10/24', 'dev', 'pn0');
        ns.ip('route', 'add', '198.51.100.0/24', 'via', '192.0.2.1', 'dev', 'pn0', 'table', '4000', 'metric', '7', 'proto', 'static');
        ns.ip('rule', 'add', 'from', '10.1.0.0/16', 'iif', 'pn0', 'lookup', '4000', 'pref', '100');
        ns.ip('rule', 'add', 'not', 'fwmark', '0x5/0xff', 'lookup', '4000', 'pref', '101');
        using rt = await Rtnetlink.open({ netns: ns.path });
        const link = await rt.link('pn0');
        expect(link).toMatchObject({ name: 'pn0', up: true, mtu: 1400, kind: 'veth', linkType: 1 });
        expect(link.address).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
        expect(await rt.addresses({ link: 'pn0', family: 4 })).toEqual([
          expect.objectContaining({ address: '192.0.2.10', prefixLength: 24, link: link.index, scope: 'universe', label: 'pn0' }),
        ]);
        expect(await rt.routes({ table: 4000 })).toEqual([
          expect.objectContaining({
            family: 4, dst: '198.51.100.0', dstLength: 24, gateway: '192.0.2.1', oif: link.index, priority: 7,
            protocol: 'static', type: 'unicast', scope: 'universe', table: 4000,
          }),
        ]);
        const rules = await rt.rules({ family: 4 });
        expect(rules.find((r) => r.priority === 100)).toMatchObject({ src: '10.1.0.0', srcLength: 16, iifname: 'pn0', table: 4000 });
        expect(rules.find((r) => r.priority === 101)).toMatchObject({ mark: 5, mask: 0xff, invert: true, table: 4000 });
        // The connected route the address made, in main and local, is listed like any other.
        const main = await rt.routes({ table: 254, family: 4 });
        expect(main).toEqual([expect.objectContaining({ dst: '192.0.2.0', dstLength: 24, protocol: 'kernel', scope: 'link', prefsrc: '192.0.2.10' })]);
        // What podnet deletes, ip no longer shows.
        await rt.delRoute((await rt.routes({ table: 4000 }))[0]!);
        await rt.delRule(rules.find((r) => r.priority === 101)!);
        expect(ns.ip('route', 'show', 'table', '4000')).toBe('');
        expect(ns.ip('rule', 'show')).not.toContain('101:');
      });
    });
  });
});
