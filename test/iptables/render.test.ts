import { describe, expect, it } from 'vitest';

import { IptablesLockTimeoutError, IptablesRestoreError, RuleSet } from '../../lib/index.js';
import { parseSave } from '../../lib/iptables/text.js';
import { restoreError } from '../../lib/iptables/iptables.js';
import { applyPrefix, planApply, planRemove } from '../../lib/iptables/render.js';

const RULES = new RuleSet()
  .chain('nat', 'MESH_IN')
  .append('nat', 'PREROUTING', ['-j', 'MESH_IN'])
  .append('nat', 'MESH_IN', ['-p', 'tcp', '-j', 'REDIRECT', '--to-ports', '15006'])
  .append('filter', 'INPUT', ['-m', 'comment', '--comment', 'mesh probe', '-j', 'ACCEPT']);

// A namespace where the set was applied once, plus a stale second jump and foreign rules around it.
const APPLIED = parseSave(`*nat
:PREROUTING ACCEPT [0:0]
:INPUT ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:MESH_IN - [0:0]
-A PREROUTING -s 10.1.0.0/16 -j ACCEPT
-A PREROUTING -j MESH_IN
-A PREROUTING -p tcp -j MESH_IN
-A MESH_IN -p tcp -j REDIRECT --to-ports 15006
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
-A INPUT -m comment --comment "mesh probe" -j ACCEPT
-A INPUT -j DROP
COMMIT
`);

describe('restore plans', () => {
  it('apply fills the owned chains, then deletes every jump into them and every copy of its rules, by their saved text', () => {
    const script = planApply(RULES, APPLIED);
    expect(script.text).toBe(
      [
        '*nat',
        ':MESH_IN - [0:0]',
        '-A MESH_IN -p tcp -j REDIRECT --to-ports 15006',
        '-D PREROUTING -j MESH_IN',
        '-D PREROUTING -p tcp -j MESH_IN',
        '-A PREROUTING -j MESH_IN',
        'COMMIT',
        '*filter',
        '-D INPUT -m comment --comment "mesh probe" -j ACCEPT',
        '-A INPUT -m comment --comment "mesh probe" -j ACCEPT',
        'COMMIT',
        '',
      ].join('\n'),
    );
    expect(script.blocks).toEqual([
      { table: 'nat', first: 1, last: 7 },
      { table: 'filter', first: 8, last: 11 },
    ]);
  });

  it('applyPrefix (what apply sends while iptables-save still runs) is the start of every plan', () => {
    const prefix = applyPrefix(RULES);
    expect(prefix).toBe('*nat\n:MESH_IN - [0:0]\n-A MESH_IN -p tcp -j REDIRECT --to-ports 15006\n');
    for (const state of [APPLIED, { tables: {} }]) expect(planApply(RULES, state).text.startsWith(prefix)).toBe(true);
    const jumpsOnly = new RuleSet().append('filter', 'INPUT', ['-j', 'ACCEPT']);
    expect(applyPrefix(jumpsOnly)).toBe('*filter\n');
    expect(planApply(jumpsOnly, APPLIED).text.startsWith('*filter\n')).toBe(true);
    expect(applyPrefix(new RuleSet())).toBe('');
  });

  it('remove deletes the rules outside owned chains, then flushes and deletes the owned chains', () => {
    expect(planRemove(RULES, APPLIED).text).toBe(
      [
        '*nat',
        '-D PREROUTING -j MESH_IN',
        '-D PREROUTING -p tcp -j MESH_IN',
        ':MESH_IN - [0:0]',
        '-X MESH_IN',
        'COMMIT',
        '*filter',
        '-D INPUT -m comment --comment "mesh probe" -j ACCEPT',
        'COMMIT',
        '',
      ].join('\n'),
    );
  });

  it('remove has nothing to do where nothing of the set exists', () => {
    expect(planRemove(RULES, { tables: {} }).text).toBe('');
  });
});

describe('restoreError', () => {
  const script = planApply(RULES, { tables: {} });

  it('names the rule line and its table', () => {
    const err = restoreError(script, 1, 'iptables-restore: line 4 failed\n');
    expect(err).toBeInstanceOf(IptablesRestoreError);
    expect(err).toMatchObject({ line: 4, table: 'nat', rule: '-A PREROUTING -j MESH_IN', reason: 'failed', exitCode: 1 });
    expect(err.message).toBe('iptables-restore failed at line 4 (table nat): iptables-restore: line 4 failed');
  });

  it('gives the whole block when the line is COMMIT', () => {
    const err = restoreError(script, 1, 'iptables-restore: line 8 failed\n');
    expect(err).toMatchObject({
      line: 8,
      table: 'filter',
      rule: '*filter\n-A INPUT -m comment --comment "mesh probe" -j ACCEPT\nCOMMIT',
    });
  });

  it('builds the lock timeout class for a held lock', () => {
    const err = restoreError(script, 4, 'Another app is currently holding the xtables lock. Stopped waiting after 1s.\n');
    expect(err).toBeInstanceOf(IptablesLockTimeoutError);
    expect(err).toMatchObject({ code: 'ERR_IPTABLES_LOCK_TIMEOUT', line: undefined, table: undefined, rule: undefined });
  });
});
