// A node for the chain tests, all of it in namespaces and a temp folder the test makes: a "host" namespace where
// Debian's bridge plugin builds its bridge, a pod namespace per pod, an agent (CniServer whose handlers enroll pods
// with a NodeNetwork on that host namespace, a ZtunnelServer with the ztunnel player as the node proxy listening on
// the in-pod outbound port) and a CniRuntime running bridge (IPAM host-local, state in the temp folder), loopback
// and podnet-cni as one conflist. dispose() undoes everything, also after a failure, and reports what it could not.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { CniServer, type CniAttachment, type CniRequest } from '../../../lib/cni/index.js';
import { NodeNetwork, type PodInfo } from '../../../lib/index.js';
import { ZtunnelServer } from '../../../lib/proxy/ztunnel-server.js';
import { runInNetns } from '../../../lib/spawn.js';
import { TestNetns } from '../../helpers/netns.js';
import { startZtunnelPlayer, type PlayerEvent, type ZtunnelPlayer } from '../../helpers/ztunnel-player.js';
import { PLUGIN } from './plugin-run.js';
import { CniRuntime, type Attachment, type Conflist } from './runtime.js';

/** Where Debian's containernetworking-plugins put bridge, host-local and loopback. */
export const CNI_PLUGIN_DIR = '/usr/lib/cni';
/** The in-pod outbound port: a pod's outbound TCP is redirected there, so the player listens on it. */
export const OUTBOUND_PORT = 15001;
/** Deadline for waits on the player and the kernel. */
export const DEADLINE_MS = 20_000;

const BRIDGE = 'podnet-br0';
const SUBNET_V4 = '10.89.0.0/24';
const SUBNET_V6 = 'fd00:89::/64';

/** Family is which address families the network hands out. */
export type Family = 'ipv4' | 'ipv6' | 'dual';

/** ChainNodeOptions configure a ChainNode. */
export interface ChainNodeOptions {
  backend: 'iptables' | 'nftables';
  families?: Family;
  /** Start the agent's CniServer (default true); false leaves nothing listening on the socket. */
  agent?: boolean;
}

/** ChainPod is one pod: its namespace and the attachment the runtime passes for it. */
export interface ChainPod {
  uid: string;
  ns: TestNetns;
  attachment: Attachment;
}

/** AgentCall is one request a handler of the test's agent saw. */
export interface AgentCall {
  command: string;
  containerId: string;
  uid: string | undefined;
  ips: string[];
  netnsInode: number | undefined;
  validAttachments: CniAttachment[] | undefined;
}

/** isEvent matches a player event by name and fields. */
export const isEvent =
  (event: string, fields: Record<string, unknown> = {}) =>
  (e: PlayerEvent): boolean =>
    e.event === event && Object.entries(fields).every(([k, v]) => e[k] === v);

/** ChainNode is the test's node; create() builds it, dispose() removes it. */
export class ChainNode implements AsyncDisposable {
  readonly dir: string;
  readonly dataDir: string;
  readonly cniSocket: string;
  readonly host: TestNetns;
  readonly families: Family;
  readonly pods: ChainPod[] = [];
  /** Every request the agent's handlers got, in order. */
  readonly calls: AgentCall[] = [];
  network!: NodeNetwork;
  proxy!: ZtunnelServer;
  player!: ZtunnelPlayer;
  #agent: CniServer | undefined;
  /** What the add handler enrolled, by container id: a DEL without prevResult still knows the pod's IPs. */
  readonly #enrolled = new Map<string, PodInfo>();
  #podCount = 0;

  private constructor(families: Family) {
    this.families = families;
    this.dir = mkdtempSync(join(tmpdir(), 'podnet-cni-chain-'));
    this.dataDir = join(this.dir, 'ipam');
    this.cniSocket = join(this.dir, 'cni.sock');
    try {
      this.host = new TestNetns('chain-host');
    } catch (err) {
      rmSync(this.dir, { recursive: true, force: true });
      throw err;
    }
  }

  /** ChainNode.create builds the node; on failure it removes what it made and rejects. */
  static async create(options: ChainNodeOptions): Promise<ChainNode> {
    const node = new ChainNode(options.families ?? 'ipv4');
    try {
      node.proxy = await ZtunnelServer.listen({ path: join(node.dir, 'ztunnel.sock') });
      node.network = new NodeNetwork({
        hostNetns: node.host.path,
        proxy: node.proxy,
        backend: options.backend,
        ipv6: node.families !== 'ipv4',
        ...(options.backend === 'nftables' ? { kubeletUid: 0 } : {}),
      });
      await node.network.start();
      node.player = startZtunnelPlayer({ socketPath: node.proxy.path, port: OUTBOUND_PORT });
      await node.player.waitFor(isEvent('ack', { request: 'snapshotSent' }), DEADLINE_MS);
      if (options.agent !== false) await node.startAgent();
    } catch (err) {
      await node[Symbol.asyncDispose]().catch(() => undefined);
      throw err;
    }
    return node;
  }

  /** agentUp tells whether the CniServer listens. */
  get agentUp(): boolean {
    return this.#agent !== undefined;
  }

  #record(req: CniRequest, uid: string | undefined): void {
    this.calls.push({
      command: req.command,
      containerId: req.containerId,
      uid,
      ips: req.ips,
      netnsInode: req.netns?.inode,
      validAttachments: req.validAttachments,
    });
  }

  /** startAgent starts the CniServer on the conflist's socket: ADD enrolls the pod, DEL removes it as deleted. */
  async startAgent(): Promise<void> {
    this.#agent = await CniServer.listen({
      path: this.cniSocket,
      add: async (req) => {
        const uid = req.pod?.uid ?? req.containerId;
        this.#record(req, uid);
        const pod: PodInfo = {
          uid,
          ips: req.ips,
          netns: req.netns,
          workload: { name: req.pod?.name ?? req.containerId, namespace: req.pod?.namespace ?? 'default', serviceAccount: 'default' },
        };
        await this.network.addPod(pod);
        this.#enrolled.set(req.containerId, { uid, ips: req.ips });
      },
      del: async (req) => {
        const known = this.#enrolled.get(req.containerId);
        const uid = known?.uid ?? req.pod?.uid ?? req.containerId;
        this.#record(req, uid);
        await this.network.removePod({ uid, ips: known?.ips ?? req.ips }, { deleted: true });
        this.#enrolled.delete(req.containerId);
      },
      check: async (req) => {
        const uid = req.pod?.uid ?? req.containerId;
        this.#record(req, uid);
        const report = await this.network.verify({ pods: [{ uid, ips: req.ips, netns: req.netns }] });
        if (!report.inSync) throw new Error(`pod '${uid}' is not as ADD left it`);
      },
      status: () => undefined,
      gc: (req) => this.#record(req, undefined),
    });
  }

  /** stopAgent closes the CniServer (its socket file goes with it). */
  async stopAgent(): Promise<void> {
    const agent = this.#agent;
    this.#agent = undefined;
    await agent?.close();
  }

  /** conflist is the network: bridge (IPAM host-local in the temp folder), loopback, podnet-cni, at cniVersion. */
  conflist(cniVersion = '1.0.0'): Conflist {
    const ranges: { subnet: string }[][] = [];
    const routes: { dst: string }[] = [];
    if (this.families !== 'ipv6') {
      ranges.push([{ subnet: SUBNET_V4 }]);
      routes.push({ dst: '0.0.0.0/0' });
    }
    if (this.families !== 'ipv4') {
      ranges.push([{ subnet: SUBNET_V6 }]);
      routes.push({ dst: '::/0' });
    }
    return {
      cniVersion,
      name: 'podnet-chain',
      plugins: [
        { type: 'bridge', bridge: BRIDGE, isGateway: true, ipMasq: false, ipam: { type: 'host-local', dataDir: this.dataDir, ranges, routes } },
        { type: 'loopback' },
        { type: 'podnet-cni', socketPath: this.cniSocket, timeoutMs: 10_000 },
      ],
    };
  }

  /** runtime is a CniRuntime for the conflist at cniVersion, running the plugins in the host namespace. */
  runtime(cniVersion = '1.0.0'): CniRuntime {
    return new CniRuntime({ hostNetns: this.host.path, pluginDirs: [CNI_PLUGIN_DIR, dirname(PLUGIN)], conflist: this.conflist(cniVersion) });
  }

  /** newPod makes a pod namespace and its attachment, as a kubelet-driven runtime passes it. */
  newPod(): ChainPod {
    const n = ++this.#podCount;
    const ns = new TestNetns(`chain-pod${n}`);
    const uid = `uid-chain-${process.pid}-${n}`;
    const containerId = `c0ffee${process.pid}x${n}`;
    const pod: ChainPod = {
      uid,
      ns,
      attachment: {
        containerId,
        netns: ns.path,
        ifName: 'eth0',
        args: [
          ['IgnoreUnknown', '1'],
          ['K8S_POD_NAMESPACE', 'shop'],
          ['K8S_POD_NAME', `web-${n}`],
          ['K8S_POD_INFRA_CONTAINER_ID', containerId],
          ['K8S_POD_UID', uid],
        ],
      },
    };
    this.pods.push(pod);
    return pod;
  }

  /** probeEntries lists the IPs in the host's probe sets, read from the kernel (ipset save, or nft's JSON). */
  async probeEntries(): Promise<{ ip: string; owner: string }[]> {
    if (this.network.backend === 'iptables') {
      const r = await runInNetns(this.host.path, ['ipset', 'save']);
      if (r.exitCode !== 0) throw new Error(`ipset save failed: ${r.stderr}`);
      return r.stdout
        .split('\n')
        .filter((l) => l.startsWith('add istio-inpod-probes-'))
        .map((l) => {
          const m = /^add \S+ (\S+) comment "([^"]*)"/.exec(l);
          if (!m) throw new Error(`unexpected ipset line: ${l}`);
          return { ip: m[1]!, owner: m[2]! };
        });
    }
    const r = await runInNetns(this.host.path, ['nft', '-j', 'list', 'table', 'inet', 'istio-ambient-nat']);
    if (r.exitCode !== 0) throw new Error(`nft list failed: ${r.stderr}`);
    const doc = JSON.parse(r.stdout) as { nftables: { set?: { name: string; elem?: unknown[] } }[] };
    const out: { ip: string; owner: string }[] = [];
    for (const item of doc.nftables) {
      if (!item.set?.name.startsWith('istio-inpod-probes-')) continue;
      for (const e of item.set.elem ?? []) {
        const elem = (e as { elem?: { val: string; comment?: string } }).elem;
        out.push(elem ? { ip: elem.val, owner: elem.comment ?? '' } : { ip: String(e), owner: '' });
      }
    }
    return out;
  }

  /** podnetStateInPod is whatever of podnet a pod namespace holds: iptables chains, nft tables, the rule and route. */
  async podnetStateInPod(pod: ChainPod): Promise<string[]> {
    const found: string[] = [];
    for (const argv of [['iptables-save'], ['ip6tables-save'], ['nft', 'list', 'ruleset']]) {
      const r = await runInNetns(pod.ns.path, argv);
      for (const line of r.stdout.split('\n')) if (/istio/i.test(line)) found.push(`${argv[0]}: ${line}`);
    }
    for (const family of ['-4', '-6']) {
      const rules = await runInNetns(pod.ns.path, ['ip', family, 'rule', 'show']);
      for (const line of rules.stdout.split('\n')) if (line.includes('lookup 100')) found.push(`ip ${family} rule: ${line}`);
      const routes = await runInNetns(pod.ns.path, ['ip', family, 'route', 'show', 'table', '100']);
      for (const line of routes.stdout.split('\n')) if (line.trim() !== '') found.push(`ip ${family} route table 100: ${line}`);
    }
    return found;
  }

  /** ipamReservations lists host-local's reservation files (one per address handed out). */
  ipamReservations(): string[] {
    const network = join(this.dataDir, 'podnet-chain');
    if (!existsSync(network)) return [];
    return readdirSync(network).filter((f) => f !== 'lock' && !f.startsWith('last_reserved_ip'));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    const problems: Error[] = [];
    const attempt = async (what: string, step: () => unknown): Promise<void> => {
      try {
        await step();
      } catch (err) {
        problems.push(new Error(`chain node cleanup: ${what}: ${(err as Error)?.message ?? err}`, { cause: err }));
      }
    };
    await attempt('closing the CniServer', () => this.stopAgent());
    if (this.network) await attempt('stopping the NodeNetwork', () => this.network.stop());
    if (this.player) await attempt('stopping the player', () => this.player.stop());
    if (this.proxy) await attempt('closing the ZtunnelServer', () => this.proxy.close());
    for (const pod of this.pods) await attempt(`deleting ${pod.ns.name}`, () => pod.ns.delete());
    await attempt(`deleting ${this.host.name}`, () => this.host.delete());
    await attempt(`removing ${this.dir}`, () => rmSync(this.dir, { recursive: true, force: true }));
    // What the node made must be gone: its namespaces (the bridge and veth ends went with the host one) and folder.
    for (const path of [this.dir, this.host.path, ...this.pods.map((p) => p.ns.path)]) {
      if (existsSync(path)) problems.push(new Error(`chain node cleanup: ${path} is still there`));
    }
    if (problems.length > 0) throw new AggregateError(problems, problems.map((p) => p.message).join('; '));
  }
}
