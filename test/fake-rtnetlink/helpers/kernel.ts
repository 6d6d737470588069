// Runs request bytes against the real kernel in a throwaway namespace (through route-bridge.py) and builds the same
// starting state in a FakeRtnetlink, so a test can send both the same bytes and compare the answers.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { FakeRtnetlink, type FakeLinkOptions, type FakeRtnetlinkOptions } from '../../../lib/testing/index.js';
import type { TestNetns } from '../../helpers/netns.js';
import { type Canon, canonAll, codes } from './replies.js';

const BRIDGE = fileURLToPath(new URL('./route-bridge.py', import.meta.url));

/**
 * kernelReplies sends each request (one sendmsg each) and returns each one's reply datagrams. `fresh` runs them in
 * a namespace the bridge makes for itself inside ns, whose lo was never up (TestNetns brings lo up).
 */
export function kernelReplies(ns: TestNetns, requests: Uint8Array[], fresh = false): Uint8Array[][] {
  // One NOOP first: the kernel sizes a dump's first datagram by the reader's largest recv so far.
  const warm = Buffer.from('10000000010005000100000000000000', 'hex');
  const input = [warm, ...requests].map((b) => Buffer.from(b).toString('hex')).join('\n') + '\n';
  const argv = ['netns', 'exec', ns.name, 'python3', BRIDGE, ...(fresh ? ['--fresh-netns'] : [])];
  const out = execFileSync('ip', argv, { input, encoding: 'utf8', maxBuffer: 1 << 28 });
  return out
    .split('\n')
    .slice(1, requests.length + 1)
    .map((line) => (line.trim() === '' ? [] : line.trim().split(' ').map((h) => Buffer.from(h, 'hex'))));
}

/** World describes the links and addresses both sides start with (lo is up on both unless options say otherwise). */
export interface World {
  options?: FakeRtnetlinkOptions;
  links?: (FakeLinkOptions & { address: string })[];
  addresses?: [string, string][];
}

/**
 * setUp builds the world in the namespace with iproute2 (links are ifb devices, which the fake's links model) and
 * in a new FakeRtnetlink with addLink/addAddress, in the same order.
 */
export function setUp(ns: TestNetns, world: World): FakeRtnetlink {
  const o = world.options ?? {};
  if (o.loopbackUp === false && (world.links?.length || world.addresses?.length || o.ipv6 === false)) {
    throw new Error('setUp: a world with lo down has no links, addresses or IPv6 switch (it runs in a fresh namespace)');
  }
  if (o.ipv6 === false) {
    ns.exec(['sysctl', '-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1', 'net.ipv6.conf.lo.disable_ipv6=1']);
  }
  if (o.ipv6 === false) {
    // lo came up before IPv6 was turned off: take it down and up again without ::1.
    ns.ip('link', 'set', 'lo', 'down');
    ns.ip('link', 'set', 'lo', 'up');
  }
  const fake = new FakeRtnetlink({ now: () => 0, ...o });
  for (const l of world.links ?? []) {
    const args = ['link', 'add', l.name];
    if (l.index !== undefined) args.push('index', String(l.index));
    args.push('address', l.address, 'txqlen', String(l.txqlen ?? 1000), 'mtu', String(l.mtu ?? 1500), 'type', 'ifb');
    ns.ip(...args);
    if (l.up !== false) ns.ip('link', 'set', l.name, 'up');
    fake.addLink(l);
  }
  for (const [link, cidr] of world.addresses ?? []) {
    ns.ip('address', 'add', cidr, 'dev', link);
    fake.addAddress(link, cidr);
  }
  return fake;
}

/**
 * diff sends requests to both and lists every request whose canonical answers differ (empty: all the same); the
 * kernel's error codes are added to `seen` when given.
 */
export function diff(ns: TestNetns, fake: FakeRtnetlink, steps: { label: string; bytes: Uint8Array }[], fresh = false, seen?: Set<number>): string[] {
  const kernel = kernelReplies(ns, steps.map((s) => s.bytes), fresh);
  const out: string[] = [];
  for (const c of kernel.flatMap((d) => codes(d))) seen?.add(c);
  steps.forEach((s, i) => {
    const want = canonAll(kernel[i] ?? []);
    const got = canonAll(fake.exchange(s.bytes));
    if (JSON.stringify(want) !== JSON.stringify(got)) out.push(`#${i} ${s.label}\n${firstDifference(want, got)}`);
  });
  return out;
}

// A dump differs in one message more often than in its shape: show the datagram count and the first message apart.
function firstDifference(want: Canon[][], got: Canon[][]): string {
  const w = want.flat();
  const g = got.flat();
  let i = 0;
  while (i < w.length && i < g.length && JSON.stringify(w[i]) === JSON.stringify(g[i])) i++;
  const shape = `datagrams ${want.map((d) => d.length).join(',')} vs ${got.map((d) => d.length).join(',')}`;
  return `  ${shape}; message ${i}\n  kernel ${JSON.stringify(w[i])}\n  fake   ${JSON.stringify(g[i])}`;
}
