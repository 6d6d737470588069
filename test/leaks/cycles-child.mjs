// The leak test's child (test/leaks/cycles.test.ts runs it with `node --expose-gc --max-semi-space-size=1`):
// repeats podnet's resource-holding operations thousands of times inside one namespace and prints, as one JSON line,
// what the process holds after a warm-up and after each part: open fds, threads, zombie children, RSS after a full
// GC, and the network namespace of every thread. It imports the built package (dist/), as a user's program would.
//
// argv: <dist index URL> <netns path> <parts, comma separated: ipset,spawn,netns,iptables> [scale]
// scale divides every count (1 = the counts); the warm-up always runs.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

const [distUrl, netnsPath, partList, scaleArg] = process.argv.slice(2);
const { Ipset, Iptables, Netns, Nftables, RuleSet, Rtnetlink, runInNetns } = await import(distUrl);
const { native } = await import(new URL('native.js', distUrl).href);
const scale = Number(scaleArg ?? 1);

if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');

/** The counts the issue asks for, per part. */
const COUNTS = { ipset: 10_000, spawn: 2_000, netns: 2_000, iptables: 1_000, netlink: 5_000 };
/** Cycles each part runs before the baseline: libuv's pool threads, V8's code caches, iptables' learned forms. */
const WARMUP = { ipset: 200, spawn: 50, netns: 200, iptables: 10, netlink: 200 };

const SET = 'podnet-leak';
const RULES = new RuleSet()
  .chain('filter', 'PODNET_LEAK')
  .append('filter', 'INPUT', ['-j', 'PODNET_LEAK'])
  .append('filter', 'PODNET_LEAK', ['-p', 'tcp', '--dport', '8080', '-j', 'ACCEPT'])
  .append('filter', 'PODNET_LEAK', ['-j', 'RETURN']);

const selfNetns = readlinkSync('/proc/self/ns/net');

function zombies() {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ')'.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) === process.pid && state === 'Z') found.push(Number(name));
  }
  return found;
}

function threadNetns() {
  const out = {};
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out[tid] = readlinkSync(`/proc/self/task/${tid}/ns/net`);
    } catch {
      // a thread that ended meanwhile (the short-lived setns threads)
    }
  }
  return out;
}

async function sample() {
  // Netfilter sockets are closed on the addon's closer thread, shortly after their client's release: counted once it
  // has closed all it was handed.
  await native.closesSettled();
  // Twice, with a turn of the loop between: finalizers (Netns handles nobody closed) run after the first.
  globalThis.gc();
  await new Promise((resolve) => setImmediate(resolve));
  globalThis.gc();
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
  const netns = threadNetns();
  return {
    // readdirSync's own directory fd is counted in every sample alike.
    fds: readdirSync('/proc/self/fd').length,
    threads: readdirSync('/proc/self/task').length,
    zombies: zombies(),
    rssBytes: rss,
    heapUsedBytes: process.memoryUsage().heapUsed,
    heapTotalBytes: process.memoryUsage().heapTotal,
    threadsOutsideNetns: Object.entries(netns)
      .filter(([, ns]) => ns !== selfNetns)
      .map(([tid, ns]) => `${tid} ${ns}`),
  };
}

let nextEntry = 0;
function entryIp() {
  const n = nextEntry++;
  return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

const parts = {
  /** Ipset.open in the namespace, one add, close: a netlink socket, a namespace handle and a setns thread each. */
  async ipset(count) {
    for (let i = 0; i < count; i++) {
      const ipset = await Ipset.open({ netns: netnsPath });
      try {
        await ipset.add(SET, { ip: entryIp() });
      } finally {
        ipset.close();
      }
    }
  },
  /** runInNetns of `true`: a fork, a setns, an exec, three pipes and a pidfd each, all reaped and closed. */
  async spawn(count) {
    for (let i = 0; i < count; i++) {
      const result = await runInNetns(netnsPath, ['true'], { timeoutMs: 60_000 });
      if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode} (${result.signal})`);
    }
  },
  /**
   * Nftables.open and Rtnetlink.open in the namespace, a call on each, close: sockets opened on the hop thread and
   * handed back to the JS thread (the process still exits by itself at the end: nothing holds the loop).
   */
  async netlink(count) {
    for (let i = 0; i < count; i++) {
      // Every other cycle's sockets wait for their first operation (defer), which opens them in its own hop.
      const defer = i % 2 === 1;
      const [nft, rt] = await Promise.all([Nftables.open({ netns: netnsPath, defer }), Rtnetlink.open({ netns: netnsPath, defer })]);
      try {
        await Promise.all([nft.generation(), rt.links()]);
      } finally {
        nft.close();
        rt.close();
      }
    }
  },
  /** Netns.open of the path and close. */
  async netns(count) {
    for (let i = 0; i < count; i++) Netns.open(netnsPath).close();
  },
  /** Iptables apply then remove of a small rule set (iptables-save and iptables-restore runs each). */
  async iptables(count, ipt) {
    for (let i = 0; i < count; i++) {
      await ipt.apply(RULES);
      const removed = await ipt.remove(RULES);
      if (!removed.changed) throw new Error('remove found nothing to remove after apply');
    }
  },
};

const wanted = partList.split(',');
for (const p of wanted) if (!(p in parts)) throw new Error(`unknown part ${p}`);

let ipt;
if (wanted.includes('ipset')) {
  const setup = await Ipset.open({ netns: netnsPath });
  await setup.create(SET, { type: 'hash:ip', maxelem: 1 << 20 }, { exist: true });
  await setup.flush(SET);
  setup.close();
}
if (wanted.includes('iptables')) {
  // nft takes no host-wide lock; the client is opened once (opening it runs iptables programs too, not what is measured).
  ipt = await Iptables.open({ netns: netnsPath, backend: 'nft', timeoutMs: 120_000 });
}

const report = { pid: process.pid, netns: selfNetns, start: await sample(), parts: [] };
for (const p of wanted) await parts[p](WARMUP[p], ipt);
report.warm = await sample();
for (const p of wanted) {
  const count = Math.max(1, Math.round(COUNTS[p] / scale));
  const before = await sample();
  const started = performance.now();
  await parts[p](count, ipt);
  const seconds = (performance.now() - started) / 1000;
  report.parts.push({ part: p, count, seconds: Math.round(seconds * 10) / 10, before, after: await sample() });
}
report.end = await sample();
if (wanted.includes('ipset')) {
  const check = await Ipset.open({ netns: netnsPath });
  report.setElements = (await check.header(SET)).elements;
  report.entriesAdded = nextEntry;
  check.close();
}
if (ipt) report.iptablesLeft = await ipt.save();
process.stdout.write(`${JSON.stringify(report)}\n`);
