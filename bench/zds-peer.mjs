// The node proxy's stand-in for the benchmarks: a ZtunnelServer in this process and the C peer that acks every
// request (reference/zds_ack_peer.c; ztunnel is native, and a Node peer would add its own event loop to each round
// trip), connected and past its snapshot before fn runs, and both gone afterwards, whatever happens.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ZtunnelServer } from '../dist/index.js';
import { buildReference } from './harness.mjs';

/** withZdsPeer builds the peer into binDir (once), starts server and peer, and runs fn(server). */
export async function withZdsPeer(binDir, fn) {
  const peerBin = join(binDir, 'zds_ack_peer');
  if (!existsSync(peerBin)) buildReference(binDir, 'zds_ack_peer');
  const dir = mkdtempSync(join(tmpdir(), 'podnet-bench-zds-'));
  const server = await ZtunnelServer.listen({ path: join(dir, 'ztunnel.sock') });
  const ready = new Promise((resolve) => server.once('snapshotSent', resolve));
  const peer = spawn(peerBin, [server.path], { stdio: 'inherit' });
  try {
    await ready;
    return await fn(server);
  } finally {
    await server.close(); // the peer exits at EOF
    await new Promise((resolve) => (peer.exitCode !== null || peer.signalCode !== null ? resolve() : peer.on('exit', resolve)));
    rmSync(dir, { recursive: true, force: true });
  }
}
