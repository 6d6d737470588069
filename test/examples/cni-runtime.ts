// The runtime's side of the in-pod agent example: podnet-cni run as a runtime runs it (CNI_* variables, the network
// config on stdin with prevResult for ADD and CHECK), its answer parsed as the CNI spec defines it.
import { runPlugin } from '../cni/helpers/plugin-run.js';

/** A bridge plugin's result for one pod address, as podnet-cni gets it in prevResult. */
export function prevResultFor(ip: string): Record<string, unknown> {
  return {
    cniVersion: '1.1.0',
    interfaces: [{ name: 'eth0', sandbox: '/run/netns/x' }],
    ips: [{ address: `${ip}/24`, interface: 0 }],
    routes: [{ dst: '0.0.0.0/0' }],
  };
}

/** CniCall is one invocation: the command, the agent's socket and what the runtime passes. */
export interface CniCall {
  command: 'ADD' | 'DEL' | 'CHECK' | 'STATUS' | 'GC';
  socketPath: string;
  containerId?: string;
  netns?: string;
  /** CNI_ARGS pairs (IgnoreUnknown=1 is always passed). */
  args?: Record<string, string>;
  /** The pod's address for prevResult (ADD, CHECK; DEL when given). */
  ip?: string;
  /** GC's `cni.dev/valid-attachments`. */
  validAttachments?: { containerID: string; ifname: string }[];
}

/** CniOutcome is the plugin's exit status and its stdout parsed (undefined when empty). */
export interface CniOutcome {
  status: number | null;
  json: any;
  stderr: string;
}

/** invokeCni runs podnet-cni once with call's environment and config, as a runtime does. */
export async function invokeCni(call: CniCall): Promise<CniOutcome> {
  const args = Object.entries({ IgnoreUnknown: '1', ...call.args }).map(([k, v]) => `${k}=${v}`).join(';');
  const env: Record<string, string> = {
    CNI_COMMAND: call.command,
    CNI_CONTAINERID: call.containerId ?? '',
    CNI_NETNS: call.netns ?? '',
    CNI_IFNAME: call.command === 'STATUS' || call.command === 'GC' ? '' : 'eth0',
    CNI_ARGS: args,
    CNI_PATH: '/opt/cni/bin',
  };
  for (const key of Object.keys(env)) if (env[key] === '' && key !== 'CNI_NETNS') delete env[key];
  const config: Record<string, unknown> = { cniVersion: '1.1.0', name: 'podnet-example', type: 'podnet-cni', socketPath: call.socketPath, timeoutMs: 10_000 };
  if (call.ip !== undefined) config.prevResult = prevResultFor(call.ip);
  if (call.validAttachments !== undefined) config['cni.dev/valid-attachments'] = call.validAttachments;
  const exit = await runPlugin(env, JSON.stringify(config));
  const text = exit.stdout.toString('utf8');
  return { status: exit.status, json: text.trim() === '' ? undefined : JSON.parse(text), stderr: exit.stderr.toString('utf8') };
}
