/**
 * The default probe layer: which features a configuration (backend, IPv6) is probed for, who needs each, whether it
 * is required, and which kernel modules or programs provide it (named when it is missing).
 */
import { capability, cgroupLayout, hostProc, kernelVersion } from './probes-host.js';
import { ipv6Probe, netnsProbe, policyRoutingProbe, unixSeqpacketProbe } from './probes-netns.js';
import {
  ipsetProbe,
  iptablesBackendsProbe,
  iptablesHostProbe,
  iptablesInpodProbe,
  nftGenerationProbe,
  nftHostProbe,
  nftInpodProbe,
} from './probes-rules.js';
import type { PreflightBackend, PreflightProbe } from './types.js';

/** defaultProbes lists the probes of a configuration, in the order their rows appear. */
export function defaultProbes(backend: PreflightBackend, ipv6: boolean): PreflightProbe[] {
  const ipt = backend === 'iptables';
  const nft = backend === 'nftables';
  const probes: PreflightProbe[] = [
    { id: 'kernel', feature: 'kernel version', neededBy: 'node', required: true, provides: 'procfs', run: kernelVersion },
    { id: 'cap-net-admin', feature: 'CAP_NET_ADMIN', neededBy: 'agent (sets, rules, routes)', required: true, provides: 'the container security context', run: capability('CAP_NET_ADMIN') },
    { id: 'cap-sys-admin', feature: 'CAP_SYS_ADMIN', neededBy: 'agent (entering pod namespaces)', required: true, provides: 'the container security context', run: capability('CAP_SYS_ADMIN') },
    { id: 'cap-sys-ptrace', feature: 'CAP_SYS_PTRACE', neededBy: '/proc discovery (other processes\' netns)', required: false, provides: 'the container security context', run: capability('CAP_SYS_PTRACE') },
    { id: 'netns', feature: 'network namespaces', neededBy: 'agent (pods), preflight', required: true, provides: 'CONFIG_NET_NS', run: netnsProbe },
    { id: 'ipv6', feature: 'IPv6', neededBy: 'ipv6 option', required: ipv6, provides: 'ipv6', run: ipv6Probe },
    { id: 'policy-routing', feature: 'policy routing (fwmark rule, local route table)', neededBy: 'in-pod routing', required: true, provides: 'CONFIG_IP_MULTIPLE_TABLES, fib_rules', run: policyRoutingProbe },
    { id: 'unix-seqpacket', feature: 'unix seqpacket with fd passing', neededBy: 'node proxy (ZDS), CNI plugin', required: true, provides: 'unix', run: unixSeqpacketProbe },
    { id: 'host-proc', feature: 'host procfs netns', neededBy: '/proc discovery', required: false, provides: 'the host /proc mount and CAP_SYS_PTRACE', run: hostProc },
    { id: 'cgroup', feature: 'cgroup layout', neededBy: '/proc discovery', required: false, provides: 'the host /proc mount', run: cgroupLayout },
  ];
  if (ipt) {
    probes.push(
      { id: 'ipset-hash-ip', feature: 'ipset hash:ip with comment', neededBy: 'probe set (ipset)', required: true, provides: 'ip_set, ip_set_hash_ip', run: ipsetProbe({ type: 'hash:ip', comment: true }, { ip: '10.0.0.1', comment: 'podnet-preflight' }) },
      { id: 'ipset-hash-ip6', feature: 'ipset hash:ip inet6 with comment', neededBy: 'probe set (ipset, IPv6)', required: ipv6, provides: 'ip_set, ip_set_hash_ip', run: ipsetProbe({ type: 'hash:ip', family: 'inet6', comment: true }, { ip: 'fd00::1', comment: 'podnet-preflight' }) },
      { id: 'ipset-hash-net', feature: 'ipset hash:net with comment and timeout', neededBy: 'ipset client', required: false, provides: 'ip_set, ip_set_hash_net', run: ipsetProbe({ type: 'hash:net', comment: true, timeout: 600 }, { ip: '10.1.0.0', cidr: 16, comment: 'podnet-preflight', timeout: 60 }) },
      { id: 'ipset-hash-ip-port', feature: 'ipset hash:ip,port with comment and timeout', neededBy: 'ipset client', required: false, provides: 'ip_set, ip_set_hash_ipport', run: ipsetProbe({ type: 'hash:ip,port', comment: true, timeout: 600 }, { ip: '10.0.0.1', port: 15008, proto: 'tcp', comment: 'podnet-preflight', timeout: 60 }) },
      { id: 'iptables-backends', feature: 'iptables backends', neededBy: 'host and in-pod rules (iptables)', required: true, provides: 'iptables-nft or iptables-legacy on the PATH', run: iptablesBackendsProbe },
      { id: 'iptables-inpod', feature: 'iptables mark, connmark, CT --zone, REDIRECT', neededBy: 'in-pod rules (iptables)', required: true, provides: 'xt_mark, xt_connmark, xt_CT, xt_REDIRECT, xt_comment', run: iptablesInpodProbe(4) },
      { id: 'iptables-host', feature: 'iptables owner --socket-exists, set, SNAT', neededBy: 'host probe SNAT (iptables)', required: true, provides: 'xt_owner, xt_set, xt_nat', run: iptablesHostProbe(4) },
      { id: 'ip6tables-inpod', feature: 'ip6tables mark, connmark, CT --zone, REDIRECT', neededBy: 'in-pod rules (ip6tables)', required: ipv6, provides: 'ip6tables, xt_mark, xt_connmark, xt_CT, xt_REDIRECT', run: iptablesInpodProbe(6) },
      { id: 'ip6tables-host', feature: 'ip6tables owner --socket-exists, set, SNAT', neededBy: 'host probe SNAT (ip6tables)', required: ipv6, provides: 'ip6tables, xt_owner, xt_set, xt_nat', run: iptablesHostProbe(6) },
    );
  }
  if (nft) {
    probes.push(
      { id: 'nft-inpod', feature: 'nf_tables meta, ct, mark, redirect, socket', neededBy: 'in-pod rules (nftables)', required: true, provides: 'nf_tables, nft_ct, nft_redir, nft_nat, nft_socket', run: nftInpodProbe },
      { id: 'nft-host', feature: 'nf_tables sets with element comments, skuid, snat', neededBy: 'probe set and host SNAT (nftables)', required: true, provides: 'nf_tables, nft_nat, nft_chain_nat', run: nftHostProbe },
      { id: 'nft-generation', feature: 'nf_tables batch generation id', neededBy: 'nftables transactions', required: true, provides: 'nf_tables (NFNL_BATCH_GENID, Linux 5.8)', run: nftGenerationProbe },
    );
  }
  return probes;
}
