/**
 * Probes of namespaces and what a pod's namespace holds: making and entering one, IPv6 in it, the pod's policy routing
 * (each in a namespace of its own), and the node proxy's unix seqpacket sockets passing a namespace fd. Each runs the
 * way the agent uses the feature.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { applyPodRouting, routingFamilies, verifyPodRouting } from '../agent/routes.js';
import { Netns } from '../netns.js';
import { Rtnetlink } from '../rtnetlink/client.js';
import { runInNetns } from '../spawn.js';
import { SeqpacketServer } from '../unix/server.js';
import { SeqpacketSocket } from '../unix/socket.js';
import type { PreflightContext } from './types.js';

const DISABLE_IPV6 = '/proc/sys/net/ipv6/conf/all/disable_ipv6';

/**
 * netnsProbe makes a namespace (as the preflight does for every other probe) and enters it the way the agent enters a
 * pod's: a netlink socket opened on a thread that joined it, which must see the namespace's own loopback, up.
 */
export async function netnsProbe(context: PreflightContext): Promise<string> {
  return context.scratch(async (ns) => {
    using here = Netns.current();
    if (ns.equals(here)) throw new Error(`a new namespace is this process's own (inode ${ns.inode})`);
    const rt = await Rtnetlink.open({ netns: ns });
    try {
      const lo = (await rt.links()).find((l) => l.name === 'lo');
      if (!lo) throw new Error('a new namespace lists no loopback');
      if (!lo.up) throw new Error('the loopback of a new namespace is down after it was brought up');
      return `made and entered (inode ${ns.inode}, loopback up)`;
    } finally {
      rt.close();
    }
  });
}

/**
 * ipv6Probe tells whether a fresh namespace has IPv6 the way NodeNetwork's routing decides it per pod
 * (routingFamilies: its loopback has an IPv6 address). When it has not, the namespace's own sysctl (read inside it)
 * says why: no IPv6 in this kernel, IPv6 disabled, or on without the address.
 */
export async function ipv6Probe(context: PreflightContext): Promise<string> {
  return context.scratch(async (ns) => {
    const rt = await Rtnetlink.open({ netns: ns });
    try {
      if ((await routingFamilies(rt, true)).includes(6)) return 'on in a new namespace (loopback has ::1)';
    } finally {
      rt.close();
    }
    // Only now a process: /proc/sys/net shows the namespace of whoever opens it, so the read runs inside.
    const read = await runInNetns(ns, ['cat', DISABLE_IPV6], { timeoutMs: 30_000 });
    if (read.exitCode !== 0) throw new Error(`IPv6 is not in this kernel (${DISABLE_IPV6}: ${read.stderr.trim()}): module ipv6, or ipv6.disable=1 on the kernel command line`);
    if (read.stdout.trim() !== '0') throw new Error(`IPv6 is disabled in a new namespace (net.ipv6.conf.all.disable_ipv6 = ${read.stdout.trim()})`);
    throw new Error('IPv6 is on but loopback has no IPv6 address in a new namespace');
  });
}

/** policyRoutingProbe adds the pod's policy rule and local route in a fresh namespace and reads them back. */
export async function policyRoutingProbe(context: PreflightContext): Promise<string> {
  return context.scratch(async (ns) => {
    const rt = await Rtnetlink.open({ netns: ns });
    try {
      const families = await routingFamilies(rt, context.ipv6);
      await applyPodRouting(rt, families);
      const states = await verifyPodRouting(rt, families);
      const off = states.find((s) => !s.rule || !s.route);
      if (off) throw new Error(`the IPv${off.family} rule and route were written but do not read back as written`);
      return `rule and route table added and read back (IPv${families.join(', IPv')})`;
    } finally {
      rt.close();
    }
  });
}

/**
 * unixSeqpacketProbe passes a namespace fd over a SOCK_SEQPACKET connection, as the ZDS server does, and checks that
 * what arrives is that namespace. Passing an fd changes no namespace, so this process's own serves: no scratch needed.
 */
export async function unixSeqpacketProbe(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'podnet-pf-'));
  try {
    using ns = Netns.current();
    using server = SeqpacketServer.listen({ path: join(dir, 's') });
    const accepted = server.accept({ timeoutMs: 30_000 });
    using client = await SeqpacketSocket.connect(server.path, { timeoutMs: 30_000 });
    using peer = await accepted;
    await client.send(new Uint8Array([1]), { fds: [ns.fd], timeoutMs: 30_000 });
    const got = await peer.receive({ timeoutMs: 30_000, maxFds: 1 });
    const fd = got?.fds[0];
    if (!fd) throw new Error('a message came without its fd');
    using passed = fd.toNetns();
    if (!passed.equals(ns)) throw new Error(`the fd passed arrived as another namespace (${passed.id}, not ${ns.id})`);
    return 'a namespace fd passed with SCM_RIGHTS';
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
