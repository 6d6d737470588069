/**
 * IP addresses for every layer: strict parsing of text (parse.ts), the address classes that change how an address
 * is read or written (family.ts), and the two textual forms podnet writes (format.ts).
 */
export { type ParsedIp, parseIp, parseIpv4, parseIpv6 } from './parse.js';
export { isIpv4Compatible, isIpv4Mapped, unmapIpv4 } from './family.js';
export { formatIp, formatIpNtop } from './format.js';
