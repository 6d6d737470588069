// The bad-input table: each bad input a user can hand podnet, grouped by part, and the error code it gets.
// bad-input.test.ts runs every row against the kernel in a fresh namespace, checks the code, checks with the CLI
// that nothing changed, and renders docs/bad-input.md from this table, so the document cannot drift.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';

import { Ipset, Iptables, Netns, Nftables, NodeNetwork, RuleSet, Rtnetlink, SeqpacketSocket, ZtunnelServer, runInNetns, startInNetns, type NftRuleset } from '../../lib/index.js';

/** What every row gets: clients opened inside the test namespace, a set and a rule that exist, a live server. */
export interface BadInputContext {
  netns: Netns;
  ipset: Ipset;
  iptables: Iptables;
  rtnetlink: Rtnetlink;
  /** A hash:ip set with comments that exists ('podnet-bad'), holding 10.0.0.1. */
  set: string;
  ztunnel: ZtunnelServer;
  /** A closed Ipset client, a closed Netns handle. */
  closedIpset: Ipset;
  closedNetns: Netns;
  /** A socket file path in a temp folder that nobody listens on. */
  freePath: string;
}

export interface BadInputCase {
  part: string;
  /** The input, as the document shows it (markdown inline code allowed). */
  input: string;
  run: (ctx: BadInputContext) => unknown;
  /**
   * The error code the call throws or rejects with; or 'accepted' for an input podnet reads once and uses as read
   * (then `check` proves what it did and `undo` puts the namespace back).
   */
  code: string;
  /** For 'accepted' rows: what podnet does with it, as the document says. */
  answer?: string;
  check?: (ctx: BadInputContext) => Promise<void>;
  undo?: (ctx: BadInputContext) => Promise<void>;
}

const W = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };

/** flipping returns an object whose `key` reads as good the first time and bad after: a value that changes between reads. */
function flipping<T extends object>(base: T, key: string, good: unknown, bad: unknown): T {
  let reads = 0;
  return new Proxy(base, {
    get(target, prop, receiver) {
      if (prop === key) return reads++ === 0 ? good : bad;
      return Reflect.get(target, prop, receiver);
    },
    has(target, prop) {
      return prop === key || Reflect.has(target, prop);
    },
  });
}

function hugeWithOneBad(n: number, badAt: number): { ip: string }[] {
  return Array.from({ length: n }, (_, i) => ({ ip: i === badAt ? '10.0.0.256' : `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` }));
}

/** fifoBeside makes a FIFO in the temp folder of freePath (removed with it) and returns its path. */
function fifoBeside(freePath: string): string {
  const path = join(dirname(freePath), 'netns.fifo');
  execFileSync('mkfifo', ['-m', '600', path]);
  return path;
}

/** holed returns an array with a hole at `at` (what `[, x]` writes): forEach, map, every and some skip it. */
function holed<T>(items: T[], at: number): T[] {
  const out = [...items];
  delete out[at];
  return out;
}

/** nftApply applies a ruleset with a client of its own in the test namespace. */
async function nftApply(c: BadInputContext, ruleset: unknown): Promise<unknown> {
  const nft = await Nftables.open({ netns: c.netns });
  try {
    return await nft.apply(ruleset as NftRuleset);
  } finally {
    nft.close();
  }
}

const NFT_T = { family: 'inet', table: 'podnet-bad' } as const;

/**
 * restoreWithLockHeld declares a chain with a legacy client that does not wait for the xtables lock (lockWaitSeconds
 * 0) while another process holds it; restore takes the lock as apply does and reads no state first. The lock
 * is a file beside freePath (XTABLES_LOCKFILE), never the host's; its holder (`flock ... cat`) keeps it until its
 * stdin ends.
 */
async function restoreWithLockHeld(c: BadInputContext): Promise<void> {
  const lockFile = join(dirname(c.freePath), 'xtables.lock');
  const ipt = await Iptables.open({ netns: c.netns, backend: 'legacy', lockFile, lockWaitSeconds: 0, timeoutMs: 60_000 });
  const holder = startInNetns(undefined, ['flock', '--exclusive', lockFile, 'cat'], { timeoutMs: 120_000 });
  try {
    for (let held = false, tries = 0; !held; tries++) {
      if (tries === 500) throw new Error('the xtables lock was not taken by its holder');
      held = (await runInNetns(undefined, ['flock', '--nonblock', lockFile, 'true'], { timeoutMs: 10_000 })).exitCode !== 0;
      if (!held) await new Promise((r) => setTimeout(r, 20));
    }
    await ipt.restore('*filter\n:PODNET-BAD - [0:0]\nCOMMIT\n');
  } finally {
    holder.end();
    await holder.result;
  }
}

function rule(args: unknown): RuleSet {
  return new RuleSet().chain('filter', 'PODNET-BAD').append('filter', 'PODNET-BAD', args as string[]);
}

/**
 * quotedComment is a row for a rule argument that iptables-restore would split or cut: podnet quotes it, and the
 * rule reads back with exactly that one argument (no second rule, no cut comment).
 */
function quotedComment(comment: string, what: string): BadInputCase {
  const args = ['-m', 'comment', '--comment', comment, '-j', 'ACCEPT'];
  return {
    part: 'iptables',
    input: `rule argument ${what} (\`${comment.replace(/`/g, "'")}\`)`,
    run: (c) => c.iptables.apply(rule(args)),
    code: 'accepted',
    answer: 'accepted: quoted, reads back as that one argument',
    async check(c) {
      const rules = (await c.iptables.save()).tables.filter?.chains['PODNET-BAD']?.rules ?? [];
      if (JSON.stringify(rules) !== JSON.stringify([args])) throw new Error(`rules read back as ${JSON.stringify(rules)}`);
    },
    undo: async (c) => {
      await c.iptables.remove(rule(args));
    },
  };
}

export const CASES: BadInputCase[] = [
  // ipset
  { part: 'ipset', input: 'set name of 32 bytes', run: (c) => c.ipset.create('x'.repeat(32), { type: 'hash:ip' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'set name with NUL', run: (c) => c.ipset.create('a\0b', { type: 'hash:ip' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'empty set name', run: (c) => c.ipset.add('', { ip: '10.0.0.9' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'set name that is not a string (`42`)', run: (c) => c.ipset.add(42 as never, { ip: '10.0.0.9' }), code: 'ERR_INVALID_ARG_TYPE' },
  { part: 'ipset', input: 'unknown set type `hash:foo`', run: (c) => c.ipset.create('podnet-new', { type: 'hash:foo' as never }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'timeout `-1`', run: (c) => c.ipset.create('podnet-new', { type: 'hash:ip', timeout: -1 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'timeout `1.5`', run: (c) => c.ipset.create('podnet-new', { type: 'hash:ip', timeout: 1.5 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'IPv4 address `10.0.0.256`', run: (c) => c.ipset.add(c.set, { ip: '10.0.0.256' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'address with a newline `10.0.0.9\\n`', run: (c) => c.ipset.add(c.set, { ip: '10.0.0.9\n' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'IPv6 address into an inet set', run: (c) => c.ipset.add(c.set, { ip: 'fd00::1' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'CIDR `/33` on hash:ip', run: (c) => c.ipset.add(c.set, { ip: '10.0.0.9/33' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'port on hash:ip', run: (c) => c.ipset.add(c.set, { ip: '10.0.0.9', port: 80 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'comment of 256 bytes', run: (c) => c.ipset.add(c.set, { ip: '10.0.0.9', comment: 'c'.repeat(256) }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'comment with NUL', run: (c) => c.ipset.add(c.set, { ip: '10.0.0.9', comment: 'a\0b' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'ipset', input: 'entry that is `null`', run: (c) => c.ipset.add(c.set, null as never), code: 'ERR_INVALID_ARG_TYPE' },
  { part: 'ipset', input: 'add of an IP already in the set (exclusive add)', run: (c) => c.ipset.add(c.set, { ip: '10.0.0.1' }), code: 'IPSET_ERR_EXIST' },
  { part: 'ipset', input: 'add into a set that does not exist', run: (c) => c.ipset.add('podnet-none', { ip: '10.0.0.9' }), code: 'ENOENT' },
  {
    part: 'ipset',
    input: 'entry whose `ip` getter reads `10.0.0.256` first, `10.0.0.9` after',
    run: (c) => c.ipset.add(c.set, flipping({ ip: '' }, 'ip', '10.0.0.256', '10.0.0.9')),
    code: 'ERR_INVALID_ARG_VALUE',
  },
  {
    part: 'ipset',
    input: 'entry whose `ip` getter reads `10.0.0.9` first, `10.0.0.256` after',
    run: (c) => c.ipset.add(c.set, flipping({ ip: '' }, 'ip', '10.0.0.9', '10.0.0.256')),
    code: 'accepted',
    answer: 'accepted: read once, `10.0.0.9` added',
    async check(c) {
      const listed = (await c.ipset.list(c.set)).entries.map((e) => e.ip).sort();
      if (listed.join() !== '10.0.0.1,10.0.0.9') throw new Error(`set holds ${listed.join()}`);
    },
    undo: (c) => c.ipset.del(c.set, { ip: '10.0.0.9' }),
  },
  {
    part: 'ipset',
    input: 'addMany of 10,000 entries, the 9,999th bad',
    run: (c) => c.ipset.addMany(c.set, hugeWithOneBad(10_000, 9_998)),
    code: 'ERR_INVALID_ARG_VALUE',
  },
  { part: 'ipset', input: 'call on a closed client', run: (c) => c.closedIpset.add('podnet-bad', { ip: '10.0.0.9' }), code: 'ERR_IPSET_CLOSED' },

  // iptables
  { part: 'iptables', input: 'rule argument with a newline', run: (c) => c.iptables.apply(rule(['-j', 'ACCEPT\n-A INPUT -j DROP'])), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'iptables', input: 'rule argument with NUL', run: (c) => c.iptables.apply(rule(['-j', 'ACC\0EPT'])), code: 'ERR_INVALID_ARG_VALUE' },
  quotedComment('a"b', 'with `"`'),
  quotedComment("a'b", "with `'`"),
  quotedComment('#x -j DROP', 'starting with `#`'),
  quotedComment('a\\b" -j DROP "', 'with a backslash and quotes'),
  { part: 'iptables', input: 'empty rule argument', run: (c) => c.iptables.apply(rule(['-j', ''])), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'iptables', input: 'rule that is not an array', run: (c) => c.iptables.apply(rule('-j ACCEPT')), code: 'ERR_INVALID_ARG_TYPE' },
  { part: 'iptables', input: 'chain name of 29 bytes', run: (c) => c.iptables.apply(new RuleSet().chain('filter', 'C'.repeat(29))), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'iptables', input: 'chain name with a space', run: (c) => c.iptables.apply(new RuleSet().chain('filter', 'A B')), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'iptables', input: 'unknown table `nats`', run: (c) => c.iptables.apply(new RuleSet().chain('nats' as never, 'PODNET-BAD')), code: 'ERR_INVALID_ARG_VALUE' },
  {
    part: 'iptables',
    input: 'rule whose argument reads `ACCEPT` first, `ACCEPT\\n-A INPUT -j DROP` after',
    run: (c) => c.iptables.apply(rule(flipping(['-j', 'x'], '1', 'ACCEPT', 'ACCEPT\n-A INPUT -j DROP'))),
    code: 'accepted',
    answer: 'accepted: read once, `-j ACCEPT` applied',
    async check(c) {
      const rules = (await c.iptables.save()).tables.filter?.chains['PODNET-BAD']?.rules ?? [];
      if (JSON.stringify(rules) !== JSON.stringify([['-j', 'ACCEPT']])) throw new Error(`rules ${JSON.stringify(rules)}`);
    },
    undo: async (c) => {
      await c.iptables.remove(rule(['-j', 'ACCEPT']));
    },
  },
  { part: 'iptables', input: 'rule the kernel refuses (`-j NOPE`)', run: (c) => c.iptables.apply(rule(['-j', 'NOPE'])), code: 'ERR_IPTABLES_RESTORE' },
  { part: 'iptables', input: 'lockWaitSeconds `-1`', run: (c) => Iptables.open({ netns: c.netns, lockWaitSeconds: -1 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'iptables', input: 'lockWaitSeconds `1.5`', run: (c) => Iptables.open({ netns: c.netns, lockWaitSeconds: 1.5 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'iptables', input: 'lockWaitSeconds `3601`', run: (c) => Iptables.open({ netns: c.netns, lockWaitSeconds: 3601 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'iptables', input: "lockWaitSeconds `'5'`", run: (c) => Iptables.open({ netns: c.netns, lockWaitSeconds: '5' as never }), code: 'ERR_INVALID_ARG_TYPE' },
  { part: 'iptables', input: 'lockFile that is relative (`xtables.lock`)', run: (c) => Iptables.open({ netns: c.netns, lockFile: 'xtables.lock' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'iptables', input: 'lockFile `7`', run: (c) => Iptables.open({ netns: c.netns, lockFile: 7 as never }), code: 'ERR_INVALID_ARG_TYPE' },
  {
    part: 'iptables',
    input: 'lockWaitSeconds `0` (legacy) while another process holds the xtables lock (answered at once, no restore started)',
    run: restoreWithLockHeld,
    code: 'ERR_IPTABLES_LOCK_TIMEOUT',
  },

  // netns
  { part: 'netns', input: 'empty path', run: () => Netns.open(''), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'netns', input: 'path that does not exist', run: () => Netns.open('/run/netns/podnet-no-such-netns'), code: 'ENOENT' },
  { part: 'netns', input: 'a file that is not a netns (`/proc/self/stat`)', run: () => Netns.open('/proc/self/stat'), code: 'ERR_NOT_NETNS' },
  { part: 'netns', input: 'netns path that is a FIFO', run: (c) => runInNetns(fifoBeside(c.freePath), ['true']), code: 'ERR_NOT_NETNS' },
  { part: 'netns', input: 'name with a `/`', run: () => Netns.named('../etc'), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'netns', input: 'pid `0`', run: () => Netns.fromPid(0), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'netns', input: 'fd of a closed handle', run: (c) => c.closedNetns.fd, code: 'ERR_NETNS_CLOSED' },

  // rtnetlink
  { part: 'rtnetlink', input: 'route destination `10.0.0.1/8` (host bits set)', run: (c) => c.rtnetlink.addRoute({ dst: '10.0.0.1', dstLength: 8, oif: 'lo' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'rtnetlink', input: 'route table `0`', run: (c) => c.rtnetlink.addRoute({ dst: '10.9.0.0', dstLength: 16, oif: 'lo', table: 0 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'rtnetlink', input: 'route via a link that does not exist', run: (c) => c.rtnetlink.addRoute({ dst: '10.9.0.0', dstLength: 16, oif: 'nope0' }), code: 'ENODEV' },
  { part: 'rtnetlink', input: 'rule priority `-1`', run: (c) => c.rtnetlink.addRule({ priority: -1, table: 100 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'rtnetlink', input: 'rule mark `2^32`', run: (c) => c.rtnetlink.addRule({ mark: 2 ** 32, table: 100 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'rtnetlink', input: 'IPv6 source in a `family: 4` rule', run: (c) => c.rtnetlink.addRule({ family: 4, src: 'fd00::1', srcLength: 128, table: 100 }), code: 'ERR_INVALID_ARG_VALUE' },

  // unix sockets and the node proxy
  { part: 'unix', input: 'socket path of 108 bytes', run: () => SeqpacketSocket.connect(`/tmp/${'p'.repeat(103)}`), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'unix', input: 'connect where nobody listens', run: (c) => SeqpacketSocket.connect(c.freePath), code: 'ENOENT' },
  { part: 'proxy', input: 'empty workload uid', run: (c) => c.ztunnel.addWorkload('', W, c.netns), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'proxy', input: 'workload name with NUL', run: (c) => c.ztunnel.addWorkload('u', { ...W, name: 'a\0b' }, c.netns), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'proxy', input: 'workload over the 1 KiB message limit', run: (c) => c.ztunnel.addWorkload('u', { ...W, name: 'n'.repeat(1100) }, c.netns), code: 'ERR_ZDS_MESSAGE_TOO_LARGE' },
  { part: 'proxy', input: 'netns fd of a regular file', run: (c) => c.ztunnel.addWorkload('u', W, { fd: 0 }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'proxy', input: 'add with no proxy connected', run: (c) => c.ztunnel.addWorkload('u', W, c.netns), code: 'ERR_PROXY_NOT_CONNECTED' },

  // lone surrogates: no UTF-8 form; the kernel would store U+FFFD, another string than the one given
  { part: 'lone surrogates', input: 'ipset comment `\\uD800`', run: (c) => c.ipset.add(c.set, { ip: '10.0.0.7', comment: 'pod-\uD800' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'lone surrogates', input: 'ipset set name `\\uDC00`', run: (c) => c.ipset.create('bad-\uDC00', { type: 'hash:ip' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'lone surrogates', input: 'iptables rule argument `\\uD800`', run: (c) => c.iptables.apply(rule(['-m', 'comment', '--comment', 'x\uD800'])), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'lone surrogates', input: 'nftables table name `\\uD800`', run: (c) => nftApply(c, { tables: [{ family: 'inet', name: 't\uD800', sets: [], chains: [], rules: [] }] }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'lone surrogates', input: 'nftables set element comment `\\uDFFF`', run: async (c) => { const nft = await Nftables.open({ netns: c.netns }); try { return await nft.run(nft.transaction().addTable({ family: 'inet', name: 'podnet-bad' }).addSet({ family: 'inet', table: 'podnet-bad', name: 's', type: 'ipv4_addr', comment: 'ok' }).addElement({ family: 'inet', name: 'podnet-bad' }, 's', [{ address: '10.0.0.1', comment: 'u\uDFFF' }])); } finally { nft.close(); } }, code: 'ERR_INVALID_ARG_VALUE' },

  // arrays with holes: every array is checked index by index, a hole named by its index
  { part: 'arrays with holes', input: 'ipset `addMany` entries `[, { ip }]`', run: (c) => c.ipset.addMany(c.set, holed([{ ip: '10.0.0.9' }, { ip: '10.0.0.8' }], 0)), code: 'ERR_INVALID_ARG_TYPE' },
  { part: 'arrays with holes', input: "iptables rule args `['-p', , 'tcp']`", run: (c) => c.iptables.apply(rule(holed(['-p', 'x', 'tcp', '-j', 'ACCEPT'], 1))), code: 'ERR_INVALID_ARG_TYPE' },
  { part: 'arrays with holes', input: "`runInNetns` argv `['true', , 'x']`", run: (c) => runInNetns(c.netns, holed(['true', 'y', 'x'], 1)), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'arrays with holes', input: 'nftables `apply({ tables: [, table] })`', run: (c) => nftApply(c, { tables: holed([{ family: 'inet', name: 'x' }, { family: 'inet', name: 'podnet-bad', sets: [], chains: [], rules: [] }], 0) }), code: 'ERR_INVALID_ARG_VALUE' },
  {
    part: 'arrays with holes',
    input: 'nftables rule `exprs` with a hole (a broader rule than asked)',
    run: (c) =>
      nftApply(c, {
        tables: [{
          family: 'inet', name: 'podnet-bad', sets: [],
          chains: [{ ...NFT_T, name: 'c' }],
          rules: [{ ...NFT_T, chain: 'c', exprs: holed([{ type: 'meta', key: 'l4proto', dreg: 1 }, { type: 'cmp', sreg: 1, op: 'eq', data: new Uint8Array([6]) }, { type: 'immediate', dreg: 0, data: { type: 'verdict', verdict: 'drop' } }], 1) }],
        }],
      }),
    code: 'ERR_INVALID_ARG_VALUE',
  },
  { part: 'arrays with holes', input: 'ZDS `replaceWorkloads([, workload])`', run: (c) => c.ztunnel.replaceWorkloads(holed([{ uid: 'a', workload: W }, { uid: 'b', workload: W }], 0)), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'arrays with holes', input: "agent `addPod` ips `[, '10.0.0.5']`", run: (c) => new NodeNetwork().addPod({ uid: 'u', ips: holed(['10.0.0.4', '10.0.0.5'], 0), netns: c.netns }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'arrays with holes', input: 'agent `syncSnapshot([, pod])`', run: () => new NodeNetwork().syncSnapshot(holed([{ uid: 'a', ips: [] }, { uid: 'b', ips: [] }], 0)), code: 'ERR_INVALID_ARG_VALUE' },

  // agent
  { part: 'agent', input: 'probe set prefix of 29 bytes', run: () => new NodeNetwork({ probeSetPrefix: 'p'.repeat(29) }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'agent', input: "onConflict `'ignore'`", run: () => new NodeNetwork({ onConflict: 'ignore' as never }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'agent', input: 'probe source `169.254.7.127/32`', run: () => new NodeNetwork({ probeSourceV4: '169.254.7.127/32' }), code: 'ERR_INVALID_ARG_VALUE' },
  { part: 'agent', input: 'probe source spelled non-canonically (`fd16:0::1`)', run: () => new NodeNetwork({ probeSourceV6: 'fd16:0::1' }), code: 'ERR_INVALID_ARG_VALUE' },
];
