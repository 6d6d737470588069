/**
 * The rule sets of an in-pod node agent (see shared reference: Istio ambient's
 * CNI agent): SNAT of kubelet probes on the host, and traffic redirection to
 * the proxy inside each pod. Rules are written in iptables-save's canonical
 * form (`-s x/32`, `-p tcp -m tcp --dport`, `--to-ports`), so verify() and
 * reconcile() recognise them as present after they are applied.
 */
import { RuleSet } from '../iptables/rule-set.js';
import { checkString, invalidValue } from '../validate.js';

/** Marks, ports and addresses shared by the host and in-pod rules. */
export const INPOD = Object.freeze({
  proxyMark: '0x539/0xfff',
  connMark: '0x111/0xfff',
  outboundPort: '15001',
  inboundPort: '15006',
  hbonePort: '15008',
  dnsPort: '15053',
  probeSourceV4: '169.254.7.127',
  probeSourceV6: 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff',
  preroutingChain: 'ISTIO_PRERT',
  outputChain: 'ISTIO_OUTPUT',
  postroutingChain: 'ISTIO_POSTRT',
});

export interface HostProbeRulesConfig {
  /** 4 (default) or 6: which family's set and probe source. */
  family?: 4 | 6;
  /** Probe set prefix; the set is `<prefix>-v4` / `<prefix>-v6` (default 'istio-inpod-probes'). */
  probeSetPrefix?: string;
}

/**
 * hostProbeRules is the host's nat rule that gives kubelet probes (sockets of host processes) towards pod IPs in the
 * probe set the probe source address, so in-pod rules can let them through.
 */
export function hostProbeRules(config: HostProbeRulesConfig = {}): RuleSet {
  const family = config.family ?? 4;
  if (family !== 4 && family !== 6) throw invalidValue('config.family', '4 or 6', family);
  const prefix = checkString('config.probeSetPrefix', config.probeSetPrefix ?? 'istio-inpod-probes', 28);
  const set = `${prefix}-v${family}`;
  const source = family === 4 ? INPOD.probeSourceV4 : INPOD.probeSourceV6;
  return new RuleSet()
    .chain('nat', INPOD.postroutingChain)
    .insert('nat', 'POSTROUTING', 1, ['-j', INPOD.postroutingChain])
    .append('nat', INPOD.postroutingChain, [
      '-p', 'tcp', '-m', 'owner', '--socket-exists', '-m', 'set', '--match-set', set, 'dst', '-j', 'SNAT', '--to-source', source,
    ]);
}

export interface InpodRulesConfig {
  /** 4 (default) or 6: loopback and probe source of that family. */
  family?: 4 | 6;
  /** Capture DNS (udp and tcp port 53) to the proxy (default true); off drops the raw table and the port-53 rules. */
  dnsCapture?: boolean;
  /** Interfaces whose inbound TCP goes to the outbound port (and is otherwise left alone). */
  virtualInterfaces?: readonly string[];
}

/** inpodRules is the redirection rule set applied inside a pod's namespace. */
export function inpodRules(config: InpodRulesConfig = {}): RuleSet {
  const family = config.family ?? 4;
  if (family !== 4 && family !== 6) throw invalidValue('config.family', '4 or 6', family);
  const dns = config.dnsCapture ?? true;
  const localhost = family === 4 ? '127.0.0.1/32' : '::1/128';
  const probe = family === 4 ? `${INPOD.probeSourceV4}/32` : `${INPOD.probeSourceV6}/128`;
  const { proxyMark, connMark, preroutingChain: PRERT, outputChain: OUTPUT } = INPOD;
  const r = new RuleSet();

  r.chain('mangle', PRERT).chain('mangle', OUTPUT);
  r.append('mangle', 'PREROUTING', ['-j', PRERT]);
  r.append('mangle', 'OUTPUT', ['-j', OUTPUT]);
  r.append('mangle', PRERT, ['-m', 'mark', '--mark', proxyMark, '-j', 'CONNMARK', '--set-xmark', connMark]);
  r.append('mangle', OUTPUT, [
    '-m', 'connmark', '--mark', connMark, '-j', 'CONNMARK', '--restore-mark', '--nfmask', '0xffffffff', '--ctmask', '0xffffffff',
  ]);

  r.chain('nat', PRERT).chain('nat', OUTPUT);
  r.append('nat', 'OUTPUT', ['-j', OUTPUT]);
  r.append('nat', 'PREROUTING', ['-j', PRERT]);
  for (const iface of config.virtualInterfaces ?? []) {
    r.append('nat', PRERT, ['-i', iface, '-p', 'tcp', '-j', 'REDIRECT', '--to-ports', INPOD.outboundPort]);
    r.append('nat', PRERT, ['-i', iface, '-p', 'tcp', '-j', 'RETURN']);
  }
  r.append('nat', PRERT, ['-s', probe, '-p', 'tcp', '-m', 'tcp', '-j', 'ACCEPT']);
  r.append('nat', OUTPUT, ['-d', probe, '-p', 'tcp', '-m', 'tcp', '-j', 'ACCEPT']);
  r.append('nat', PRERT, [
    '!', '-d', localhost, '-p', 'tcp', '-m', 'tcp', '!', '--dport', INPOD.hbonePort, '-m', 'mark', '!', '--mark', proxyMark,
    '-j', 'REDIRECT', '--to-ports', INPOD.inboundPort,
  ]);
  if (dns) {
    r.append('nat', OUTPUT, [
      '!', '-o', 'lo', '-p', 'udp', '-m', 'mark', '!', '--mark', proxyMark, '-m', 'udp', '--dport', '53', '-j', 'REDIRECT', '--to-ports', INPOD.dnsPort,
    ]);
    r.append('nat', OUTPUT, [
      '!', '-d', localhost, '-p', 'tcp', '-m', 'tcp', '--dport', '53', '-m', 'mark', '!', '--mark', proxyMark, '-j', 'REDIRECT', '--to-ports', INPOD.dnsPort,
    ]);
  }
  r.append('nat', OUTPUT, ['-p', 'tcp', '-m', 'mark', '--mark', connMark, '-j', 'ACCEPT']);
  r.append('nat', OUTPUT, ['!', '-d', localhost, '-o', 'lo', '-j', 'ACCEPT']);
  r.append('nat', OUTPUT, [
    '!', '-d', localhost, '-p', 'tcp', '-m', 'mark', '!', '--mark', proxyMark, '-j', 'REDIRECT', '--to-ports', INPOD.outboundPort,
  ]);

  if (dns) {
    r.chain('raw', OUTPUT).chain('raw', PRERT);
    r.append('raw', 'PREROUTING', ['-j', PRERT]);
    r.append('raw', 'OUTPUT', ['-j', OUTPUT]);
    r.append('raw', OUTPUT, ['-p', 'udp', '-m', 'mark', '--mark', proxyMark, '-m', 'udp', '--dport', '53', '-j', 'CT', '--zone', '1']);
    r.append('raw', PRERT, ['-p', 'udp', '-m', 'mark', '!', '--mark', proxyMark, '-m', 'udp', '--sport', '53', '-j', 'CT', '--zone', '1']);
  }
  return r;
}
