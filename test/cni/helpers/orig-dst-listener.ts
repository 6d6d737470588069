// An IPv6 listener inside a pod namespace that tells a redirected connection's original destination: the ztunnel
// player listens on 0.0.0.0 only, so an IPv6 connection redirected to the outbound port needs a listener of its own
// there ([::]:PORT, IPV6_V6ONLY, beside the player's IPv4 one). It serves one connection, answering
// `v6-listener [<original ip>]:<original port>` (IP6T_SO_ORIGINAL_DST from conntrack), and exits.
import { runInNetns, type RunResult } from '../../../lib/spawn.js';
import { echoWho } from '../../../lib/testing/index.js';

const SCRIPT = `
import socket, struct, sys
IP6T_SO_ORIGINAL_DST = 80
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::", int(sys.argv[1])))
s.listen(4)
s.settimeout(float(sys.argv[2]))
c, peer = s.accept()
raw = c.getsockopt(socket.IPPROTO_IPV6, IP6T_SO_ORIGINAL_DST, 28)
port = struct.unpack("!H", raw[2:4])[0]
ip = socket.inet_ntop(socket.AF_INET6, raw[8:24])
line = "v6-listener [%s]:%d" % (ip, port)
c.sendall((line + "\\n").encode())
c.close()
print(line, peer[0])
`;

/**
 * connectThroughV6Listener starts the listener in netns on port, connects from inside netns to [ip]:dport (retrying
 * while the connection is refused, that is until the listener is up) and resolves the client's answer and how the
 * listener ended.
 */
export async function connectThroughV6Listener(
  netns: string,
  port: number,
  ip: string,
  dport: number,
  deadlineMs: number,
): Promise<{ answer: string; listener: RunResult }> {
  const listener = runInNetns(netns, ['python3', '-c', SCRIPT, String(port), String(deadlineMs / 1000)], { timeoutMs: deadlineMs + 5000 });
  const ended = listener.then(
    () => true,
    () => true,
  );
  const until = Date.now() + deadlineMs;
  let answer = 'refused';
  while (answer === 'refused' && Date.now() < until) {
    answer = await echoWho(netns, ip, dport, { timeoutMs: 3000 });
    if (answer === 'refused') {
      if (await Promise.race([ended, new Promise((r) => setTimeout(() => r(false), 100))])) break;
    }
  }
  return { answer, listener: await listener };
}
