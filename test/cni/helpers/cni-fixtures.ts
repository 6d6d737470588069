// What the CniServer tests share: a server in a temp folder, a typical runtime's environment and configs, and a
// parsed view of an answer.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { CniServer, type CniServerOptions } from '../../../lib/cni/index.js';

/** PREV_RESULT_100 is a bridge plugin's result in 1.0.0, as a prevResult. */
export const PREV_RESULT_100 = {
  cniVersion: '1.0.0',
  interfaces: [
    { name: 'cni0', mac: '6a:e1:2e:4b:9c:01' },
    { name: 'eth0', mac: '2e:1c:3b:59:6d:02', sandbox: '/run/netns/cni-1234' },
  ],
  ips: [
    { address: '10.88.0.5/16', gateway: '10.88.0.1', interface: 1 },
    { address: 'fd00:88::5/64', gateway: 'fd00:88::1', interface: 1 },
  ],
  routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0', gw: 'fd00:88::1' }],
  dns: { nameservers: ['10.88.0.1'] },
};

/** env is a kubelet-like environment for command, with overrides (undefined removes a variable). */
export function cniEnv(command: string, overrides: Record<string, string | undefined> = {}): [string, string][] {
  const base: Record<string, string | undefined> = {
    CNI_COMMAND: command,
    CNI_CONTAINERID: 'c0ffee01',
    CNI_NETNS: '/run/netns/cni-1234',
    CNI_IFNAME: 'eth0',
    CNI_ARGS: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-0;K8S_POD_INFRA_CONTAINER_ID=c0ffee01;K8S_POD_UID=uid-1',
    CNI_PATH: '/opt/cni/bin',
    ...overrides,
  };
  return Object.entries(base).filter((e): e is [string, string] => e[1] !== undefined);
}

/** config is a chained network config for the podnet-cni entry (prevResult included unless null). */
export function cniConfig(fields: Record<string, unknown> = {}, prevResult: unknown = PREV_RESULT_100): string {
  const config: Record<string, unknown> = { cniVersion: '1.0.0', name: 'k8s-pod-network', type: 'podnet-cni', socketPath: '/var/run/podnet/cni.sock' };
  if (prevResult !== null) config.prevResult = prevResult;
  return JSON.stringify({ ...config, ...fields });
}

/** CniErrorBody is a CNI error as answered on stdout. */
export interface CniErrorBody {
  cniVersion: string;
  code: number;
  msg: string;
  details: string;
}

/** TempServer is a CniServer on a socket in its own temp folder, removed with it. */
export class TempServer implements AsyncDisposable {
  readonly dir: string;
  readonly path: string;
  server!: CniServer;

  private constructor() {
    this.dir = mkdtempSync(join(tmpdir(), 'podnet-cni-'));
    this.path = join(this.dir, 'cni.sock');
  }

  /** TempServer.start listens with options (path filled in). */
  static async start(options: Omit<CniServerOptions, 'path'> = {}): Promise<TempServer> {
    const temp = new TempServer();
    try {
      temp.server = await CniServer.listen({ ...options, path: temp.path });
    } catch (err) {
      rmSync(temp.dir, { recursive: true, force: true });
      throw err;
    }
    return temp;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    try {
      await this.server.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
