// CniServer with real pod namespaces: the fd podnet-cni passes becomes req.netns, the same namespace, and the
// handler can work inside it.
import { expect, it } from 'vitest';

import { Netns } from '../../lib/netns.js';
import { Rtnetlink } from '../../lib/rtnetlink/index.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';
import { invokeAgent } from './helpers/agent-client.js';
import { cniConfig, cniEnv, TempServer } from './helpers/cni-fixtures.js';

describePrivileged('CniServer with a pod namespace', () => {
  it('hands ADD the namespace the plugin opened, and it is not the host one', async () => {
    await withNetns(async (pod) => {
      const seen: { equalsPod: boolean; equalsHost: boolean; links: string[] }[] = [];
      await using t = await TempServer.start({
        async add(req) {
          using podNs = pod.open();
          using host = Netns.current();
          using rt = await Rtnetlink.open({ netns: req.netns! });
          const links = (await rt.links()).map((l) => l.name);
          seen.push({ equalsPod: req.netns!.equals(podNs), equalsHost: req.netns!.equals(host), links });
        },
      });
      pod.ip('link', 'add', 'podnet-a0', 'type', 'veth', 'peer', 'name', 'podnet-b0');
      using opened = Netns.open(pod.path); // what podnet-cni does with CNI_NETNS
      const answer = await invokeAgent(t.path, { env: cniEnv('ADD', { CNI_NETNS: pod.path }), stdin: cniConfig(), netnsFd: opened.fd });
      expect(answer.exitStatus, answer.stdout).toBe(0);
      expect(seen).toHaveLength(1);
      expect(seen[0]!.equalsPod).toBe(true);
      expect(seen[0]!.equalsHost).toBe(false);
      expect(seen[0]!.links.sort()).toEqual(['lo', 'podnet-a0', 'podnet-b0']);
    });
  });

  it('keeps the namespace for DEL after its path is gone, through the fd', async () => {
    await withNetns(async (pod) => {
      let inode = -1;
      await using t = await TempServer.start({ del: (req) => void (inode = req.netns!.inode) });
      using opened = Netns.open(pod.path);
      const expected = opened.inode;
      pod.delete(); // the runtime's path is gone; the fd still holds the namespace
      const answer = await invokeAgent(t.path, { env: cniEnv('DEL', { CNI_NETNS: pod.path }), stdin: cniConfig(), netnsFd: opened.fd });
      expect(answer.exitStatus, answer.stdout).toBe(0);
      expect(inode).toBe(expected);
    });
  });
});
