import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, RuleSet } from '../../lib/index.js';
import { quoteArg, tokenizeLine } from '../../lib/iptables/text.js';

function firstError(build: (rs: RuleSet) => void): unknown {
  const rs = new RuleSet();
  build(rs);
  try {
    rs.render();
  } catch (err) {
    return err;
  }
  throw new Error('expected render() to throw');
}

describe('RuleSet rendering', () => {
  it('renders owned chains and their rules first, then the other rules in the order they were added, one block per table', () => {
    const rs = new RuleSet()
      .chain('nat', 'ISTIO_PRERT')
      .chain('nat', 'ISTIO_POSTRT')
      .append('nat', 'PREROUTING', ['-j', 'ISTIO_PRERT'])
      .insert('nat', 'POSTROUTING', 1, ['-j', 'ISTIO_POSTRT'])
      .append('nat', 'ISTIO_PRERT', ['-p', 'tcp', '-j', 'REDIRECT', '--to-ports', '15006'])
      .append('filter', 'INPUT', ['-p', 'tcp', '-m', 'tcp', '--dport', '22', '-j', 'ACCEPT']);
    expect(rs.render()).toBe(
      [
        '*nat',
        ':ISTIO_PRERT - [0:0]',
        ':ISTIO_POSTRT - [0:0]',
        '-A ISTIO_PRERT -p tcp -j REDIRECT --to-ports 15006',
        '-A PREROUTING -j ISTIO_PRERT',
        '-I POSTROUTING 1 -j ISTIO_POSTRT',
        'COMMIT',
        '*filter',
        '-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT',
        'COMMIT',
        '',
      ].join('\n'),
    );
    expect(rs.tables).toEqual(['nat', 'filter']);
    expect(rs.ownedChains('nat')).toEqual(['ISTIO_PRERT', 'ISTIO_POSTRT']);
  });

  it('renders an empty rule set as empty input', () => {
    expect(new RuleSet().render()).toBe('');
  });

  it.each([
    ['plain', 'abc', 'abc'],
    ['space', 'a b', '"a b"'],
    ['double quote', 'say "hi"', '"say \\"hi\\""'],
    ['single quote', "it's", '"it\'s"'],
    ['backslash', 'a\\b', '"a\\\\b"'],
    ['restore line inside', 'x -A INPUT -j DROP', '"x -A INPUT -j DROP"'],
    ['unicode', 'pod café', '"pod café"'],
  ])('quotes %s so the restore tokenizer reads it back as one argument', (_name, arg, quoted) => {
    expect(quoteArg(arg)).toBe(quoted);
    expect(tokenizeLine(`-A C -m comment --comment ${quoteArg(arg)} -j ACCEPT`)).toEqual([
      '-A',
      'C',
      '-m',
      'comment',
      '--comment',
      arg,
      '-j',
      'ACCEPT',
    ]);
  });

  it('keeps a quoted restore line inside one argument of one rule', () => {
    const rs = new RuleSet().append('filter', 'INPUT', ['-m', 'comment', '--comment', 'x" -A INPUT -j DROP "y', '-j', 'ACCEPT']);
    const lines = rs.render().trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(tokenizeLine(lines[1]!)).toEqual(['-A', 'INPUT', '-m', 'comment', '--comment', 'x" -A INPUT -j DROP "y', '-j', 'ACCEPT']);
  });
});

describe('RuleSet validation', () => {
  it.each([
    ['table', (rs: RuleSet) => rs.chain('nope' as 'nat', 'A'), 'ERR_INVALID_ARG_VALUE'],
    ['table', (rs: RuleSet) => rs.append(1 as unknown as 'nat', 'A', ['-j', 'ACCEPT']), 'ERR_INVALID_ARG_TYPE'],
    ['name', (rs: RuleSet) => rs.chain('nat', 'A'.repeat(29)), 'ERR_INVALID_ARG_VALUE'],
    ['name', (rs: RuleSet) => rs.chain('nat', 'HAS SPACE'), 'ERR_INVALID_ARG_VALUE'],
    ['name', (rs: RuleSet) => rs.chain('nat', '-A'), 'ERR_INVALID_ARG_VALUE'],
    ['name', (rs: RuleSet) => rs.chain('nat', 'PREROUTING'), 'ERR_INVALID_ARG_VALUE'],
    ['name', (rs: RuleSet) => rs.chain('filter', 'ACCEPT'), 'ERR_INVALID_ARG_VALUE'],
    ['name', (rs: RuleSet) => rs.chain('nat', 'X').chain('nat', 'X'), 'ERR_INVALID_ARG_VALUE'],
    ['chain', (rs: RuleSet) => rs.append('filter', 'IN\nPUT', ['-j', 'ACCEPT']), 'ERR_INVALID_ARG_VALUE'],
    ['chain', (rs: RuleSet) => rs.append('filter', '', ['-j', 'ACCEPT']), 'ERR_INVALID_ARG_VALUE'],
    ['args', (rs: RuleSet) => rs.append('filter', 'INPUT', []), 'ERR_INVALID_ARG_VALUE'],
    ['args', (rs: RuleSet) => rs.append('filter', 'INPUT', '-j ACCEPT' as unknown as string[]), 'ERR_INVALID_ARG_TYPE'],
    ['args[1]', (rs: RuleSet) => rs.append('filter', 'INPUT', ['-j', 'ACCEPT\n-A INPUT -j DROP']), 'ERR_INVALID_ARG_VALUE'],
    ['args[1]', (rs: RuleSet) => rs.append('filter', 'INPUT', ['-j', 'ACCEPT\r']), 'ERR_INVALID_ARG_VALUE'],
    ['args[1]', (rs: RuleSet) => rs.append('filter', 'INPUT', ['-j', 'A\0B']), 'ERR_INVALID_ARG_VALUE'],
    ['args[1]', (rs: RuleSet) => rs.append('filter', 'INPUT', ['-j', 'A\tB']), 'ERR_INVALID_ARG_VALUE'],
    ['args[0]', (rs: RuleSet) => rs.append('filter', 'INPUT', ['', '-j', 'ACCEPT']), 'ERR_INVALID_ARG_VALUE'],
    ['args[3]', (rs: RuleSet) => rs.append('filter', 'INPUT', ['-m', 'comment', '--comment', 'x'.repeat(1024)]), 'ERR_INVALID_ARG_VALUE'],
    ['args[0]', (rs: RuleSet) => rs.append('filter', 'INPUT', [5 as unknown as string]), 'ERR_INVALID_ARG_TYPE'],
    ['position', (rs: RuleSet) => rs.insert('nat', 'PREROUTING', 0, ['-j', 'ACCEPT']), 'ERR_INVALID_ARG_VALUE'],
    ['position', (rs: RuleSet) => rs.insert('nat', 'PREROUTING', 1.5, ['-j', 'ACCEPT']), 'ERR_INVALID_ARG_VALUE'],
  ])('reports a bad %s as the first error (%#)', (argument, build, code) => {
    const err = firstError(build);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ code, argument });
  });

  it('keeps the first error even after later valid calls', () => {
    const rs = new RuleSet().append('filter', 'INPUT', ['a\nb']).chain('nat', 'OK').append('filter', 'INPUT', ['-j', 'ACCEPT']);
    expect(() => rs.check()).toThrow(/args\[0\]/);
  });

  it('uses the arguments it checked: an element getter, a Proxy or an Array subclass cannot inject a line later', () => {
    const injection = 'ACCEPT\n-A INPUT -j DROP';
    // A frozen list whose element is a getter: valid on the first read, an injection on every later one.
    let reads = 0;
    const getterList = Object.freeze(
      Object.defineProperty(['-j', 'x'], 1, {
        get: () => (reads++ === 0 ? 'ACCEPT' : injection),
        enumerable: true,
      }),
    ) as readonly string[];
    // A Proxy answering each read of an element differently.
    let proxyReads = 0;
    const proxyList = new Proxy(['-j', 'ACCEPT'], {
      get: (target, key, receiver) => (key === '1' && proxyReads++ > 0 ? injection : Reflect.get(target, key, receiver)),
    });
    // A frozen subclass whose methods (what rendering might call) lie.
    class Lying extends Array<string> {
      override join(): string {
        return injection;
      }
      override map<U>(): U[] {
        return [injection as unknown as U];
      }
    }
    const subclassList = Object.freeze(Lying.from(['-j', 'ACCEPT']) as Lying);
    const rs = new RuleSet()
      .chain('filter', 'PODNET_X')
      .append('filter', 'PODNET_X', getterList)
      .append('filter', 'PODNET_X', getterList)
      .append('filter', 'PODNET_X', proxyList)
      .append('filter', 'PODNET_X', subclassList);
    const text = rs.render();
    expect(text).not.toContain('DROP');
    expect(text).toBe('*filter\n:PODNET_X - [0:0]\n' + '-A PODNET_X -j ACCEPT\n'.repeat(4) + 'COMMIT\n');
    expect(rs.rules().map((r) => r.args)).toEqual(Array(4).fill(['-j', 'ACCEPT']));
    // The checked copies are frozen plain arrays, not the caller's lists.
    for (const r of rs.rules()) {
      expect(Object.isFrozen(r.args)).toBe(true);
      expect(Object.getPrototypeOf(r.args)).toBe(Array.prototype);
    }
  });

  it('checks a list again when it can still change', () => {
    const args = ['-j', 'ACCEPT'];
    const rs = new RuleSet().chain('filter', 'PODNET_X').append('filter', 'PODNET_X', args);
    args[1] = 'ACCEPT\n-A INPUT -j DROP';
    rs.append('filter', 'PODNET_X', args);
    expect(() => rs.check()).toThrow(expect.objectContaining({ argument: 'args[1]' }));
    expect(rs.rules()[0]!.args).toEqual(['-j', 'ACCEPT']); // the rule added first kept what it was given
  });

  it('accepts names of exactly 28 characters', () => {
    const name = 'C'.repeat(28);
    expect(new RuleSet().chain('nat', name).render()).toContain(`:${name} - [0:0]`);
  });
});
