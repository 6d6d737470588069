// Proof with real packets: two namespaces joined by a veth pair, a listener on 15006 and nothing on 8080 in one,
// a client in the other. A REDIRECT rule set makes port 8080 reach the 15006 listener; after remove the same
// connection is refused. Every process runs through runInNetns and every wait is bounded.
import { expect, it } from 'vitest';

import { Iptables, RuleSet, runInNetns } from '../../lib/index.js';
import { type TestNetns, withNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';

const SERVER_IP = '10.250.0.1';
const CLIENT_IP = '10.250.0.2';

// Accepts one connection and answers with the port the client originally dialled (SO_ORIGINAL_DST, 80 in
// linux/netfilter_ipv4.h), so the client sees that its 8080 connection was redirected, not merely answered.
const LISTENER = `
import socket, struct
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 15006))
s.listen(8)
s.settimeout(20)
c, _ = s.accept()
try:
    port = struct.unpack("!H", c.getsockopt(socket.SOL_IP, 80, 16)[2:4])[0]
except OSError:
    port = -1
c.sendall(b"listener-15006 original-port=%d\\n" % port)
c.close()
print("served", flush=True)
`;

const CLIENT = `
import socket, sys
try:
    c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
    print(c.recv(200).decode().strip())
except ConnectionRefusedError:
    print("refused")
except OSError as e:
    print("error", e)
`;

function connect(client: TestNetns, port: number): Promise<string> {
  return runInNetns(client.path, ['python3', '-c', CLIENT, SERVER_IP, String(port)], { timeoutMs: 10_000 }).then((r) =>
    r.stdout.trim(),
  );
}

async function waitListening(server: TestNetns, port: number): Promise<void> {
  const end = Date.now() + 5000;
  while (Date.now() < end) {
    const r = await runInNetns(server.path, ['ss', '-H', '-l', '-t', '-n', 'sport', '=', `:${port}`], { timeoutMs: 5000 });
    if (r.stdout.trim() !== '') return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`nothing listened on ${port} within 5 s`);
}

function redirectRules(): RuleSet {
  return new RuleSet()
    .chain('nat', 'PODNET_INBOUND')
    .append('nat', 'PREROUTING', ['-p', 'tcp', '-j', 'PODNET_INBOUND'])
    .append('nat', 'PODNET_INBOUND', ['-p', 'tcp', '-j', 'REDIRECT', '--to-ports', '15006']);
}

describePrivileged(
  'iptables with real packets (veth pair between two namespaces)',
  () => {
    for (const backend of ['nft', 'legacy'] as const) {
      it(`redirects inbound TCP to the 15006 listener, and refuses again after remove (${backend})`, async () => {
        await withNetns(async (server, client) => {
          server.ip('link', 'add', 'pn-srv', 'type', 'veth', 'peer', 'name', 'pn-cli', 'netns', client.name);
          server.ip('addr', 'add', `${SERVER_IP}/24`, 'dev', 'pn-srv');
          server.ip('link', 'set', 'pn-srv', 'up');
          client.ip('addr', 'add', `${CLIENT_IP}/24`, 'dev', 'pn-cli');
          client.ip('link', 'set', 'pn-cli', 'up');

          const listener = runInNetns(server.path, ['python3', '-c', LISTENER], { timeoutMs: 25_000 });
          try {
            await waitListening(server, 15006);
            expect(await connect(client, 8080)).toBe('refused');

            const ipt = await Iptables.open({ netns: server.path, backend });
            const rules = redirectRules();
            await ipt.apply(rules);
            expect(await connect(client, 8080)).toBe('listener-15006 original-port=8080');

            await ipt.remove(rules);
            expect(await connect(client, 8080)).toBe('refused');
            expect(await listener).toMatchObject({ exitCode: 0, stdout: 'served\n' });
          } finally {
            // Settle the listener (it exits on its own within its deadline) before the namespaces go.
            await listener.catch(() => undefined);
          }
        }, 2);
      });
    }
  },
  missingBinary('python3', 'ss', 'iptables-nft-restore', 'iptables-legacy-restore'),
);
