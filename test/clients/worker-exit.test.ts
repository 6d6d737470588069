// A worker thread that uses podnet may be terminated while its calls are out (a libuv worker's, or a hop's on the
// hop thread): the process goes on, the calls that come back to the ended instance are dropped with their sockets
// closed, and the hop thread, which runs the addon's code for the process's life, keeps it loaded even when only
// workers ever loaded it. The workers run the built package (dist/), as a user's workers would.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';

import { Rtnetlink } from '../../lib/index.js';
import { openFds } from '../helpers/fds.js';
import { withNetns } from '../helpers/netns.js';
import { describePrivileged } from '../helpers/privileged.js';

const BUILT = pathToFileURL(fileURLToPath(new URL('../../dist/index.js', import.meta.url))).href;

/** What this process's socket fds refer to, sorted. */
const sockets = () => [...openFds().values()].filter((target) => target.startsWith('socket:[')).sort();

/**
 * A worker's code: opens 32 clients in the namespace at once (of all three kinds, and route clients whose socket waits
 * for their first operation, which is then out as a hop), closes them, again, until terminated.
 */
const WORKER = `
  import('node:worker_threads').then(async ({ parentPort, workerData }) => {
    const { Ipset, Nftables, Rtnetlink } = await import(workerData.dist);
    const deferred = async (options) => {
      const client = await Rtnetlink.open({ ...options, defer: true });
      await client.links();
      return client;
    };
    const kinds = [(o) => Ipset.open(o), (o) => Nftables.open(o), (o) => Rtnetlink.open(o), deferred];
    for (;;) {
      const netns = workerData.netns;
      const opening = Array.from({ length: 32 }, (_, i) => kinds[i % 4]({ netns }));
      parentPort.postMessage('out');
      for (const client of await Promise.all(opening)) client.close();
    }
  });`;

/**
 * The same from a program whose main thread never loads podnet; when its last worker ended it prints whether the
 * addon is still mapped into the process.
 */
const PROGRAM = `
  import { Worker } from 'node:worker_threads';
  import { once } from 'node:events';
  import { readFileSync } from 'node:fs';
  const [dist, netns] = process.argv.slice(-2);
  for (let i = 0; i < 20; i++) {
    const worker = new Worker(${JSON.stringify(WORKER)}, { eval: true, workerData: { dist, netns } });
    await once(worker, 'message');
    await worker.terminate();
  }
  // The hop thread outlives the workers: give it a moment past their end, where an unloaded addon would crash it.
  await new Promise((resolve) => setTimeout(resolve, 100));
  console.log(readFileSync('/proc/self/maps', 'utf8').includes('podnet.node') ? 'mapped' : 'unmapped');`;

describePrivileged('worker threads that end while their calls are out', () => {
  it('leave the process running, their sockets closed, and the hops of this thread working', async () => {
    await withNetns(async (ns) => {
      const before = sockets();
      for (let i = 0; i < 10; i++) {
        const worker = new Worker(WORKER, { eval: true, workerData: { dist: BUILT, netns: ns.path } });
        await once(worker, 'message');
        await worker.terminate();
      }
      const rt = await Rtnetlink.open({ netns: ns.path });
      expect((await rt.links()).map((l) => l.name)).toEqual(['lo']);
      rt.close();
      // Hops of the ended workers may still be coming back: their sockets close when they do.
      await expect.poll(sockets, { timeout: 10_000 }).toEqual(before);
    });
  });

  it('do not take the addon away from the hop thread when only workers loaded it', async () => {
    await withNetns(async (ns) => {
      const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
        execFile(process.execPath, ['--input-type=module', '-e', PROGRAM, BUILT, ns.path], { timeout: 120_000 }, (err, out, errOut) =>
          err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve({ stdout: out }),
        ),
      );
      expect(stdout.trim()).toBe('mapped');
    });
  });
});
