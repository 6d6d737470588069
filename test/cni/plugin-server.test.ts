// The real podnet-cni binary against the real CniServer: the two ends of docs/cni-protocol.md, as a runtime would
// drive them, in a test namespace that is always deleted.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

import { CniServer, type CniRequest } from '../../lib/cni/server.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { cniEnv, parseError, runPlugin } from './helpers/plugin-run.js';

const prevResult = {
  cniVersion: '1.0.0',
  interfaces: [{ name: 'eth0', sandbox: '/run/netns/x' }],
  ips: [{ address: '10.88.0.7/16', gateway: '10.88.0.1', interface: 0 }],
  routes: [{ dst: '0.0.0.0/0' }],
  dns: {},
};

describePrivileged('podnet-cni with CniServer', () => {
  it('ADD reaches the add handler with the pod netns and answers the prevResult; a handler throw is a CNI error', async () => {
    using ns = new TestNetns('cni-srv');
    using expected = ns.open();
    const dir = mkdtempSync(join(tmpdir(), 'podnet-cni-server-'));
    try {
      const seen: { command: string; containerId: string; netnsId: string | undefined; pod: string | undefined }[] = [];
      const record = (req: CniRequest): void => {
        seen.push({ command: req.command, containerId: req.containerId, netnsId: req.netns?.id, pod: req.pod?.name });
      };
      await using server = await CniServer.listen({
        path: join(dir, 'cni.sock'),
        add: record,
        check: () => {
          throw new Error('pod rules are missing');
        },
        del: record,
      });
      const stdin = JSON.stringify({ cniVersion: '1.0.0', name: 'podnet-test', type: 'podnet-cni', socketPath: server.path, prevResult });
      const env = cniEnv('ADD', { CNI_NETNS: ns.path, CNI_CONTAINERID: 'abc123' });

      const add = await runPlugin(env, stdin);
      expect(add.stderr.toString()).toBe('');
      expect(add.status).toBe(0);
      expect(JSON.parse(add.stdout.toString())).toEqual(prevResult);

      const check = await runPlugin({ ...env, CNI_COMMAND: 'CHECK' }, stdin);
      expect(check.status).toBe(1);
      expect(parseError(check.stdout)).toMatchObject({ cniVersion: '1.0.0', code: 100, msg: 'pod rules are missing' });

      ns.delete();
      const del = await runPlugin({ ...env, CNI_COMMAND: 'DEL' }, stdin);
      expect(del.status).toBe(0);
      expect(del.stdout.toString()).toBe('');

      expect(seen).toEqual([
        { command: 'ADD', containerId: 'abc123', netnsId: expected.id, pod: 'web-0' },
        { command: 'DEL', containerId: 'abc123', netnsId: undefined, pod: 'web-0' },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
