// examples/agent-unit-test.mjs is a node:test file: it runs under Node's test runner and every one of its tests passes.
import { expect, it } from 'vitest';

import { runExample } from './run-example.js';

it('runs the agent unit test example on FakeNode, every test passing', async () => {
  const { code, stdout, stderr } = await runExample('examples/agent-unit-test.mjs', { nodeArgs: ['--test', '--test-reporter=tap'] });
  expect(stderr).toBe('');
  expect(code).toBe(0);
  const results = stdout.split('\n').filter((l) => /^(not )?ok \d+ - /.test(l));
  expect(results).toEqual([
    'ok 1 - a pod is enrolled: probe entry owned by its UID, in-pod rules, handed to the proxy',
    'ok 2 - a late removal of a pod whose IP was reused leaves the new owner alone',
    'ok 3 - a pod whose namespace is already gone fails with a typed error and changes nothing',
  ]);
  expect(stdout).toMatch(/^# fail 0$/m);
});
