// CniServer's concurrency and hygiene: one container's calls never overlap and keep their order, other containers'
// run meanwhile (shown by the handlers' interleaving, not by timing), and no fd outlives its request.
import { openSync, closeSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { encodeRequest } from '../../lib/cni/wire.js';
import { Netns } from '../../lib/netns.js';
import { SeqpacketSocket } from '../../lib/unix/index.js';
import { openFds } from '../helpers/fds.js';
import { invokeAgent } from './helpers/agent-client.js';
import { cniConfig, cniEnv, TempServer } from './helpers/cni-fixtures.js';

/** Gate is a promise a test opens by hand. */
class Gate {
  readonly opened: Promise<void>;
  open!: () => void;
  constructor() {
    this.opened = new Promise((resolve) => (this.open = resolve));
  }
}

/** until polls cond (every 5 ms, at most 20 s): for states reached through the event loop. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 4000; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`never happened: ${what}`);
}

describe('CniServer ordering', () => {
  it('runs one container calls one after another in arrival order, and other containers meanwhile', async () => {
    const events: string[] = [];
    const gates = new Map<string, Gate>([['A:ADD', new Gate()], ['A:DEL', new Gate()]]);
    const handler = async (req: { containerId: string; command: string }) => {
      const key = `${req.containerId}:${req.command}`;
      events.push(`${key} start`);
      await gates.get(key)?.opened;
      events.push(`${key} end`);
    };
    await using t = await TempServer.start({ add: handler, del: handler, check: handler });
    using self = Netns.current();
    const call = (id: string, command: string) =>
      invokeAgent(t.path, { env: cniEnv(command, { CNI_CONTAINERID: id }), stdin: cniConfig(), netnsFd: self.fd });

    // A failed expectation must not leave handlers parked (close() would wait for them): the gates open on the way out.
    await using _gates = { [Symbol.asyncDispose]: async () => gates.forEach((g) => g.open()) };
    const addA = call('A', 'ADD');
    await until(() => events.includes('A:ADD start'), 'A:ADD started');
    const delA = call('A', 'DEL');
    await until(() => t.server.connections === 2, 'A:DEL accepted and queued');
    // B is served to the end while A's ADD is held and A's DEL waits behind it.
    expect((await call('B', 'ADD')).exitStatus).toBe(0);
    expect((await call('B', 'CHECK')).exitStatus).toBe(0);
    expect(events).toEqual(['A:ADD start', 'B:ADD start', 'B:ADD end', 'B:CHECK start', 'B:CHECK end']);
    gates.get('A:DEL')!.open(); // opening DEL's gate first must not let it overtake ADD
    gates.get('A:ADD')!.open();
    expect((await addA).exitStatus).toBe(0);
    expect((await delA).exitStatus).toBe(0);
    expect(events.slice(5)).toEqual(['A:ADD end', 'A:DEL start', 'A:DEL end']);
  });

  it('keeps order per container across many concurrent calls and never overlaps them', async () => {
    const active = new Map<string, number>();
    const seen = new Map<string, number[]>();
    let overlaps = 0;
    let maxParallel = 0;
    let running = 0;
    await using t = await TempServer.start({
      async add(req) {
        const id = req.containerId;
        if ((active.get(id) ?? 0) > 0) overlaps++;
        active.set(id, (active.get(id) ?? 0) + 1);
        running++;
        maxParallel = Math.max(maxParallel, running);
        seen.set(id, [...(seen.get(id) ?? []), Number(req.args.get('SEQ'))]);
        // Yield several turns so that other requests get to run in between.
        for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        running--;
        active.set(id, active.get(id)! - 1);
      },
    });
    using self = Netns.current();
    // Each container's next call is sent once its previous one is inside the handler, so it arrives while that one
    // runs (a runtime never sends one container's calls at once); the four containers' chains run side by side.
    const chain = async (id: string) => {
      const pending: Promise<unknown>[] = [];
      for (let seq = 0; seq < 5; seq++) {
        pending.push(invokeAgent(t.path, { env: cniEnv('ADD', { CNI_CONTAINERID: id, CNI_ARGS: `SEQ=${seq}` }), stdin: cniConfig(), netnsFd: self.fd }));
        await until(() => (seen.get(id)?.length ?? 0) > seq, `${id} call ${seq} started`);
      }
      return Promise.all(pending);
    };
    const calls = ['c1', 'c2', 'c3', 'c4'].map(chain);
    await Promise.all(calls);
    expect(overlaps).toBe(0);
    for (const id of ['c1', 'c2', 'c3', 'c4']) expect(seen.get(id), id).toEqual([0, 1, 2, 3, 4]);
    expect(maxParallel, 'different containers ran at the same time').toBeGreaterThan(1);
  });
});

describe('CniServer fd hygiene', () => {
  it('leaves no fd open after many requests, good and bad, with and without netns fds', async () => {
    await using t = await TempServer.start({
      add() {},
      del() {
        throw new Error('refused');
      },
    });
    const file = join(t.dir, 'plain');
    writeFileSync(file, 'x');
    using self = Netns.current();
    const fileFd = openSync(file, 'r');
    const round = async () => {
      await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig(), netnsFd: self.fd }); // ok
      await invokeAgent(t.path, { env: cniEnv('DEL'), stdin: cniConfig(), netnsFd: self.fd }); // handler throws
      await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig(), netnsFd: fileFd }); // not a netns: 4
      await invokeAgent(t.path, { env: cniEnv('ADD', { CNI_IFNAME: '..' }), stdin: cniConfig(), netnsFd: self.fd }); // refused: 4
      using s = await SeqpacketSocket.connect(t.path); // wire break with an unannounced fd
      const [h] = encodeRequest({ hasNetnsFd: false, netnsErrno: 0, env: cniEnv('DEL') }, new Uint8Array(0));
      await s.send(h!, { fds: [self.fd] });
      expect(await s.receive({ timeoutMs: 20000 })).toBeNull();
    };
    try {
      await round(); // warm up whatever the first round opens for good (the addon, libuv)
      await until(() => t.server.connections === 0, 'warm-up connections done');
      const before = openFds();
      for (let i = 0; i < 40; i++) await round();
      await until(() => t.server.connections === 0, 'connections done');
      const after = openFds();
      const leaked = [...after].filter(([fd, target]) => before.get(fd) !== target);
      expect(leaked).toEqual([]);
    } finally {
      closeSync(fileFd);
    }
  });
});
