// A namespace holding none of a rule set's chains is written in one restore run, unread (lib/iptables/fresh.ts). A
// wrong guess must never duplicate a rule or lose another writer's: applied twice the state is the same, foreign
// rules stay where they are, a table whose chains exist is applied over as before, and a failure after the unread
// run committed some tables leaves the namespace as it was. On the fake and on the kernel, both backends.
import { describe, expect, it } from 'vitest';

import { DIAGNOSTICS_CHANNELS, IptablesRestoreError, RuleSet, inpodRules, type IptablesState } from '../../lib/index.js';
import { committedBefore, createPlanOf, planCreate } from '../../lib/iptables/fresh.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { rejection } from '../helpers/rejection.js';
import { record } from '../diagnostics/recorder.js';
import { TARGETS, type TargetKind, withTarget } from './targets.js';

describe('planCreate', () => {
  const cases: { name: string; rules: RuleSet; text: string | undefined }[] = [
    {
      name: 'creates every owned chain before any rule, then the jumps into them',
      rules: new RuleSet()
        .chain('nat', 'P_A')
        .chain('nat', 'P_B')
        .append('nat', 'P_A', ['-j', 'P_B'])
        .append('nat', 'PREROUTING', ['-j', 'P_A'])
        .insert('nat', 'OUTPUT', 1, ['-p', 'tcp', '-j', 'P_B'])
        .append('nat', 'P_B', ['-j', 'RETURN']),
      text: '*nat\n-N P_A\n-N P_B\n-A P_A -j P_B\n-A P_B -j RETURN\n-A PREROUTING -j P_A\n-I OUTPUT 1 -p tcp -j P_B\nCOMMIT\n',
    },
    {
      name: 'refuses a plain rule in a built-in chain (another writer may hold its text)',
      rules: new RuleSet().chain('filter', 'P_A').append('filter', 'INPUT', ['-j', 'ACCEPT']),
      text: undefined,
    },
    {
      name: 'refuses a jump into a chain it does not own',
      rules: new RuleSet().chain('filter', 'P_A').append('filter', 'INPUT', ['-j', 'KUBE-SERVICES']),
      text: undefined,
    },
    {
      name: 'refuses a table without owned chains',
      rules: new RuleSet().chain('filter', 'P_A').append('nat', 'P_N', ['-j', 'RETURN']),
      text: undefined,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(planCreate(c.rules)?.text).toBe(c.text);
    });
  }

  it('keeps a set plan until the set changes (createPlanOf)', () => {
    const rules = new RuleSet().chain('nat', 'P_A').append('nat', 'PREROUTING', ['-j', 'P_A']);
    const first = createPlanOf(rules);
    expect(createPlanOf(rules)).toBe(first);
    rules.append('nat', 'P_A', ['-j', 'RETURN']);
    expect(createPlanOf(rules)?.text).toBe('*nat\n-N P_A\n-A P_A -j RETURN\n-A PREROUTING -j P_A\nCOMMIT\n');
    // A call that records an error changes the set too: apply then throws it before any plan is used.
    const revision = rules.revision;
    rules.append('nat', 'P_A', ['bad\0arg']);
    expect(rules.revision).toBe(revision + 1);
    expect(() => rules.check()).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    // A set that cannot be planned stays so as it grows.
    const plain = new RuleSet().chain('filter', 'P_A').append('filter', 'INPUT', ['-j', 'ACCEPT']);
    expect(createPlanOf(plain)).toBeUndefined();
    plain.append('filter', 'P_A', ['-j', 'RETURN']);
    expect(createPlanOf(plain)).toBeUndefined();
  });

  it('takes the tables before the failing one as committed, none when it is unknown or the first', () => {
    const rules = inpodRules({ family: 4 });
    expect(rules.tables).toEqual(['mangle', 'nat', 'raw']);
    expect(committedBefore(rules, 'raw')).toEqual(['mangle', 'nat']);
    expect(committedBefore(rules, 'mangle')).toEqual([]);
    expect(committedBefore(rules, undefined)).toEqual([]);
  });
});

// Other writers' rules in the chains the pod's rules jump from, and a chain of their own.
const FOREIGN = [
  '*mangle',
  ':FOREIGN_M - [0:0]',
  '-A PREROUTING -s 10.9.0.0/16 -j FOREIGN_M',
  '-A FOREIGN_M -j RETURN',
  'COMMIT',
  '*nat',
  '-A OUTPUT -d 10.9.0.1/32 -j ACCEPT',
  '-A PREROUTING -s 10.9.0.2/32 -j ACCEPT',
  'COMMIT',
  '*raw',
  '-A OUTPUT -d 10.9.0.3/32 -j ACCEPT',
  'COMMIT',
  '',
].join('\n');

const rulesOf = (state: IptablesState, table: string, chain: string) => state.tables[table]?.chains[chain]?.rules;

function fresh(kind: TargetKind): void {
  it('applies to a new namespace in one restore run, without reading it', async () => {
    await withTarget(kind, async ({ ipt }) => {
      using rec = record(DIAGNOSTICS_CHANNELS.iptablesRun);
      await ipt.apply(inpodRules({ family: 4 }));
      expect(rec.take().map((r) => r.kind)).toEqual(['restore']);
      expect((await ipt.verify(inpodRules({ family: 4 }))).inSync).toBe(true);
    });
  });

  it('keeps foreign rules in place, and applied again leaves the same state (no duplicate jump)', async () => {
    await withTarget(kind, async ({ ipt }) => {
      await ipt.restore(FOREIGN);
      const foreign = await ipt.save();
      await ipt.apply(inpodRules({ family: 4 }));
      const once = await ipt.save();
      expect(rulesOf(once, 'mangle', 'PREROUTING')).toEqual([['-s', '10.9.0.0/16', '-j', 'FOREIGN_M'], ['-j', 'ISTIO_PRERT']]);
      expect(rulesOf(once, 'nat', 'OUTPUT')).toEqual([['-d', '10.9.0.1/32', '-j', 'ACCEPT'], ['-j', 'ISTIO_OUTPUT']]);
      await ipt.apply(inpodRules({ family: 4 }));
      expect(await ipt.save()).toEqual(once);
      expect((await ipt.verify(inpodRules({ family: 4 }))).inSync).toBe(true);
      await ipt.remove(inpodRules({ family: 4 }));
      expect(await ipt.save()).toEqual(foreign);
    });
  });

  it('applies over a table whose chain exists (stale rules, a stale jump) after the unread run committed the others', async () => {
    await withTarget(kind, async ({ ipt }) => {
      // raw comes last in the set: mangle and nat commit unread, raw's -N is refused and apply reads and applies.
      await ipt.restore('*raw\n:ISTIO_OUTPUT - [0:0]\n-A OUTPUT -j ISTIO_OUTPUT\n-A OUTPUT -j ISTIO_OUTPUT\n-A ISTIO_OUTPUT -j DROP\nCOMMIT\n');
      await ipt.apply(inpodRules({ family: 4 }));
      const state = await ipt.save();
      expect(rulesOf(state, 'raw', 'OUTPUT')).toEqual([['-j', 'ISTIO_OUTPUT']]);
      expect(rulesOf(state, 'mangle', 'PREROUTING')).toEqual([['-j', 'ISTIO_PRERT']]);
      expect(await ipt.verify(inpodRules({ family: 4 }))).toMatchObject({ inSync: true, missing: [], unexpected: [] });
    });
  });

  it('leaves the namespace as it was when a table fails after the unread run committed earlier ones', async () => {
    await withTarget(kind, async ({ ipt }) => {
      await ipt.restore(FOREIGN);
      const foreign = await ipt.save();
      const failing = (): RuleSet => inpodRules({ family: 4 }).append('raw', 'ISTIO_OUTPUT', ['-j', 'PODNET_NO_SUCH_CHAIN']);
      // Refused where no chain exists (mangle and nat committed, then undone), and where raw's chain exists (the
      // save-first apply commits mangle and nat over the unread run's, then fails at raw and undoes both).
      for (const pre of ['', '*raw\n:ISTIO_OUTPUT - [0:0]\nCOMMIT\n']) {
        if (pre !== '') await ipt.restore(pre);
        const expected = await ipt.save();
        const err = await rejection(ipt.apply(failing()));
        expect(err).toBeInstanceOf(IptablesRestoreError);
        expect(err).toMatchObject({ table: 'raw', rollbackError: undefined });
        expect(await ipt.save()).toEqual(expected);
      }
      await ipt.restore('*raw\n-X ISTIO_OUTPUT\nCOMMIT\n');
      expect(await ipt.save()).toEqual(foreign);
    });
  });
}

for (const kind of TARGETS.filter((k) => k.startsWith('fake'))) describe(`apply to a new namespace (${kind})`, () => fresh(kind));

describePrivileged(
  'apply to a new namespace (kernel)',
  () => {
    for (const kind of TARGETS.filter((k) => !k.startsWith('fake'))) describe(kind, () => fresh(kind));
  },
  missingBinary('iptables-nft-restore', 'iptables-legacy-restore', 'iptables-nft-save', 'iptables-legacy-save'),
);
