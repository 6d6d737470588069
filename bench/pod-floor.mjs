// Scenario 16's floor: one pod's netlink work done by one C thread (reference/pod_raw.c), as a contender that takes
// turns with the agents. Its requests are podnet's own bytes: the plain pod's in-pod tables as the nftables backend
// prepares them, the policy rule and route in one exchange, and a probe element with a comment, each captured through
// podnet's fake kernels (which answer as the kernel does) and written to files for the C program.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

import { Nftables, Rtnetlink, inpodRoute, inpodRoutingRule, nftInpodRules } from '../dist/index.js';
import { FakeNftables, FakeRtnetlink } from '../dist/testing/index.js';
import { buildReference } from './harness.mjs';

/** The element's address in the captured bytes, which the C program replaces with each pod's. */
const PLACEHOLDER = '10.255.255.254';
const TABLE = { family: 'inet', name: 'podnet-floor' };

/** Runs fn on a client whose peer is fake, and writes the requests it sent to file (u32 length, bytes; each). */
async function capture(file, open, fake, fn) {
  const sent = [];
  const client = await open({ netlink: { exchange: (request) => (sent.push(Buffer.from(request)), fake.exchange(request)) } });
  try {
    await fn(client);
  } finally {
    client.close();
  }
  writeFileSync(file, Buffer.concat(sent.flatMap((r) => [Buffer.from(new Uint32Array([r.length]).buffer), r])));
}

/** Writes the four request files into dir: the host's set, the pod's tables, its routing, one element. */
async function captureRequests(dir) {
  const files = { setup: join(dir, 'pod-floor-setup.bin'), inpod: join(dir, 'pod-floor-inpod.bin'), routes: join(dir, 'pod-floor-routes.bin'), element: join(dir, 'pod-floor-element.bin') };
  const host = new FakeNftables();
  const set = { family: 'inet', table: TABLE.name, name: 'probes', type: 'ipv4_addr' };
  await capture(files.setup, (o) => Nftables.open(o), host, (nft) => nft.apply({ tables: [{ ...TABLE, sets: [set], chains: [], rules: [] }] }));
  await capture(files.element, (o) => Nftables.open(o), host, (nft) => nft.addElement(TABLE, 'probes', { address: PLACEHOLDER, comment: 'pod-floor-0000' }));
  await capture(files.inpod, (o) => Nftables.open(o), new FakeNftables(), (nft) => nft.run(Nftables.prepare(nftInpodRules({ ipv6: false }))));
  await capture(files.routes, (o) => Rtnetlink.open(o), new FakeRtnetlink(), (rt) =>
    rt.batch([{ op: 'addRule', rule: inpodRoutingRule(4) }, { op: 'addRoute', route: inpodRoute(4) }]));
  return files;
}

/**
 * startPodFloor builds pod_raw into binDir, captures its requests and starts it in hostPath's namespace. The result's
 * pod(netnsPath, ip) resolves with the C program's own time for that pod (ms); close() ends it.
 */
export async function startPodFloor(binDir, hostPath) {
  const bin = buildReference(binDir, 'pod_raw');
  const f = await captureRequests(binDir);
  const child = spawn(bin, [hostPath, f.setup, f.inpod, f.routes, f.element], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  return {
    async pod(netnsPath, ip) {
      child.stdin.write(`${netnsPath} ${ip}\n`);
      const { value, done } = await lines.next();
      if (done) throw new Error(`pod_raw exited ${child.exitCode ?? child.signalCode}`);
      return Number(value);
    },
    async close() {
      child.stdin.end();
      if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
    },
  };
}
