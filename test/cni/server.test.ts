// CniServer driven as podnet-cni drives it (invokeAgent): every command, what handlers see, the answers, the
// prevResult conversion table, handler errors and their codes, diagnostics and close().
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { AgentError } from '../../lib/agent/errors.js';
import { CniError, type CniRequest, CniServer, type CniServerOptions, CNI_VERSIONS } from '../../lib/cni/index.js';
import { type CniRequestMessage, DIAGNOSTICS_CHANNELS } from '../../lib/diagnostics.js';
import { encodeRequest } from '../../lib/cni/wire.js';
import { InvalidArgumentError } from '../../lib/errors.js';
import { Netns } from '../../lib/netns.js';
import { SeqpacketSocket } from '../../lib/unix/index.js';
import { invalidValue } from '../../lib/validate.js';
import { invokeAgent } from './helpers/agent-client.js';
import { cniConfig, cniEnv, type CniErrorBody, PREV_RESULT_100, TempServer } from './helpers/cni-fixtures.js';

describe('CniServer commands', () => {
  it('ADD hands the handler the checked request and answers the prevResult', async () => {
    const seen: CniRequest[] = [];
    let netnsMatched = false;
    await using t = await TempServer.start({
      add(req) {
        seen.push(req);
        using self = Netns.current();
        netnsMatched = req.netns!.equals(self);
      },
    });
    using self = Netns.current();
    const answer = await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig(), netnsFd: self.fd });
    expect(answer).toEqual({ exitStatus: 0, stdout: JSON.stringify(PREV_RESULT_100), stderr: '' });
    expect(seen).toHaveLength(1);
    const req = seen[0]!;
    expect(req.command).toBe('ADD');
    expect(req.containerId).toBe('c0ffee01');
    expect(req.ifName).toBe('eth0');
    expect(req.netnsPath).toBe('/run/netns/cni-1234');
    expect(req.netns!.path).toBe('/run/netns/cni-1234');
    expect(netnsMatched).toBe(true);
    expect(req.netns!.closed, 'closed by the server after the handler').toBe(true);
    expect(req.pod).toEqual({ uid: 'uid-1', name: 'web-0', namespace: 'shop' });
    expect(req.ips).toEqual(['10.88.0.5', 'fd00:88::5']);
    expect(req.config.name).toBe('k8s-pod-network');
    expect(req.config.cniVersion).toBe('1.0.0');
    expect(req.config.raw.socketPath).toBe('/var/run/podnet/cni.sock');
    expect(req.config.prevResult?.ips[0]).toEqual({ address: '10.88.0.5/16', gateway: '10.88.0.1', interface: 1 });
    expect(req.config.prevResult?.routes).toEqual([{ dst: '0.0.0.0/0' }, { dst: '::/0', gw: 'fd00:88::1' }]);
    expect([...req.args]).toEqual([
      ['IgnoreUnknown', '1'],
      ['K8S_POD_NAMESPACE', 'shop'],
      ['K8S_POD_NAME', 'web-0'],
      ['K8S_POD_INFRA_CONTAINER_ID', 'c0ffee01'],
      ['K8S_POD_UID', 'uid-1'],
    ]);
    expect(req.validAttachments).toBeUndefined();
    expect(req.peer.uid).toBe(process.getuid!());
    expect(req.peer.pid).toBe(process.pid);
  });

  it('a handler keeps the namespace with reopen()', async () => {
    let kept: Netns | undefined;
    await using t = await TempServer.start({ add: (req) => void (kept = req.netns!.reopen()) });
    using self = Netns.current();
    expect((await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig(), netnsFd: self.fd })).exitStatus).toBe(0);
    using k = kept!;
    expect(k.closed).toBe(false);
    expect(k.equals(self)).toBe(true);
  });

  it('podman-style CNI_ARGS (a name only) give a pod with only a name', async () => {
    const pods: unknown[] = [];
    await using t = await TempServer.start({ add: (req) => void pods.push(req.pod) });
    using self = Netns.current();
    const env = cniEnv('ADD', { CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAME=web' });
    expect((await invokeAgent(t.path, { env, stdin: cniConfig(), netnsFd: self.fd })).exitStatus).toBe(0);
    expect(pods).toEqual([{ name: 'web' }]);
  });

  it('CHECK answers nothing on success', async () => {
    const commands: string[] = [];
    await using t = await TempServer.start({ check: (req) => void commands.push(req.command) });
    using self = Netns.current();
    expect(await invokeAgent(t.path, { env: cniEnv('CHECK'), stdin: cniConfig(), netnsFd: self.fd })).toEqual({ exitStatus: 0, stdout: '', stderr: '' });
    expect(commands).toEqual(['CHECK']);
  });

  it('DEL runs without a netns, without prevResult, and when the netns could not be opened', async () => {
    const seen: [string | undefined, boolean, string[]][] = [];
    await using t = await TempServer.start({ del: (req) => void seen.push([req.netnsPath, req.netns === undefined, req.ips]) });
    const noNetns = await invokeAgent(t.path, { env: cniEnv('DEL', { CNI_NETNS: '' }), stdin: cniConfig({}, null) });
    const gone = await invokeAgent(t.path, { env: cniEnv('DEL'), stdin: cniConfig(), netnsErrno: 2 });
    expect(noNetns).toEqual({ exitStatus: 0, stdout: '', stderr: '' });
    expect(gone).toEqual({ exitStatus: 0, stdout: '', stderr: '' });
    expect(seen).toEqual([
      [undefined, true, []],
      ['/run/netns/cni-1234', true, ['10.88.0.5', 'fd00:88::5']],
    ]);
  });

  it('STATUS answers success, 50 for a throw, 51 when the error says so', async () => {
    let fail: unknown;
    await using t = await TempServer.start({
      status() {
        if (fail) throw fail;
      },
    });
    const env = cniEnv('STATUS', { CNI_CONTAINERID: undefined, CNI_NETNS: undefined, CNI_IFNAME: undefined, CNI_ARGS: undefined });
    const stdin = cniConfig({ cniVersion: '1.1.0' }, null);
    expect(await invokeAgent(t.path, { env, stdin })).toEqual({ exitStatus: 0, stdout: '', stderr: '' });
    fail = new AgentError('proxy', 'ztunnel is not connected', { retryable: true });
    const down = await invokeAgent(t.path, { env, stdin });
    expect(down.exitStatus).toBe(1);
    expect(JSON.parse(down.stdout)).toEqual({ cniVersion: '1.1.0', code: 50, msg: 'ztunnel is not connected', details: 'ERR_AGENT_PROXY' });
    fail = new CniError(51, 'rules missing on running pods', 'ERR_DRIFT');
    expect(JSON.parse((await invokeAgent(t.path, { env, stdin })).stdout)).toEqual({ cniVersion: '1.1.0', code: 51, msg: 'rules missing on running pods', details: 'ERR_DRIFT' });
  });

  it('GC hands the handler the typed valid attachments', async () => {
    const seen: unknown[] = [];
    await using t = await TempServer.start({ gc: (req) => void seen.push(req.validAttachments) });
    const env = cniEnv('GC', { CNI_CONTAINERID: undefined, CNI_NETNS: undefined, CNI_IFNAME: undefined });
    const attachments = [{ containerID: 'aaa', ifname: 'eth0' }, { containerID: 'bbb', ifname: 'net1' }];
    const stdin = cniConfig({ cniVersion: '1.1.0', 'cni.dev/valid-attachments': attachments }, null);
    expect(await invokeAgent(t.path, { env, stdin })).toEqual({ exitStatus: 0, stdout: '', stderr: '' });
    expect(seen).toEqual([attachments]);
  });

  it('a missing handler is success for every command', async () => {
    await using t = await TempServer.start({});
    using self = Netns.current();
    const none = { CNI_CONTAINERID: undefined, CNI_NETNS: undefined, CNI_IFNAME: undefined };
    const cases: [string, Parameters<typeof invokeAgent>[1], string][] = [
      ['ADD', { env: cniEnv('ADD'), stdin: cniConfig(), netnsFd: self.fd }, JSON.stringify(PREV_RESULT_100)],
      ['CHECK', { env: cniEnv('CHECK'), stdin: cniConfig(), netnsFd: self.fd }, ''],
      ['DEL', { env: cniEnv('DEL'), stdin: cniConfig(), netnsFd: self.fd }, ''],
      ['STATUS', { env: cniEnv('STATUS', none), stdin: cniConfig({ cniVersion: '1.1.0' }, null) }, ''],
      ['GC', { env: cniEnv('GC', none), stdin: cniConfig({ cniVersion: '1.1.0', 'cni.dev/valid-attachments': [] }, null) }, ''],
    ];
    for (const [command, call, stdout] of cases) {
      expect(await invokeAgent(t.path, call), command).toEqual({ exitStatus: 0, stdout, stderr: '' });
    }
  });

  it('VERSION, should it reach the server, is answered with the supported versions', async () => {
    await using t = await TempServer.start({});
    const answer = await invokeAgent(t.path, { env: cniEnv('VERSION', { CNI_NETNS: 'dummy', CNI_IFNAME: 'dummy' }), stdin: '{"cniVersion":"1.0.0","name":"n"}' });
    expect(answer.exitStatus).toBe(0);
    expect(JSON.parse(answer.stdout)).toEqual({ cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
  });
});

describe('prevResult conversion', () => {
  const legacy = (v: string) => ['0.3.0', '0.3.1', '0.4.0'].includes(v);
  function resultIn(version: string): Record<string, unknown> {
    const ips = PREV_RESULT_100.ips.map((ip) => (legacy(version) ? { ...ip, version: ip.address.includes(':') ? '6' : '4' } : { ...ip }));
    return { ...structuredClone(PREV_RESULT_100), cniVersion: version, ips, 'x-future-key': { kept: true } };
  }
  const table = CNI_VERSIONS.flatMap((from) => CNI_VERSIONS.map((to) => [from, to] as const));

  it.each(table)('a %s prevResult in a %s config is answered in %s', async (from, to) => {
    await using t = await TempServer.start({});
    using self = Netns.current();
    const answer = await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig({ cniVersion: to }, resultIn(from)), netnsFd: self.fd });
    expect(answer.exitStatus, answer.stdout).toBe(0);
    expect(JSON.parse(answer.stdout)).toEqual(resultIn(to));
  });

  it('a prevResult without its own cniVersion is read in the config version', async () => {
    await using t = await TempServer.start({});
    using self = Netns.current();
    const { cniVersion: _, ...bare } = resultIn('0.4.0');
    const answer = await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig({ cniVersion: '0.4.0' }, bare), netnsFd: self.fd });
    expect(JSON.parse(answer.stdout)).toEqual(resultIn('0.4.0'));
  });
});

describe('handler errors', () => {
  const cases: [string, unknown, number, string][] = [
    ['a retryable AgentError', new AgentError('inpod-rules', 'iptables lock busy', { retryable: true }), 11, 'ERR_AGENT_INPOD_RULES'],
    ['a final AgentError', new AgentError('inpod-rules', 'rule refused', { retryable: false }), 100, 'ERR_AGENT_INPOD_RULES'],
    ['an InvalidArgumentError', invalidValue('pod.uid', 'a UID', ''), 7, 'ERR_INVALID_ARG_VALUE'],
    ['an InvalidArgumentError about the netns', new InvalidArgumentError('netns is closed', 'ERR_INVALID_ARG_VALUE', 'netns'), 4, 'ERR_INVALID_ARG_VALUE'],
    ['a CniError', new CniError(3, 'container unknown', 'c0ffee01'), 3, 'c0ffee01'],
    ['a plain Error', new Error('boom'), 100, ''],
    ['a thrown string', 'just a string', 100, ''],
  ];

  it.each(cases)('%s is answered with its code, message and details', async (_, thrown, code, details) => {
    await using t = await TempServer.start({
      add() {
        throw thrown;
      },
      async del() {
        await Promise.resolve();
        throw thrown;
      },
    });
    using self = Netns.current();
    for (const command of ['ADD', 'DEL']) {
      const answer = await invokeAgent(t.path, { env: cniEnv(command), stdin: cniConfig({ cniVersion: '0.4.0' }), netnsFd: self.fd });
      expect(answer.exitStatus).toBe(1);
      const msg = thrown instanceof Error ? thrown.message : String(thrown);
      expect(JSON.parse(answer.stdout) as CniErrorBody).toEqual({ cniVersion: '0.4.0', code, msg, details });
      expect(answer.stderr).toBe(`podnet-cni: error ${code}: ${msg}\n`);
    }
    // The server lives on after every throw.
    expect((await invokeAgent(t.path, { env: cniEnv('CHECK'), stdin: cniConfig(), netnsFd: self.fd })).exitStatus).toBe(0);
  });
});

describe('logging', () => {
  it('logs refusals and handler failures, and a logger that throws changes no answer', async () => {
    const lines: string[] = [];
    const throwing = (message: string) => {
      lines.push(message);
      throw new Error('logger down');
    };
    await using t = await TempServer.start({
      logger: { debug: throwing, info: throwing, warn: throwing, error: throwing },
      add() {
        throw new Error('boom');
      },
    });
    using self = Netns.current();
    const failed = await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig(), netnsFd: self.fd });
    expect(JSON.parse(failed.stdout)).toMatchObject({ code: 100, msg: 'boom' });
    const refused = await invokeAgent(t.path, { env: cniEnv('ADD', { CNI_IFNAME: '' }), stdin: cniConfig(), netnsFd: self.fd });
    expect(JSON.parse(refused.stdout)).toMatchObject({ code: 4, details: 'CNI_IFNAME' });
    expect(lines).toEqual(['cni: ADD handler failed', 'cni: ADD refused: CNI_IFNAME is not set']);
  });
});

describe('diagnostics', () => {
  it('publishes one podnet:cni:request message per request: command, container, pod, code, outcome, timing', async () => {
    const messages: CniRequestMessage[] = [];
    const listener = (m: unknown) => void messages.push(m as CniRequestMessage);
    subscribe(DIAGNOSTICS_CHANNELS.cniRequest, listener);
    try {
      const failure = new AgentError('proxy', 'no proxy', { retryable: true });
      await using t = await TempServer.start({
        add() {},
        del() {
          throw failure;
        },
      });
      using self = Netns.current();
      await invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig(), netnsFd: self.fd });
      await invokeAgent(t.path, { env: cniEnv('DEL'), stdin: cniConfig(), netnsFd: self.fd });
      await invokeAgent(t.path, { env: cniEnv('ADD', { CNI_IFNAME: 'a/b' }), stdin: cniConfig(), netnsFd: self.fd });
      await t.server.close();
      expect(messages.map(({ startTime: _s, durationMs: _d, ...rest }) => rest)).toEqual([
        { command: 'ADD', containerId: 'c0ffee01', pod: 'uid-1', cniCode: 0, outcome: 'ok' },
        { command: 'DEL', containerId: 'c0ffee01', pod: 'uid-1', cniCode: 11, outcome: 'ERR_AGENT_PROXY', error: failure },
        { command: 'ADD', containerId: undefined, pod: undefined, cniCode: 4, outcome: 'ERR_CNI', error: expect.any(CniError) },
      ]);
      for (const m of messages) expect(m.durationMs).toBeGreaterThanOrEqual(0);
    } finally {
      unsubscribe(DIAGNOSTICS_CHANNELS.cniRequest, listener);
    }
  });
});

describe('close', () => {
  it('waits for a running handler, answers it, refuses new connections and removes the socket file', async () => {
    let release!: () => void;
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const gate = new Promise<void>((resolve) => (release = resolve));
    const events: string[] = [];
    await using t = await TempServer.start({
      async add() {
        events.push('handler started');
        started();
        await gate;
        events.push('handler done');
      },
    });
    using self = Netns.current();
    const call = invokeAgent(t.path, { env: cniEnv('ADD'), stdin: cniConfig(), netnsFd: self.fd });
    await running;
    const closing = t.server.close().then(() => events.push('closed'));
    await expect(SeqpacketSocket.connect(t.path)).rejects.toMatchObject({ code: 'ENOENT' });
    release();
    expect((await call).exitStatus).toBe(0);
    await closing;
    expect(events).toEqual(['handler started', 'handler done', 'closed']);
    expect(t.server.closed).toBe(true);
    expect(t.server.connections).toBe(0);
  });
});

describe('close of a connection still sending', () => {
  it('closes it without an answer and without waiting for its deadline', async () => {
    const calls: string[] = [];
    await using t = await TempServer.start({ requestTimeoutMs: 600000, del: (req) => void calls.push(req.command) });
    using socket = await SeqpacketSocket.connect(t.path);
    const [header] = encodeRequest({ hasNetnsFd: false, netnsErrno: 0, env: cniEnv('DEL') }, Buffer.from(cniConfig()));
    await socket.send(header!); // and never the config
    for (let i = 0; i < 2000 && t.server.connections === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(t.server.connections).toBe(1);
    await t.server.close();
    expect(await socket.receive({ timeoutMs: 20000 })).toBeNull();
    expect(t.server.connections).toBe(0);
    expect(calls).toEqual([]);
  });
});

describe('CniServer.listen options', () => {
  const cases: [string, Record<string, unknown>, string, string][] = [
    ['options not an object', { __whole: 42 }, 'ERR_INVALID_ARG_TYPE', 'options'],
    ['a handler that is not a function', { add: 'yes' }, 'ERR_INVALID_ARG_TYPE', 'options.add'],
    ['a uid of -1', { allowedUids: [-1] }, 'ERR_INVALID_ARG_VALUE', 'options.allowedUids[0]'],
    ['a hole in allowedUids', { allowedUids: [1000, , 1001] }, 'ERR_INVALID_ARG_VALUE', 'options.allowedUids[1]'],
    ['allowedUids not an array', { allowedUids: 1000 }, 'ERR_INVALID_ARG_TYPE', 'options.allowedUids'],
    ['requestTimeoutMs 0', { requestTimeoutMs: 0 }, 'ERR_INVALID_ARG_VALUE', 'options.requestTimeoutMs'],
    ['maxConnections 1.5', { maxConnections: 1.5 }, 'ERR_INVALID_ARG_VALUE', 'options.maxConnections'],
    ['mode 0o1000', { mode: 0o1000 }, 'ERR_INVALID_ARG_VALUE', 'options.mode'],
    ['a logger that is a string', { logger: 'console' }, 'ERR_INVALID_ARG_TYPE', 'options.logger'],
  ];
  it.each(cases)('refuses %s with InvalidArgumentError and makes no socket file', async (_, fields, code, argument) => {
    const dir = mkdtempSync(join(tmpdir(), 'podnet-cni-opt-'));
    try {
      const path = join(dir, 'cni.sock');
      const options = '__whole' in fields ? fields.__whole : { path, ...fields };
      const err = await CniServer.listen(options as CniServerOptions).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect(err).toMatchObject({ code, argument });
      expect(existsSync(path)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('makes the socket file with mode 0600 by default', async () => {
    await using t = await TempServer.start({});
    expect(statSync(t.path).mode & 0o777).toBe(0o600);
    expect(t.server.toString()).toBe(`CniServer(${t.path})`);
  });
});
