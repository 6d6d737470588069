// Backend detection in the reference's order (forced, kubelet hint chains nft then legacy, rules present, nft),
// on the fake and on real namespaces; and IPv6 through ip6tables-restore.
import { describe, expect, it } from 'vitest';

import { Iptables, RuleSet } from '../../lib/index.js';
import { detectBackend, iptablesBinary } from '../../lib/iptables/backend.js';
import { FakeIptables } from '../../lib/testing/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

async function seed(fake: FakeIptables, backend: 'nft' | 'legacy', input: string, family: 4 | 6 = 4): Promise<void> {
  const result = await fake.run([iptablesBinary(backend, family, 'restore'), '--noflush'], input);
  expect(result).toMatchObject({ exitCode: 0 });
}

const HINT = '*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n';
const RULES_3 = '*filter\n-A INPUT -j ACCEPT\n-A INPUT -j ACCEPT\n-A OUTPUT -j ACCEPT\nCOMMIT\n';
const RULES_1 = '*filter\n-A INPUT -j ACCEPT\nCOMMIT\n';
const EMPTY_CHAINS = '*filter\n:A - [0:0]\n:B - [0:0]\n:C - [0:0]\nCOMMIT\n';

describe('backend detection (fake)', () => {
  it.each([
    ['nothing anywhere', [], 'nft'],
    ['rules only in legacy', [['legacy', RULES_1]], 'legacy'],
    ['more rules in legacy than nft', [['nft', RULES_1], ['legacy', RULES_3]], 'legacy'],
    ['more rules in nft than legacy', [['nft', RULES_3], ['legacy', RULES_1]], 'nft'],
    ['empty chains in legacy do not count as rules', [['legacy', EMPTY_CHAINS]], 'nft'],
    ['a hint chain in legacy beats rules in nft', [['nft', RULES_3], ['legacy', HINT]], 'legacy'],
    ['a hint chain in nft beats a hint and rules in legacy', [['nft', HINT], ['legacy', HINT + RULES_3]], 'nft'],
  ] as [string, ['nft' | 'legacy', string][], 'nft' | 'legacy'][])('%s -> %s', async (_name, seeds, expected) => {
    const fake = new FakeIptables();
    for (const [backend, input] of seeds) await seed(fake, backend, input);
    expect(await detectBackend(fake, 4)).toBe(expected);
    expect((await Iptables.open({ runner: fake })).backend).toBe(expected);
  });

  it('detects per family', async () => {
    const fake = new FakeIptables();
    await seed(fake, 'legacy', RULES_1, 6);
    expect(await detectBackend(fake, 6)).toBe('legacy');
    expect(await detectBackend(fake, 4)).toBe('nft');
  });

  it('a forced backend runs no detection, only the version query', async () => {
    const fake = new FakeIptables();
    await seed(fake, 'legacy', RULES_3);
    const before = fake.calls.length;
    const ipt = await Iptables.open({ runner: fake, backend: 'nft' });
    expect(ipt.backend).toBe('nft');
    expect(ipt.version).toBe('1.8.9');
    expect(fake.calls.slice(before)).toEqual([['iptables-nft-restore', '--version']]);
  });

  it.each([
    ['a program that reports another backend', 'iptables-restore v1.8.9 (legacy)\n', {}, /reports the legacy backend/],
    ['a lockFile with iptables older than 1.8.6', 'iptables-nft-restore v1.8.4 (nf_tables)\n', { lockFile: '/run/x.lock' }, /1\.8\.6/],
  ])('refuses %s', async (_name, versionLine, options, message) => {
    const fake = new FakeIptables();
    const runner = {
      run: (argv: readonly string[], stdin?: string) =>
        argv[1] === '--version' ? Promise.resolve({ exitCode: 0, stdout: versionLine, stderr: '' }) : fake.run(argv, stdin),
    };
    const err = await Iptables.open({ runner, backend: 'nft', ...options }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'ERR_IPTABLES_VERSION' });
    expect((err as Error).message).toMatch(message);
  });

  it.each([
    ['family', { family: 5 }],
    ['backend', { backend: 'iptables' }],
    ['lockWaitSeconds', { lockWaitSeconds: -1 }],
    ['lockFile', { lockFile: 'relative.lock' }],
    ['timeoutMs', { timeoutMs: 0 }],
  ])('checks %s', async (argument, options) => {
    await expect(Iptables.open({ runner: new FakeIptables(), ...(options as object) })).rejects.toMatchObject({
      code: 'ERR_INVALID_ARG_VALUE',
      argument,
    });
  });
});

describePrivileged(
  'backend detection and IPv6 (real programs, fresh namespaces)',
  () => {
    it('picks nft in an empty namespace, legacy once legacy holds rules, nft again once kubelet hints nft', async () => {
      await withNetns(async (tns) => {
        const detected = await Iptables.open({ netns: tns.path });
        expect(detected.backend).toBe('nft');
        expect(detected.version).toMatch(/^1\.\d+\.\d+$/);
        const legacy = await Iptables.open({ netns: tns.path, backend: 'legacy' });
        await legacy.restore(RULES_1);
        expect((await Iptables.open({ netns: tns.path })).backend).toBe('legacy');
        const nft = await Iptables.open({ netns: tns.path, backend: 'nft' });
        await nft.restore(HINT);
        expect((await Iptables.open({ netns: tns.path })).backend).toBe('nft');
      });
    });

    it('applies IPv6 rules through ip6tables-restore, apart from IPv4', async () => {
      await withNetns(async (tns) => {
        for (const backend of ['nft', 'legacy'] as const) {
          const v6 = await Iptables.open({ netns: tns.path, family: 6, backend });
          const v4 = await Iptables.open({ netns: tns.path, family: 4, backend });
          const rules = new RuleSet()
            .chain('filter', 'PODNET_V6')
            .append('filter', 'INPUT', ['-j', 'PODNET_V6'])
            .append('filter', 'PODNET_V6', ['-s', '2001:db8::1/128', '-j', 'RETURN']);
          await v6.apply(rules);
          expect((await v6.save()).tables.filter!.chains.PODNET_V6).toEqual({
            policy: null,
            rules: [['-s', '2001:db8::1/128', '-j', 'RETURN']],
          });
          expect((await v6.verify(rules)).inSync).toBe(true);
          expect((await v4.save()).tables.filter?.chains.PODNET_V6).toBeUndefined();
          await v6.remove(rules);
          expect(await v6.save()).toEqual({ tables: {} });
        }
      });
    });
  },
  missingBinary('iptables-nft-save', 'iptables-legacy-save', 'ip6tables-nft-restore', 'ip6tables-legacy-restore'),
);

describePrivileged('Iptables.open (real namespace paths)', () => {
  it('fails with ENOENT for a namespace that does not exist instead of guessing a backend', async () => {
    await expect(Iptables.open({ netns: '/run/netns/podnet-surely-missing' })).rejects.toMatchObject({
      code: 'ENOENT',
      syscall: 'open',
      path: '/run/netns/podnet-surely-missing',
    });
  });
});

describe('backend detection with a tool missing', () => {
  it('treats a backend whose programs are not installed as holding nothing', async () => {
    const fake = new FakeIptables();
    await seed(fake, 'legacy', RULES_1);
    const nftMissing = {
      run: (argv: readonly string[], stdin?: string) =>
        argv[0]!.includes('-nft-') ? fake.run(['podnet-not-installed'], stdin) : fake.run(argv, stdin),
    };
    expect(await detectBackend(nftMissing, 4)).toBe('legacy');
  });
});
