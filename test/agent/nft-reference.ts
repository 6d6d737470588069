// The reference's rules as `nft -f` text (shared reference nftables.md), per variant: the default IPv4 rules as the
// doc prints them, and the variants the doc describes (IPv6 twins with ip6, ::1 and the v6 probe source right after
// each address rule, DNS capture off, ingress-only, virtual interfaces first in istio-prerouting, probe sources).
// Written as text, independently of the rule AST podnet builds, so a kernel test can hold one against the other.

export interface ReferenceVariant {
  ipv6?: boolean;
  dnsCapture?: boolean;
  ingressOnly?: boolean;
  virtualInterfaces?: string[];
  probeSourceV4?: string;
  probeSourceV6?: string;
}

interface Fam {
  ip: 'ip' | 'ip6';
  localhost: string;
  probe: string;
}

function families(v: ReferenceVariant): Fam[] {
  const out: Fam[] = [{ ip: 'ip', localhost: '127.0.0.1/32', probe: v.probeSourceV4 ?? '169.254.7.127' }];
  if (v.ipv6) out.push({ ip: 'ip6', localhost: '::1/128', probe: v.probeSourceV6 ?? 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff' });
  return out;
}

/** referenceInpodText is the in-pod rules of a variant as nft -f input. */
export function referenceInpodText(v: ReferenceVariant = {}): string {
  const dns = v.dnsCapture ?? true;
  const fams = families(v);
  const lines: string[] = [];
  const nat = (rest: string) => lines.push(`add rule inet istio-ambient-nat ${rest}`);
  const each = (fn: (f: Fam) => string) => fams.forEach((f) => nat(fn(f)));
  lines.push(
    'add table inet istio-ambient-nat',
    'flush table inet istio-ambient-nat',
    'add chain inet istio-ambient-nat prerouting { type nat hook prerouting priority -100 ; }',
    'add chain inet istio-ambient-nat output { type nat hook output priority -100 ; }',
    'add chain inet istio-ambient-nat istio-prerouting',
    'add chain inet istio-ambient-nat istio-output',
  );
  nat('output jump istio-output');
  nat('prerouting jump istio-prerouting');
  for (const iface of v.virtualInterfaces ?? []) {
    nat(`istio-prerouting iifname ${iface} meta l4proto tcp counter redirect to :15001`);
    nat(`istio-prerouting iifname ${iface} meta l4proto tcp counter return`);
  }
  if (!v.ingressOnly) each((f) => `istio-prerouting meta l4proto tcp ${f.ip} saddr ${f.probe} counter accept`);
  each((f) => `istio-output meta l4proto tcp ${f.ip} daddr ${f.probe} counter accept`);
  if (!v.ingressOnly) {
    each((f) => `istio-prerouting ${f.ip} daddr != ${f.localhost} tcp dport != 15008 mark and 0xfff != 0x539 counter redirect to :15006`);
  }
  if (dns) {
    nat('istio-output oifname != lo mark and 0xfff != 0x539 udp dport 53 counter redirect to :15053');
    each((f) => `istio-output ${f.ip} daddr != ${f.localhost} tcp dport 53 mark and 0xfff != 0x539 counter redirect to :15053`);
  }
  nat('istio-output meta l4proto tcp mark and 0xfff == 0x111 counter accept');
  each((f) => `istio-output oifname lo ${f.ip} daddr != ${f.localhost} counter accept`);
  each((f) => `istio-output meta l4proto tcp ${f.ip} daddr != ${f.localhost} mark and 0xfff != 0x539 counter redirect to :15001`);

  lines.push(
    'add table inet istio-ambient-mangle',
    'flush table inet istio-ambient-mangle',
    'add chain inet istio-ambient-mangle prerouting { type filter hook prerouting priority -150 ; }',
    'add chain inet istio-ambient-mangle output { type route hook output priority -150 ; }',
    'add chain inet istio-ambient-mangle istio-prerouting',
    'add chain inet istio-ambient-mangle istio-output',
    'add rule inet istio-ambient-mangle prerouting jump istio-prerouting',
    'add rule inet istio-ambient-mangle output jump istio-output',
  );
  // Kept in ingress-only mode too (the reference's ingress*.golden): inbound HBONE's replies need it.
  lines.push('add rule inet istio-ambient-mangle istio-prerouting meta mark & 0xfff == 0x539 counter ct mark set ct mark & 0xfffff000 | 0x111');
  lines.push('add rule inet istio-ambient-mangle istio-output ct mark and 0xfff == 0x111 counter meta mark set ct mark');
  if (dns) {
    lines.push(
      'add table inet istio-ambient-raw',
      'flush table inet istio-ambient-raw',
      'add chain inet istio-ambient-raw prerouting { type filter hook prerouting priority -300 ; }',
      'add chain inet istio-ambient-raw output { type filter hook output priority -300 ; }',
      'add chain inet istio-ambient-raw istio-prerouting',
      'add chain inet istio-ambient-raw istio-output',
      'add rule inet istio-ambient-raw prerouting jump istio-prerouting',
      'add rule inet istio-ambient-raw output jump istio-output',
      'add rule inet istio-ambient-raw istio-output udp dport 53 meta mark and 0xfff == 0x539 counter ct zone set 1',
      'add rule inet istio-ambient-raw istio-prerouting udp sport 53 meta mark and 0xfff != 0x539 counter ct zone set 1',
    );
  }
  return `${lines.join('\n')}\n`;
}

/** referenceHostText is the host's table of a variant (sets and SNAT rule, no elements) as nft -f input. */
export function referenceHostText(v: { kubeletUid: number; ipv6?: boolean; probeSourceV4?: string; probeSourceV6?: string }): string {
  const comment = 'comment "UUID of the pods that are part of ambient mesh"';
  const lines = [
    'add table inet istio-ambient-nat',
    `add set inet istio-ambient-nat istio-inpod-probes-v4 { type ipv4_addr ; ${comment} ; }`,
  ];
  if (v.ipv6) lines.push(`add set inet istio-ambient-nat istio-inpod-probes-v6 { type ipv6_addr ; ${comment} ; }`);
  lines.push('add chain inet istio-ambient-nat postrouting { type nat hook postrouting priority 100 ; }');
  lines.push(
    `add rule inet istio-ambient-nat postrouting meta l4proto tcp skuid ${v.kubeletUid} ip daddr @istio-inpod-probes-v4 counter snat to ${v.probeSourceV4 ?? '169.254.7.127'}`,
  );
  if (v.ipv6) {
    lines.push(
      `add rule inet istio-ambient-nat postrouting meta l4proto tcp skuid ${v.kubeletUid} ip6 daddr @istio-inpod-probes-v6 counter snat to ${v.probeSourceV6 ?? 'fd16:9254:7127:1337:ffff:ffff:ffff:ffff'}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
