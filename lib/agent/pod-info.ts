/**
 * A pod as the agent takes it: checkPod copies and checks what a caller passes, before any step runs, and
 * podProbeEntries compares its IPs with what the probe sets hold.
 */
import { encodeAs, type ZdsWorkloadInfo } from '../proxy/zds-messages.js';
import { Netns } from '../netns.js';
import { checkArray, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import type { PodInfo, PodProbeEntries } from './node-network-types.js';
import { normalizeIp } from './probe-ownership.js';

/**
 * checkPod returns a checked copy of a pod (its arrays dense copies, checked index by index), so a caller changing
 * its object after the call cannot change what a queued call applies. Throws InvalidArgumentError naming the field.
 */
export function checkPod(pod: unknown, name = 'pod', needsWorkload = false): PodInfo {
  const p = checkOptions<PodInfo>(name, pod);
  const uid = checkString(`${name}.uid`, p.uid, 255);
  // A path is checked as every path podnet opens is (PATH_MAX, no NUL, no lone surrogate); a handle is the caller's.
  if (p.netns !== undefined && !(p.netns instanceof Netns)) checkString(`${name}.netns`, p.netns, 4095);
  const ips = checkArray(`${name}.ips`, p.ips, 'an array of IP addresses', (ip, at) => {
    normalizeIp(ip, at);
    return ip as string;
  });
  if (p.ingressOnly !== undefined && typeof p.ingressOnly !== 'boolean') {
    throw invalidType(`${name}.ingressOnly`, 'a boolean', p.ingressOnly);
  }
  const virtualInterfaces =
    p.virtualInterfaces === undefined
      ? undefined
      : checkArray(`${name}.virtualInterfaces`, p.virtualInterfaces, 'an array of interface names', (iface, at) => checkInterfaceName(at, iface));
  let workload: ZdsWorkloadInfo | undefined;
  if (p.workload !== undefined || needsWorkload) {
    const w = checkOptions<ZdsWorkloadInfo>(`${name}.workload`, p.workload);
    if (p.workload === undefined) throw invalidType(`${name}.workload`, "the pod's name, namespace and service account", p.workload);
    checkString(`${name}.workload.name`, w.name, 253);
    checkString(`${name}.workload.namespace`, w.namespace, 253);
    if (typeof w.serviceAccount !== 'string') throw invalidType(`${name}.workload.serviceAccount`, 'a string', w.serviceAccount);
    workload = { name: w.name, namespace: w.namespace, serviceAccount: w.serviceAccount } as ZdsWorkloadInfo;
    // What the node proxy would refuse (a lone surrogate, a message past ZDS's 1 KiB) is refused before any step.
    encodeAs(`${name}.`, { kind: 'add', uid, workload });
  }
  return {
    uid,
    ips,
    ...(p.netns === undefined ? {} : { netns: p.netns }),
    ...(p.ingressOnly === undefined ? {} : { ingressOnly: p.ingressOnly }),
    ...(virtualInterfaces === undefined ? {} : { virtualInterfaces }),
    ...(workload === undefined ? {} : { workload }),
  };
}

/**
 * checkInterfaceName returns value if the kernel takes it as an interface name (dev_valid_name: 1 to 15 bytes, no
 * whitespace, '/' or ':', not '.' or '..'); throws InvalidArgumentError naming name otherwise.
 */
function checkInterfaceName(name: string, value: unknown): string {
  const iface = checkString(name, value, 15);
  if (/[\s/:]/.test(iface) || iface === '.' || iface === '..') {
    throw invalidValue(name, "an interface name (no whitespace, '/' or ':', not '.' or '..')", value);
  }
  return iface;
}

/** podProbeEntries compares a pod's IPs with what the probe sets hold (normalized IP to owner). */
export function podProbeEntries(pod: PodInfo, held: ReadonlyMap<string, string>): PodProbeEntries {
  const entries: PodProbeEntries = { missing: [], foreign: [] };
  for (const ip of new Set(pod.ips.map((a) => normalizeIp(a).ip))) {
    const owner = held.get(ip);
    if (owner === undefined) entries.missing.push(ip);
    else if (owner !== pod.uid) entries.foreign.push({ ip, owner });
  }
  return entries;
}
