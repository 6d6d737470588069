// podnet-cni hands the pod's network namespace to the agent as an fd: the one the agent receives is the namespace
// CNI_NETNS names (compared by identity), for a namespace made for the test and always deleted.
import { expect, it } from 'vitest';

import { Netns } from '../../lib/netns.js';
import { TestNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { cniEnv, config, runPlugin, StandInAgent } from './helpers/plugin-run.js';

describePrivileged('podnet-cni netns fd', () => {
  it.each(['ADD', 'DEL', 'CHECK'])('%s: the fd the agent receives is the namespace at CNI_NETNS', async (command) => {
    using ns = new TestNetns('cni');
    using expected = ns.open();
    using agent = new StandInAgent();
    const served = agent.serveOnce({ exitStatus: 0, stdout: new Uint8Array(), stderr: new Uint8Array() });
    const run = await runPlugin(cniEnv(command, { CNI_NETNS: ns.path }), config({ socketPath: agent.socketPath }));
    const request = await served;
    expect(run.status).toBe(0);
    expect(request.header).toMatchObject({ hasNetnsFd: true, netnsErrno: 0 });
    expect(request.header.env).toContainEqual(['CNI_NETNS', ns.path]);
    expect(request.fds).toHaveLength(1);
    using received = request.fds[0]!.toNetns();
    expect(received.id).toBe(expected.id);
    using host = Netns.current();
    expect(received.equals(host)).toBe(false);
  });

  it('a namespace deleted before the plugin runs: no fd, netnsErrno ENOENT', async () => {
    const ns = new TestNetns('cni-gone');
    const path = ns.path;
    ns.delete();
    using agent = new StandInAgent();
    const served = agent.serveOnce({ exitStatus: 0, stdout: new Uint8Array(), stderr: new Uint8Array() });
    const run = await runPlugin(cniEnv('DEL', { CNI_NETNS: path }), config({ socketPath: agent.socketPath }));
    const request = await served;
    expect(run.status).toBe(0);
    expect(request.header).toMatchObject({ hasNetnsFd: false, netnsErrno: 2 });
    expect(request.fds).toHaveLength(0);
  });
});
