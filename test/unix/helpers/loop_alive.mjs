// Child process for the event-loop tests, on the raw addon (plain JS, no TypeScript): whether podnet's handles keep
// a process alive. Prints one line per step; the parent drives the other end.
//   idle PATH     a server, a connection and one message, then everything left open and idle: must exit by itself
//   accept PATH   a server with an awaited accept and nothing else: must stay until the parent connects, then
//                 waits for one message the same way
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const addon = require(process.env.PODNET_ADDON_PATH || fileURLToPath(new URL('../../../build/Release/podnet.node', import.meta.url)));
const [mode, path] = process.argv.slice(2);

if (mode === 'idle') {
  const server = new addon.SeqpacketServerHandle(path, 0o600, 4);
  const client = new addon.SeqpacketSocketHandle();
  const accepted = server.accept(-1);
  await client.connect(path, -1);
  const conn = await accepted;
  await client.send(Buffer.from('ping'), [], -1);
  const msg = await conn.receive(64, 0, -1);
  console.log(`idle ${msg.data.toString()}`);
  // Kept reachable so that no finalizer closes anything: only the loop decides whether this process ends.
  globalThis.kept = [server, client, conn];
} else if (mode === 'accept') {
  const server = new addon.SeqpacketServerHandle(path, 0o600, 4);
  const pending = server.accept(-1);
  console.log('listening');
  const conn = await pending;
  console.log('accepted');
  const msg = await conn.receive(64, 0, -1);
  console.log(`received ${msg.data.toString()}`);
  conn.close();
  server.close();
}
