/**
 * Probes that read the node itself and change nothing: the kernel version, this process's capabilities, and the
 * host procfs the /proc discovery and the kubelet-uid detection read.
 */
import { readFile } from 'node:fs/promises';

import { Netns } from '../netns.js';
import type { PreflightContext } from './types.js';

/** CAPABILITY_BITS are the capability numbers of linux/capability.h the agent needs. */
export const CAPABILITY_BITS = Object.freeze({ CAP_NET_ADMIN: 12, CAP_SYS_PTRACE: 19, CAP_SYS_ADMIN: 21 });

/** kernelVersion reads the running kernel's release. */
export async function kernelVersion(): Promise<string> {
  return (await readFile('/proc/sys/kernel/osrelease', 'utf8')).trim();
}

/** parseCapEff returns the effective capability mask of a /proc/<pid>/status text, or undefined without one. */
export function parseCapEff(status: string): bigint | undefined {
  const m = /^CapEff:\s*([0-9a-fA-F]+)$/m.exec(status);
  return m ? BigInt(`0x${m[1]!}`) : undefined;
}

/** capability returns a probe of one effective capability of this process. */
export function capability(name: keyof typeof CAPABILITY_BITS): () => Promise<string> {
  return async () => {
    const mask = parseCapEff(await readFile('/proc/self/status', 'utf8'));
    if (mask === undefined) throw new Error('/proc/self/status has no CapEff line');
    if ((mask >> BigInt(CAPABILITY_BITS[name])) & 1n) return 'effective';
    throw new Error(`${name} is not in this process's effective set (CapEff ${mask.toString(16).padStart(16, '0')})`);
  };
}

/** hostProc checks that the host's procfs lists processes and that their network namespaces open. */
export async function hostProc(context: PreflightContext): Promise<string> {
  const root = context.hostProcRoot;
  const path = `${root}/1/ns/net`;
  const ns = Netns.open(path);
  try {
    return `${path} opens (namespace inode ${ns.inode})`;
  } finally {
    ns.close();
  }
}

/**
 * cgroupLayout tells the cgroup version the host's init runs under, and checks that its cgroup file has the
 * `hierarchy-ID:controllers:path` lines the /proc discovery parses in the pods' files.
 */
export async function cgroupLayout(context: PreflightContext): Promise<string> {
  const text = await readFile(`${context.hostProcRoot}/1/cgroup`, 'utf8');
  const lines = text.split('\n').filter((l) => l !== '');
  if (lines.length === 0) throw new Error(`${context.hostProcRoot}/1/cgroup is empty`);
  const odd = lines.find((l) => !/^\d+:[^:]*:\//.test(l));
  if (odd !== undefined) throw new Error(`${context.hostProcRoot}/1/cgroup has a line the discovery cannot parse: ${JSON.stringify(odd)}`);
  const v2 = lines.length === 1 && lines[0]!.startsWith('0::');
  return v2 ? 'cgroup v2 (unified)' : `cgroup v1 or hybrid (${lines.length} hierarchies)`;
}
