// Run inside a scratch project that installed the packed tarball (test/package/packed-install.test.ts copies it
// there): uses podnet as a user would, by package name, and prints one JSON line of what it saw.
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';

import { Netns, NodeNetwork, Rtnetlink, cniPluginPath } from 'podnet';
import { FakeNode } from 'podnet/testing';
import * as root from 'podnet';
import { quoteArg, tokenizeLine } from 'podnet/iptables-text';

// The current namespace through the addon's open + fstat, against what the kernel shows for the same file.
const current = Netns.current();
const netns = { inode: current.inode, statInode: statSync('/proc/self/ns/net').ino };
current.close();

// A pod enrolled on a simulated node: the fakes speak netlink bytes, so this runs the addon's ipset codec too.
const fakes = new FakeNode();
fakes.netns.add('/run/netns/pod-a');
const node = new NodeNetwork(await fakes.options());
await node.start();
await node.addPod({ uid: 'a', ips: ['10.244.0.5'], netns: '/run/netns/pod-a' });
const probeSet = fakes.netlink.dump().sets.find((s) => s.name === 'istio-inpod-probes-v4');
await node.stop();

// The kernel itself, over a NETLINK_ROUTE socket the addon opens (no root needed to read links).
const rt = await Rtnetlink.open();
let lo;
try {
  const link = await rt.link('lo');
  lo = { index: link.index, name: link.name, linkType: link.linkType };
} finally {
  rt.close();
}

// Which .node files this process mapped: the addon that actually got loaded.
const addons = [
  ...new Set(
    readFileSync('/proc/self/maps', 'utf8')
      .split('\n')
      .map((line) => line.slice(line.indexOf('/')))
      .filter((path) => path.endsWith('.node')),
  ),
];

// The CNI plugin executable shipped beside the addon, as the runtime would run it (it answers VERSION itself).
const plugin = cniPluginPath();
const version = JSON.parse(execFileSync(plugin, [], { env: { CNI_COMMAND: 'VERSION' }, input: '{"cniVersion":"1.0.0"}' }).toString());
const cni = { plugin, mode: statSync(plugin).mode & 0o777, version };

// The documented subpath for writing restore input, and the root without it.
const iptablesText = { roundTrip: tokenizeLine(`-A X ${quoteArg('a "b" c')}`), onRoot: 'quoteArg' in root };

console.log(JSON.stringify({ netns, entries: probeSet?.entries ?? null, openHandles: fakes.netns.openHandles, lo, addons, cni, iptablesText }));
