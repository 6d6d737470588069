// Differential test: random restore scripts run on the fake and on the real backend it models, step by step in a
// fresh namespace; every step must end the same way (exit code, parsed reason and line) and leave the same state.
import { expect, it } from 'vitest';

import { runInNetns, type IptablesState } from '../../lib/index.js';
import { parseRestoreStderr, parseSave } from '../../lib/iptables/text.js';
import { withoutPristineTables } from '../../lib/iptables/save-parser.js';
import { FakeIptables } from '../../lib/testing/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { mulberry32 as rng } from '../helpers/random.js';

const CHAINS = ['PN_A', 'PN_B', 'PN_C'];
const TABLES: Record<string, string[]> = { filter: ['INPUT', 'OUTPUT'], nat: ['PREROUTING', 'POSTROUTING'] };

function randomScript(next: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
  const lines: string[] = [];
  const blocks = 1 + Math.floor(next() * 2);
  for (let b = 0; b < blocks; b++) {
    const table = pick(Object.keys(TABLES));
    const anyChain = [...TABLES[table]!, ...CHAINS];
    // Jumps only go to later user chains (PN_A -> PN_B -> PN_C): the fake does not model the kernel's loop check.
    const later = (chain: string): string[] => CHAINS.filter((c) => !CHAINS.includes(chain) || c > chain);
    const target = (chain: string): string[] =>
      pick([
        ['-j', 'RETURN'],
        ['-j', 'ACCEPT'],
        ...later(chain).map((c) => ['-j', c]),
        ['-s', '10.0.0.1/32', '-j', 'RETURN'],
        // DNAT only where every backend refuses it for certain: in built-in chains of the filter table.
        ...(CHAINS.includes(chain) || table !== 'filter' ? [] : [['-j', 'DNAT', '--to-destination', '10.9.9.9']]),
      ]);
    lines.push(`*${table}`);
    // Chain declarations lead the block, as podnet writes them (nft applies them as it reads them, the rest at COMMIT).
    const decls = Math.floor(next() * 3);
    const declared = new Set<string>();
    for (let i = 0; i < decls; i++) {
      const chain = pick(CHAINS);
      declared.add(chain);
      lines.push(`:${chain} - [0:0]`);
    }
    // No -D or -I into a chain flushed by a declaration of this block: nft checks those against its cache, which
    // still holds the rules the flush will remove; the fake does not model that cache (podnet never does this).
    const undeclared = anyChain.filter((c) => !declared.has(c));
    const ops = 1 + Math.floor(next() * 4);
    for (let i = 0; i < ops; i++) {
      const chain = pick(anyChain);
      const kept = pick(undeclared);
      switch (pick(['A', 'A', 'A', 'I', 'D', 'D', 'F', 'X', 'N'])) {
        case 'A':
          lines.push(`-A ${chain} ${target(chain).join(' ')}`);
          break;
        case 'I':
          // Position 1 only: nft checks a position against its cache, which a `:CHAIN` flush earlier in the block
          // has not emptied yet; the fake does not model that cache.
          lines.push(`-I ${kept} 1 ${target(kept).join(' ')}`);
          break;
        case 'D':
          lines.push(`-D ${kept} ${target(kept).join(' ')}`);
          break;
        case 'F':
          lines.push(`-F ${chain}`);
          break;
        case 'X':
          lines.push(`-X ${pick(CHAINS)}`);
          break;
        case 'N':
          lines.push(`-N ${pick(CHAINS)}`);
          break;
      }
    }
    lines.push('COMMIT');
  }
  return `${lines.join('\n')}\n`;
}

interface Outcome {
  exitCode: number;
  reason: string | undefined;
  line: number | undefined;
  state: IptablesState;
}

describePrivileged(
  'FakeIptables against the kernel: random restore scripts',
  () => {
    for (const backend of ['nft', 'legacy'] as const) {
      for (const seed of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) {
        it(`seed ${seed}, ${backend}`, async () => {
          await withNetns(async (tns) => {
            const fake = new FakeIptables();
            const next = rng(seed * 7919 + (backend === 'nft' ? 0 : 1));
            const restore = [`iptables-${backend}-restore`, '--noflush'];
            const save = [`iptables-${backend}-save`];
            for (let step = 0; step < 20; step++) {
              const script = randomScript(next);
              const real = await runInNetns(tns.path, restore, { stdin: script, timeoutMs: 10_000 });
              const realSave = await runInNetns(tns.path, save, { timeoutMs: 10_000 });
              const modelled = await fake.run(restore, script);
              const fakeSave = await fake.run(save);
              const outcome = (exitCode: number, stderr: string, saved: string): Outcome => {
                const parsed = exitCode === 0 ? undefined : parseRestoreStderr(stderr);
                return { exitCode, reason: parsed?.reason, line: parsed?.line, state: withoutPristineTables(parseSave(saved)) };
              };
              const expected = outcome(real.exitCode ?? -1, real.stderr, realSave.stdout);
              const actual = outcome(modelled.exitCode, modelled.stderr, fakeSave.stdout);
              expect({ step, script, ...actual }).toEqual({ step, script, ...expected });
            }
          });
        });
      }
    }
  },
  missingBinary('iptables-nft-restore', 'iptables-legacy-restore'),
);
