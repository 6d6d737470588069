// Regression (issue 15, found by the concurrency tests): an addWorkload sent to a connection whose snapshot is still
// being sent was undone by the snapshot. The snapshot reads its items from the table when it begins, the table takes
// the new entry only once the proxy acked it, and the connection sends in order: the snapshot's stale Add of the uid
// went out after the newer one, so the proxy kept the old workload (and the old netns fd) while the server's table
// said the new one. Both ways in: a 'connected' listener that re-adds a pod, and an add racing a proxy's reconnect.
// The invariant checked: once SnapshotSent is acked, the proxy's view (its requests applied in order) is the table.
import { describe, expect, it } from 'vitest';

import { Netns, SeqpacketSocket } from '../../lib/index.js';
import { ZtunnelServer } from '../../lib/proxy/ztunnel-server.js';
import { decodeRequest, encodeAck, encodeHello, type ZdsRequest } from '../../lib/proxy/zds-messages.js';
import { checkFdsPerTest, socketDir } from '../unix/helpers/fds.js';

const nextPath = socketDir();
const WAIT = { timeoutMs: 20_000 };
const OLD = { name: 'web-0', namespace: 'shop', serviceAccount: 'web' };
const NEW = { name: 'web-0-recreated', namespace: 'shop', serviceAccount: 'web' };

/** A proxy played by hand: it keeps what it was told, uid -> workload name, as ztunnel would. */
class ViewProxy implements Disposable {
  readonly requests: ZdsRequest[] = [];
  readonly view = new Map<string, string>();
  private constructor(readonly socket: SeqpacketSocket) {}

  static async connect(path: string): Promise<ViewProxy> {
    const socket = await SeqpacketSocket.connect(path, WAIT);
    await socket.send(encodeHello(), WAIT);
    return new ViewProxy(socket);
  }

  /** next reads one request into the view; the caller acks it. */
  async next(): Promise<ZdsRequest> {
    const msg = await this.socket.receive({ ...WAIT, maxFds: 4 });
    if (msg === null) throw new Error('the server closed the connection');
    for (const fd of msg.fds) fd.close();
    const req = decodeRequest(msg.data);
    this.requests.push(req);
    if (req.kind === 'add') this.view.set(req.uid, req.workload.name);
    if (req.kind === 'del') this.view.delete(req.uid);
    return req;
  }

  async ack(): Promise<void> {
    await this.socket.send(encodeAck(), WAIT);
  }

  /** Reads and acks everything up to and including SnapshotSent. */
  async throughSnapshot(): Promise<void> {
    for (;;) {
      const req = await this.next();
      await this.ack();
      if (req.kind === 'snapshotSent') return;
    }
  }

  [Symbol.dispose](): void {
    this.socket.close();
  }
}

const tableView = (server: ZtunnelServer) => new Map(server.workloads.map((w) => [w.uid, w.workload.name]));

describe('a snapshot does not undo an add sent to its connection meanwhile (any user)', () => {
  checkFdsPerTest();

  it("a 'connected' listener re-adding an enrolled pod: the proxy ends with the new workload, as the table does", async () => {
    await using server = await ZtunnelServer.listen({ path: nextPath() });
    using ns = Netns.current();
    server.replaceWorkloads([
      { uid: 'a', workload: OLD, netns: ns },
      { uid: 'b', workload: OLD, netns: ns },
    ]);
    let readded: Promise<void> | undefined;
    server.on('connected', () => {
      readded = server.addWorkload('a', NEW, ns);
    });
    using proxy = await ViewProxy.connect(server.path);
    await proxy.throughSnapshot();
    await readded;
    expect(proxy.requests.map((r) => (r.kind === 'add' ? `add ${r.uid} ${r.workload.name}` : r.kind))).toEqual([
      'add a web-0-recreated',
      'add b web-0',
      'snapshotSent',
    ]);
    expect(proxy.view).toEqual(tableView(server));
  });

  it('an add racing the snapshot of a reconnecting proxy: sent once, never followed by the stale entry', async () => {
    await using server = await ZtunnelServer.listen({ path: nextPath() });
    using ns = Netns.current();
    server.replaceWorkloads(['a', 'b', 'c'].map((uid) => ({ uid, workload: OLD, netns: ns })));
    using proxy = await ViewProxy.connect(server.path);
    // The snapshot is at its first item, not yet acked, when b (its next item) is added anew: the add is queued
    // ahead of the snapshot's b, whose turn comes as soon as a is acked, before the proxy has answered the add.
    expect(await proxy.next()).toMatchObject({ kind: 'add', uid: 'a' });
    const readded = server.addWorkload('b', NEW, ns);
    await proxy.ack();
    await proxy.throughSnapshot();
    await readded;
    const adds = proxy.requests.filter((r) => r.kind === 'add' && r.uid === 'b');
    expect(adds).toEqual([{ kind: 'add', uid: 'b', workload: NEW }]);
    expect(proxy.view).toEqual(tableView(server));
    expect(tableView(server).get('b')).toBe(NEW.name);
  });
});
