// A real ipset client in a network namespace of its own (needs root):
//
//   sudo node examples/ipset-netns.mjs
//
// It makes a fresh namespace with `ip netns add`, talks to the kernel's ipset over netlink inside it, shows the
// result with the ipset tool run in the same namespace, and deletes the namespace at the end, also after an error or
// Ctrl-C. Nothing outside that namespace is touched. PODNET_EXAMPLE_NETNS_PREFIX changes the name's prefix.
import { execFileSync } from 'node:child_process';

import { Ipset, runInNetns } from 'podnet';

const name = `${process.env.PODNET_EXAMPLE_NETNS_PREFIX || 'podnet-example'}-${process.pid}`;
const path = `/run/netns/${name}`;
const SET = 'probes-v4';

let made = false;
function deleteNamespace() {
  if (!made) return;
  made = false;
  execFileSync('ip', ['netns', 'delete', name], { stdio: 'ignore' });
  console.log(`deleted namespace ${name}`);
}
// Ctrl-C or a kill while the example runs: the namespace still goes.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    deleteNamespace();
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  });
}

async function main() {
  execFileSync('ip', ['netns', 'add', name], { stdio: 'pipe' });
  made = true;
  console.log(`made namespace ${name}`);

  // The socket is opened inside the namespace; after that it stays there whatever thread uses it.
  const ipset = await Ipset.open({ netns: path });
  try {
    await ipset.create(SET, { type: 'hash:ip', family: 'inet', comment: true }, { exist: true });
    // The comment records who owns an entry (a node agent writes the pod's UID there).
    await ipset.add(SET, { ip: '10.244.0.5', comment: 'uid-a' });

    // Adds are exclusive: a second owner of the same IP is refused by the kernel, atomically.
    try {
      await ipset.add(SET, { ip: '10.244.0.5', comment: 'uid-b' });
    } catch (err) {
      console.log(`second add of 10.244.0.5: ${err.code}`);
    }

    // Many entries go in few netlink messages; every good one applies and each bad one is reported by index.
    const batch = await ipset.addMany(SET, [
      { ip: '10.244.0.6', comment: 'uid-c' },
      { ip: '10.244.0.5', comment: 'uid-d' },
      { ip: '10.244.0.7', comment: 'uid-e' },
    ]);
    console.log(`addMany: applied ${batch.applied}, failed at ${batch.failed.map((f) => `${f.index} (${f.error.code})`).join(', ')}`);

    console.log(`test 10.244.0.6: ${await ipset.test(SET, { ip: '10.244.0.6' })}`);
    const listing = await ipset.list(SET);
    const entries = listing.entries.map((e) => `${e.ip} ${e.comment}`).sort();
    console.log(`entries: ${entries.join(', ')}`);

    // The kernel's own view, from the ipset tool started inside the namespace (argv, no shell).
    const saved = await runInNetns(path, ['ipset', 'save', SET], { timeoutMs: 10_000 });
    for (const line of saved.stdout.split('\n').filter((l) => l.startsWith('add '))) console.log(`ipset save: ${line}`);

    await ipset.destroy(SET);
    console.log(`sets left: ${(await ipset.listNames()).length}`);
  } finally {
    ipset.close();
  }
}

try {
  await main();
} catch (err) {
  console.error(`example failed: ${err?.stack ?? err}`);
  process.exitCode = 1;
} finally {
  deleteNamespace();
}
