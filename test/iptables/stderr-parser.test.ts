// The stderr of every failure form in the reference, for both backends, as iptables 1.8.9 prints it. The privileged
// half runs the same inputs through the real programs and checks that they still print what is parsed here.
import { describe, expect, it } from 'vitest';

import { runInNetns, type IptablesFailureReason } from '../../lib/index.js';
import { parseRestoreStderr } from '../../lib/iptables/text.js';
import { FakeIptables } from '../../lib/testing/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

interface Form {
  exitCode: number;
  stderr: string;
  reason: IptablesFailureReason;
  line: number | undefined;
  chain?: string;
}

interface Case {
  name: string;
  input: string;
  /** Whether FakeIptables models this failure (it does not check extension options). */
  fake: boolean;
  legacy: Form;
  nft: Form;
}

const CASES: Case[] = [
  {
    name: 'unknown option',
    input: '*filter\n-A INPUT --x\nCOMMIT\n',
    fake: false,
    legacy: {
      exitCode: 2,
      stderr:
        'iptables-restore v1.8.9 (legacy): unknown option "--x"\nError occurred at line: 2\n' +
        "Try `iptables-restore -h' or 'iptables-restore --help' for more information.\n",
      reason: 'bad-argument',
      line: 2,
    },
    nft: {
      exitCode: 2,
      stderr:
        'iptables-nft-restore v1.8.9 (nf_tables): unknown option "--x"\nError occurred at line: 2\n' +
        "Try `iptables-nft-restore -h' or 'iptables-nft-restore --help' for more information.\n",
      reason: 'bad-argument',
      line: 2,
    },
  },
  {
    name: 'jump to an undefined chain',
    input: '*filter\n-A INPUT -j NOPE\nCOMMIT\n',
    fake: true,
    legacy: {
      exitCode: 2,
      stderr:
        "iptables-restore v1.8.9 (legacy): Couldn't load target `NOPE':No such file or directory\n\n" +
        "Error occurred at line: 2\nTry `iptables-restore -h' or 'iptables-restore --help' for more information.\n",
      reason: 'missing-target',
      line: 2,
      chain: 'NOPE',
    },
    nft: {
      exitCode: 2,
      stderr:
        "iptables-nft-restore v1.8.9 (nf_tables): Chain 'NOPE' does not exist\nError occurred at line: 3\n" +
        "Try `iptables-nft-restore -h' or 'iptables-nft-restore --help' for more information.\n",
      reason: 'missing-target',
      line: 3,
      chain: 'NOPE',
    },
  },
  {
    name: 'append to an undeclared chain',
    input: '*filter\n-A NOPE -j ACCEPT\nCOMMIT\n',
    fake: true,
    legacy: { exitCode: 1, stderr: 'iptables-restore: line 2 failed\n', reason: 'failed', line: 2 },
    nft: {
      exitCode: 1,
      stderr: 'iptables-nft-restore: line 2 failed: No chain/target/match by that name.\n',
      reason: 'missing-chain',
      line: 2,
    },
  },
  {
    name: 'a rule the kernel rejects (DNAT in filter)',
    input: '*filter\n-A INPUT -j DNAT --to-destination 1.2.3.4\nCOMMIT\n',
    fake: true,
    legacy: { exitCode: 1, stderr: 'iptables-restore: line 3 failed\n', reason: 'failed', line: 3 },
    nft: {
      exitCode: 4,
      stderr: 'iptables-nft-restore v1.8.9 (nf_tables): \nline 2: RULE_APPEND failed (Invalid argument): rule in chain INPUT\n',
      reason: 'kernel-rejected',
      line: 2,
      chain: 'INPUT',
    },
  },
  {
    name: 'deleting a referenced chain',
    input: '*filter\n:C - [0:0]\n-A INPUT -j C\nCOMMIT\n*filter\n-X C\nCOMMIT\n',
    fake: true,
    legacy: { exitCode: 1, stderr: 'iptables-restore: line 6 failed\n', reason: 'failed', line: 6 },
    nft: {
      exitCode: 4,
      stderr: 'iptables-nft-restore v1.8.9 (nf_tables): \nline 6: CHAIN_DEL failed (Device or resource busy): chain C\n',
      reason: 'chain-busy',
      line: 6,
      chain: 'C',
    },
  },
  {
    name: 'deleting a rule that is not there',
    input: '*filter\n-D INPUT -j ACCEPT\nCOMMIT\n',
    fake: true,
    legacy: { exitCode: 1, stderr: 'iptables-restore: line 2 failed\n', reason: 'failed', line: 2 },
    nft: {
      exitCode: 1,
      stderr: 'iptables-nft-restore: line 2 failed: Bad rule (does a matching rule exist in that chain?).\n',
      reason: 'missing-rule',
      line: 2,
    },
  },
  {
    name: 'a missing COMMIT',
    input: '*filter\n-A INPUT -j ACCEPT\n',
    fake: true,
    legacy: { exitCode: 1, stderr: 'iptables-restore: COMMIT expected at line 3\n', reason: 'commit-expected', line: 3 },
    nft: { exitCode: 1, stderr: 'iptables-nft-restore: COMMIT expected at line 3\n', reason: 'commit-expected', line: 3 },
  },
];

const LOCK_STDERR = 'Another app is currently holding the xtables lock. Stopped waiting after 1s.\n';
const NFT_WARNING = '# Warning: iptables-legacy tables present, use iptables-legacy-save to see them\n';

describe('parseRestoreStderr', () => {
  for (const c of CASES) {
    for (const backend of ['legacy', 'nft'] as const) {
      it(`reads ${c.name} (${backend})`, () => {
        const form = c[backend];
        const parsed = parseRestoreStderr(form.stderr);
        expect(parsed.reason).toBe(form.reason);
        expect(parsed.line).toBe(form.line);
        if (form.chain !== undefined) expect(parsed.chain).toBe(form.chain);
        expect(parsed.message).not.toBe('');
      });
    }
  }

  it('reads a held lock (legacy)', () => {
    expect(parseRestoreStderr(LOCK_STDERR)).toMatchObject({ reason: 'lock-timeout', line: undefined });
  });

  it('skips nft warnings about legacy tables', () => {
    const parsed = parseRestoreStderr(NFT_WARNING + CASES[2]!.nft.stderr);
    expect(parsed).toMatchObject({ reason: 'missing-chain', line: 2 });
  });

  it('never throws on noise and keeps a message', () => {
    expect(parseRestoreStderr('')).toMatchObject({ reason: 'unknown', line: undefined });
    expect(parseRestoreStderr('something odd\nError occurred at line: 9\n')).toMatchObject({ reason: 'unknown', line: 9, message: 'something odd' });
  });
});

describe('FakeIptables fails the same way', () => {
  for (const c of CASES.filter((x) => x.fake)) {
    for (const backend of ['legacy', 'nft'] as const) {
      it(`${c.name} (${backend})`, async () => {
        const result = await new FakeIptables().run([`iptables-${backend}-restore`, '--noflush'], c.input);
        const form = c[backend];
        expect(result.exitCode).toBe(form.exitCode);
        expect(parseRestoreStderr(result.stderr)).toMatchObject({ reason: form.reason, line: form.line });
      });
    }
  }
});

describePrivileged(
  'iptables-restore still prints these forms (real programs, fresh namespace)',
  () => {
    for (const c of CASES) {
      for (const backend of ['legacy', 'nft'] as const) {
        it(`${c.name} (${backend})`, async () => {
          await withNetns(async (tns) => {
            const result = await runInNetns(tns.path, [`iptables-${backend}-restore`, '--noflush'], { stdin: c.input, timeoutMs: 10_000 });
            const form = c[backend];
            expect(result.exitCode).toBe(form.exitCode);
            expect(result.stderr).toBe(form.stderr);
          });
        });
      }
    }
  },
  missingBinary('iptables-legacy-restore', 'iptables-nft-restore'),
);
