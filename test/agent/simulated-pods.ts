// The stage of the packet tests of both backends: a SimulatedNode with two pods, pod A serving EchoWho, torn down
// whatever the test did.
import { expect } from 'vitest';

import { runInNetns } from '../../lib/index.js';
import { SimulatedNode, echoWho, startEchoWho, type EchoWhoServer, type SimPod } from '../../lib/testing/index.js';

// The in-pod proxy's side of inbound HBONE, as ztunnel delivers it: a socket with the proxy's mark (SO_MARK 0x539)
// and IP_TRANSPARENT, bound to the original client's address, connects to the app inside the pod. The app's replies
// go to that foreign address: only the connmark set on the marked inbound packets (restored in OUTPUT, then routed by
// the fwmark rule into table 100's local route) brings them back to this socket; otherwise they leave by eth0 and
// the connection times out. Prints what echo-who answered, or timeout / refused / error <errno name>.
const HBONE_DELIVERY = `
import errno, socket, sys
source, target, port, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
SO_MARK, IP_TRANSPARENT = 36, 19
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, SO_MARK, 0x539)
s.setsockopt(socket.SOL_IP, IP_TRANSPARENT, 1)
s.bind((source, 0))
s.settimeout(timeout)
try:
    s.connect((target, port))
    data = b''
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    print(data.decode().strip() or 'empty')
except socket.timeout:
    print('timeout')
except ConnectionRefusedError:
    print('refused')
except OSError as e:
    print('error ' + errno.errorcode.get(e.errno, str(e.errno)))
`;

/**
 * hboneDelivery connects, inside pod, from the in-pod proxy's marked transparent socket bound to source, to
 * pod.ip:port (as the proxy hands inbound HBONE to the app), and resolves what echo-who answered or `timeout`.
 */
export async function hboneDelivery(pod: SimPod, source: string, port = 8080, timeoutMs = 2000): Promise<string> {
  const r = await runInNetns(pod.path, ['python3', '-c', HBONE_DELIVERY, source, pod.ip, String(port), String(timeoutMs / 1000)], {
    timeoutMs: timeoutMs + 10_000,
  });
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout.trim();
}

/** TwoPods is what a packet test works with: the node, its two pods, and A's app port reached from the host and B. */
export interface TwoPods {
  sim: SimulatedNode;
  podA: SimPod;
  podB: SimPod;
  /** What pod A's 8080 answers to the host (the port it landed on and the source it saw). */
  fromHost(): Promise<string>;
  /** What pod A's 8080 answers to pod B. */
  fromPodB(): Promise<string>;
}

/**
 * onTwoPods runs body on a fresh SimulatedNode (its tag starts with tagPrefix, so the two backends' tests never share
 * names) with EchoWho listening on ports in pod A, then stops the server, expects it to exit 0 and returns what it
 * printed with the pods (whose addresses the printed lines hold). The node is destroyed even when body throws.
 */
export async function onTwoPods(
  tagPrefix: string,
  ports: number[],
  body: (pods: TwoPods) => Promise<void>,
): Promise<{ served: string; podA: SimPod; podB: SimPod }> {
  const sim = await SimulatedNode.create({ tag: `${tagPrefix}-${process.env.PODNET_TEST_RUN ?? 'x'}`, pods: 2 });
  let server: EchoWhoServer | undefined;
  try {
    const [podA, podB] = sim.pods as [SimPod, SimPod];
    server = await startEchoWho(podA.path, { ports, lifetimeMs: 50_000 });
    const fromHost = () => echoWho(sim.host.path, podA.ip, 8080);
    const fromPodB = () => echoWho(podB.path, podA.ip, 8080);
    await body({ sim, podA, podB, fromHost, fromPodB });
    const served = await server.stop();
    server = undefined;
    expect(served.exitCode).toBe(0);
    return { served: served.stdout, podA, podB };
  } finally {
    await server?.stop().catch(() => undefined);
    await sim.destroy();
  }
}
