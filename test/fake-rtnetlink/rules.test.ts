// Rule semantics without root: the default rules, the automatic priority, what EXCL calls a duplicate, what a
// delete matches, the dump format, and rules steering the gateway lookups of later routes.
import { describe, expect, it } from 'vitest';

import { FakeRtnetlink } from '../../lib/testing/index.js';
import { allMessages, attrs, codes, firstError } from './helpers/replies.js';
import { ACK, CREATE, REQ, T, attr, dump, msg, route, rule, type RuleOptions } from './helpers/requests.js';

const add = (fake: FakeRtnetlink, o: RuleOptions) => codes(fake.exchange(rule(o)))[0];
const del = (fake: FakeRtnetlink, o: RuleOptions) => codes(fake.exchange(rule(o, T.delrule)))[0];
const prios = (fake: FakeRtnetlink, family: 4 | 6 = 4) => fake.dump().rules.filter((r) => r.family === family).map((r) => r.priority);
const PODNET: RuleOptions = { priority: 32764, mark: 0x111, mask: 0xfff, table: 100 };

describe('FakeRtnetlink rules', () => {
  it('starts with local, main and default for IPv4 and local and main for IPv6, from the kernel', () => {
    expect(new FakeRtnetlink().dump().rules.map((r) => [r.family, r.priority, r.table, r.protocol])).toEqual([
      [4, 0, 255, 2],
      [4, 32766, 254, 2],
      [4, 32767, 253, 2],
      [6, 0, 255, 2],
      [6, 32766, 254, 2],
    ]);
  });

  it("adds podnet's fwmark rule once with EXCL (EEXIST after), twice without, and deletes each copy once", () => {
    const fake = new FakeRtnetlink();
    expect(add(fake, PODNET)).toBe(0);
    expect(add(fake, PODNET)).toBe(-17);
    expect(add(fake, { ...PODNET, flags: REQ | ACK | CREATE })).toBe(0);
    expect(prios(fake)).toEqual([0, 32764, 32764, 32766, 32767]);
    expect(del(fake, PODNET)).toBe(0);
    expect(del(fake, PODNET)).toBe(0);
    expect(del(fake, PODNET)).toBe(-2);
  });

  it('gives a rule without priority one below the second rule, as fib_default_rule_pref does', () => {
    const fake = new FakeRtnetlink();
    expect(add(fake, { mark: 1, table: 101 })).toBe(0);
    expect(add(fake, { mark: 2, table: 102 })).toBe(0);
    expect(add(fake, { family: 6, mark: 3, table: 103 })).toBe(0);
    expect(prios(fake)).toEqual([0, 32764, 32765, 32766, 32767]);
    expect(prios(fake, 6)).toEqual([0, 32765, 32766]);
  });

  it('does not count the flags as identity under EXCL, but the protocol and action', () => {
    const fake = new FakeRtnetlink();
    add(fake, PODNET);
    expect(add(fake, { ...PODNET, ruleFlags: 2 })).toBe(-17);
    expect(add(fake, { ...PODNET, protocol: 4 })).toBe(0);
    expect(add(fake, { ...PODNET, action: 0 })).toBe(0);
  });

  it('matches a delete on the fields it sets: a mark alone compares the whole mask, so it misses 0x111/0xfff', () => {
    const fake = new FakeRtnetlink();
    add(fake, PODNET);
    expect(del(fake, { mark: 0x111, table: 100 })).toBe(-2);
    expect(del(fake, { mark: 0x111, mask: 0xfff, table: 101 })).toBe(-2);
    expect(del(fake, { priority: 32765, mark: 0x111, mask: 0xfff })).toBe(-2);
    expect(del(fake, { mask: 0xfff })).toBe(0);
    // A delete that sets nothing takes the first rule: priority 0, lookup local.
    expect(del(fake, {})).toBe(0);
    expect(prios(fake)).toEqual([32766, 32767]);
  });

  it.each([
    ['family 0', rule({ priority: 5, table: 100 }).fill(0, 16, 17), -97, 'Rule family not supported'],
    ['a short header', msg(T.newrule, REQ | ACK, Uint8Array.of(2, 0, 0)), -22, 'Invalid msg length'],
    ['a backward goto', rule({ priority: 1008, action: 2, goto: 1006 }), -22, 'Backward goto not supported'],
    ['goto without a target', rule({ priority: 1008, action: 2 }), -22, 'Missing goto target for action goto'],
    ['IPv6 to table 0', rule({ family: 6, priority: 5, table: 0 }), -22, 'Invalid table'],
    ['a src length over 32', rule({ priority: 5, src: '10.0.0.0', srcLen: 33, table: 100 }), -22, 'Invalid source address'],
    ['tos 0x20', rule({ priority: 5, tos: 0x20, table: 100 }), -22, 'Invalid tos'],
    ['a 2-byte FRA_PRIORITY', rule({ table: 100, extra: [attr(6, Uint8Array.of(1, 2))] }), -34, 'Error parsing msg'],
    ['FRA_UID_RANGE (not modelled)', rule({ priority: 5, table: 100, extra: [attr(20, new Uint8Array(8))] }), -95, 'fake-rtnetlink: rules with FRA_UID_RANGE are not modelled'],
  ])('refuses %s', (_name, request, errno, text) => {
    expect(firstError(new FakeRtnetlink().exchange(request))).toMatchObject({ error: errno, msg: text });
  });

  it('gives an IPv4 rule to table 0 the first unused table, as fib_empty_table does', () => {
    const fake = new FakeRtnetlink();
    expect(add(fake, { priority: 5, table: 0 })).toBe(0);
    expect(add(fake, { priority: 6, table: 0 })).toBe(0);
    expect(fake.dump().rules.filter((r) => r.priority === 5 || r.priority === 6).map((r) => r.table)).toEqual([1, 2]);
  });

  it('dumps a rule attribute for attribute: table, suppress_prefixlen, protocol, names, priority, mark, mask', () => {
    const fake = new FakeRtnetlink();
    add(fake, { ...PODNET, iif: 'lo', oif: 'nope', src: '10.0.0.0', srcLen: 8 });
    const m = allMessages(fake.exchange(dump(T.getrule, 2))).find((x) => x.type === 32 && x.bytes[20] === 100)!;
    expect(Buffer.from(m.bytes.subarray(16, 28)).toString('hex')).toBe('020008006400000110000000');
    expect(attrs(m.bytes, 28).map((a) => a.type)).toEqual([15, 14, 21, 3, 17, 6, 10, 16, 2]);
  });

  it('marks a goto whose target no rule has as unresolved, until one is added', () => {
    const fake = new FakeRtnetlink();
    add(fake, { priority: 100, action: 2, goto: 200 });
    const flagsOf100 = () => allMessages(fake.exchange(dump(T.getrule, 2))).find((x) => x.type === 32 && attrs(x.bytes, 28).some((a) => a.type === 6 && a.value[0] === 100))!.bytes[24];
    expect(flagsOf100()).toBe(4);
    add(fake, { priority: 200, table: 100 });
    expect(flagsOf100()).toBe(0);
  });

  it('sends gateway lookups through the rules once one changed: a rule to a table can make a gateway reachable', () => {
    const fake = new FakeRtnetlink();
    fake.addLink({ name: 'd0' });
    const viaGw = route({ dst: '10.9.0.0', dstLen: 24, gateway: '192.0.2.1' });
    expect(codes(fake.exchange(route({ dst: '192.0.2.0', dstLen: 24, oif: 2, scope: 253, table: 50 })))).toEqual([0]);
    expect(codes(fake.exchange(viaGw))).toEqual([-101]);
    expect(add(fake, { priority: 10, table: 50 })).toBe(0);
    expect(codes(fake.exchange(viaGw))).toEqual([0]);
    // An unreachable rule in front stops the lookup with its own error.
    expect(add(fake, { priority: 5, action: 7 })).toBe(0);
    expect(codes(fake.exchange(route({ dst: '10.8.0.0', dstLen: 24, gateway: '192.0.2.1' })))).toEqual([-101]);
  });
});
