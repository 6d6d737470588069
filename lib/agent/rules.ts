/**
 * The rule sets of an in-pod node agent (see shared reference: Istio ambient's
 * CNI agent): SNAT of kubelet probes on the host, and traffic redirection to
 * the proxy inside each pod. Rules are written in iptables-save's canonical
 * form (`-s x/32`, `-p tcp -m tcp --dport`, `--to-ports`), so verify() and
 * reconcile() recognise them as present after they are applied.
 */
import { formatIp, isIpv4Mapped, parseIp } from '../address/index.js';
import { RuleSet } from '../iptables/rule-set.js';
import { checkString, invalidType, invalidValue } from '../validate.js';

/** INPOD holds the marks, ports, addresses and chain names the host and in-pod rules share (the reference agent's values). */
export const INPOD = Object.freeze({
  /** The mark the proxy's own sockets set (SO_MARK): their packets skip redirection. */
  proxyMark: '0x539/0xfff',
  /** The connmark of connections the proxy marked; restored to the packet mark for policy routing. */
  connMark: '0x111/0xfff',
  /** The proxy's outbound capture port (REDIRECT target of the pod's own connections). */
  outboundPort: '15001',
  /** The proxy's inbound capture port (REDIRECT target of connections to the pod). */
  inboundPort: '15006',
  /** The proxy's HBONE (HTTP CONNECT over mTLS) port: inbound connections to it are not redirected. */
  hbonePort: '15008',
  /** The proxy's DNS port, where port 53 is redirected when DNS capture is on. */
  dnsPort: '15053',
  /** The IPv4 source address kubelet probes are SNATed to on the host. */
  probeSourceV4: '169.254.7.127',
  /** The IPv6 source address kubelet probes are SNATed to on the host. */
  probeSourceV6: 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff',
  /** The in-pod chain (mangle, nat, raw) hooked into PREROUTING. */
  preroutingChain: 'ISTIO_PRERT',
  /** The in-pod chain (mangle, nat, raw) hooked into OUTPUT. */
  outputChain: 'ISTIO_OUTPUT',
  /** The host chain hooked into nat POSTROUTING (the probe SNAT). */
  postroutingChain: 'ISTIO_POSTRT',
});

/** HostProbeRulesConfig configures hostProbeRules; every field has a default. */
export interface HostProbeRulesConfig {
  /** 4 (default) or 6: which family's set and probe source. */
  family?: 4 | 6;
  /** Probe set prefix; the set is `<prefix>-v4` / `<prefix>-v6` (default 'istio-inpod-probes'). */
  probeSetPrefix?: string;
  /**
   * The address probes are SNATed to, of the family's kind, canonical, without prefix length (default
   * INPOD.probeSourceV4 / INPOD.probeSourceV6). The pods' inpodRules must be given the same one.
   */
  probeSource?: string;
}

/**
 * checkProbeSource returns address if it can be the probe source of family: an address of that family without prefix
 * length, written as iptables-save prints it. Throws InvalidArgumentError naming name: ERR_INVALID_ARG_TYPE when
 * address is not a string, ERR_INVALID_ARG_VALUE otherwise.
 */
export function checkProbeSource(name: string, address: unknown, family: 4 | 6): string {
  checkString(name, address);
  const text = address as string;
  const parsed = parseIp(text);
  // Only the canonical form: verify() compares rule arguments with iptables-save's text, so "FD16::1" or
  // "fd16:0::1" would read as drift forever and reconcile() would re-apply the rules on every call.
  let ok = parsed !== undefined && parsed.family === family && formatIp(family, parsed.bytes) === text;
  // ::ffff:0:0/96 and ::/96 hold IPv4 addresses in IPv6 clothing (normalizeIp reads a mapped one as IPv4), and
  // iptables-save prints the compatible ones as "::1.2.3.4", which formatIp does not write.
  if (ok && family === 6) ok = !isIpv4Mapped(parsed!.bytes) && !parsed!.bytes.subarray(0, 12).every((x) => x === 0);
  if (!ok) {
    const expected =
      family === 4
        ? 'an IPv4 address in canonical form without prefix length'
        : 'an IPv6 address in canonical form (RFC 5952) without prefix length, outside ::ffff:0:0/96 and ::/96';
    throw invalidValue(name, expected, address);
  }
  return text;
}

function checkFamily(family: unknown): 4 | 6 {
  if (family !== 4 && family !== 6) throw invalidValue('config.family', '4 or 6', family);
  return family;
}

/**
 * hostProbeRules is the host's nat rule that gives kubelet probes (sockets of host processes) towards pod IPs in the
 * probe set the probe source address, so in-pod rules can let them through. Throws InvalidArgumentError for a bad
 * config field (named `config.<field>`).
 */
export function hostProbeRules(config: HostProbeRulesConfig = {}): RuleSet {
  const family = checkFamily(config.family ?? 4);
  const prefix = checkString('config.probeSetPrefix', config.probeSetPrefix ?? 'istio-inpod-probes', 28);
  const set = `${prefix}-v${family}`;
  const source = probeSourceOf(config.probeSource, family);
  return new RuleSet()
    .chain('nat', INPOD.postroutingChain)
    .insert('nat', 'POSTROUTING', 1, ['-j', INPOD.postroutingChain])
    .append('nat', INPOD.postroutingChain, [
      '-p', 'tcp', '-m', 'owner', '--socket-exists', '-m', 'set', '--match-set', set, 'dst', '-j', 'SNAT', '--to-source', source,
    ]);
}

/** InpodRulesConfig configures inpodRules; every field has a default. */
export interface InpodRulesConfig {
  /** 4 (default) or 6: loopback and probe source of that family. */
  family?: 4 | 6;
  /** Capture DNS (udp and tcp port 53) to the proxy (default true); off drops the raw table and the port-53 rules. */
  dnsCapture?: boolean;
  /** Interfaces whose inbound TCP goes to the outbound port (and is otherwise left alone). */
  virtualInterfaces?: readonly string[];
  /**
   * Leave inbound traffic alone (default false): the reference agent's ingress mode, for pods whose inbound must not
   * be captured. Outbound is redirected as usual.
   */
  ingressOnly?: boolean;
  /**
   * The probe source of this family, as given to hostProbeRules (same checks; default INPOD.probeSourceV4 /
   * INPOD.probeSourceV6): probes from it are let through, and connections to it are not redirected.
   */
  probeSource?: string;
}

function probeSourceOf(value: unknown, family: 4 | 6): string {
  if (value === undefined) return family === 4 ? INPOD.probeSourceV4 : INPOD.probeSourceV6;
  return checkProbeSource('config.probeSource', value, family);
}

/**
 * inpodRules is the redirection rule set applied inside a pod's namespace. Throws InvalidArgumentError for a bad
 * config field (named `config.<field>`); a bad virtual interface name is reported when the set is rendered.
 */
export function inpodRules(config: InpodRulesConfig = {}): RuleSet {
  const family = checkFamily(config.family ?? 4);
  const dns = config.dnsCapture ?? true;
  const ingressOnly = config.ingressOnly ?? false;
  if (typeof ingressOnly !== 'boolean') throw invalidType('config.ingressOnly', 'a boolean', ingressOnly);
  const localhost = family === 4 ? '127.0.0.1/32' : '::1/128';
  const probe = `${probeSourceOf(config.probeSource, family)}/${family === 4 ? 32 : 128}`;
  const { proxyMark, connMark, preroutingChain: PRERT, outputChain: OUTPUT } = INPOD;
  const r = new RuleSet();

  r.chain('mangle', PRERT).chain('mangle', OUTPUT);
  r.append('mangle', 'PREROUTING', ['-j', PRERT]);
  r.append('mangle', 'OUTPUT', ['-j', OUTPUT]);
  // Ingress-only mode drops exactly the two inbound captures the reference drops (AppendInpodRules with IngressMode,
  // and its ingress*.golden files): the probe ACCEPT and the 15006 REDIRECT in nat ISTIO_PRERT. This connmark stays:
  // the in-pod proxy still delivers inbound HBONE to the app with its mark and a spoofed source, and the app's replies
  // only find their way back to it through this connmark (restored below, routed by table 100). Istio dropped it in
  // ingress mode once and inbound HBONE timed out (istio/istio#58546, fixed by #58577). The chains and jumps stay too,
  // so either mode's apply() or remove() replaces or clears the other's rules.
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
  if (!ingressOnly) r.append('nat', PRERT, ['-s', probe, '-p', 'tcp', '-m', 'tcp', '-j', 'ACCEPT']);
  // Kept in ingress-only mode, as the reference keeps it: it is an outbound rule, and that mode leaves outbound as it
  // is. (nat sees only a connection's first packet, so this never handles probe replies; it keeps connections the
  // pod itself opens to the probe address away from 15001.) Dropping it would also make a pod that the reference
  // agent set up read as drifted.
  r.append('nat', OUTPUT, ['-d', probe, '-p', 'tcp', '-m', 'tcp', '-j', 'ACCEPT']);
  if (!ingressOnly) {
    r.append('nat', PRERT, [
      '!', '-d', localhost, '-p', 'tcp', '-m', 'tcp', '!', '--dport', INPOD.hbonePort, '-m', 'mark', '!', '--mark', proxyMark,
      '-j', 'REDIRECT', '--to-ports', INPOD.inboundPort,
    ]);
  }
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
