// examples/ipset-netns.mjs on the real kernel: it makes its namespace, works in it, and deletes it again.
import { execFileSync } from 'node:child_process';
import { expect, it } from 'vitest';

import { CLI_ENV } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { runExample } from './run-example.js';

describePrivileged(
  'ipset example',
  () => {
    it('adds, refuses a second owner, batches and lists in a namespace of its own, then deletes it', async () => {
      // A name the suite's teardown also deletes, should the example die before its own cleanup.
      const prefix = `podnet-t-${process.env.PODNET_TEST_RUN ?? 'x'}-${process.pid}-example`;
      const { code, stdout, stderr } = await runExample('examples/ipset-netns.mjs', { env: { PODNET_EXAMPLE_NETNS_PREFIX: prefix } });
      expect(stderr).toBe('');
      expect(code).toBe(0);
      const lines = stdout.trim().split('\n');
      const name = /^made namespace (\S+)$/.exec(lines[0] ?? '')?.[1];
      expect(name).toMatch(new RegExp(`^${prefix}-\\d+$`));
      expect(lines.slice(1, 5)).toEqual([
        'second add of 10.244.0.5: IPSET_ERR_EXIST',
        'addMany: applied 2, failed at 1 (IPSET_ERR_EXIST)',
        'test 10.244.0.6: true',
        'entries: 10.244.0.5 uid-a, 10.244.0.6 uid-c, 10.244.0.7 uid-e',
      ]);
      // The ipset tool's view of the same kernel set, in hash order.
      expect(lines.slice(5, 8).sort()).toEqual([
        'ipset save: add probes-v4 10.244.0.5 comment "uid-a"',
        'ipset save: add probes-v4 10.244.0.6 comment "uid-c"',
        'ipset save: add probes-v4 10.244.0.7 comment "uid-e"',
      ]);
      expect(lines.slice(8)).toEqual(['sets left: 0', `deleted namespace ${name}`]);
      expect(execFileSync('ip', ['netns', 'list'], { encoding: 'utf8', env: CLI_ENV })).not.toContain(name);
    });
  },
  missingBinary('ipset'),
);
