// Loads the captured kernel scenarios in test/fixtures/ipset/*.hex and masks the reply fields that legitimately
// differ between two runs (or between the kernel and the fake): reply nlmsg_pid, INITVAL and MEMSIZE in a set
// header, the remaining TIMEOUT of entries, and the order of entries inside one ADT nest (kernel hash order).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { attrs, messages } from './replies.js';

export interface Step {
  label: string;
  request: Uint8Array;
  replies: Uint8Array[];
}

export function loadScenario(name: string): Step[] {
  const path = fileURLToPath(new URL(`../../fixtures/ipset/${name}.hex`, import.meta.url));
  const steps: Step[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const [kind, ...rest] = line.split(' ');
    const value = rest.join(' ');
    if (kind === 'step') steps.push({ label: value, request: new Uint8Array(), replies: [] });
    const step = steps[steps.length - 1];
    if (!step) throw new Error(`${name}.hex: ${kind} before any step`);
    if (kind === 'request') step.request = Buffer.from(value, 'hex');
    if (kind === 'reply') step.replies.push(Buffer.from(value, 'hex'));
  }
  return steps;
}

function zero(buf: Uint8Array, value: Uint8Array): void {
  buf.fill(0, value.byteOffset - buf.byteOffset, value.byteOffset - buf.byteOffset + value.length);
}

/** MaskOptions widen the mask: `hashsize` also hides HASHSIZE, which the kernel grows as buckets fill. */
export interface MaskOptions {
  hashsize?: boolean;
}

/** mask returns a copy of one reply datagram in canonical form (see the file comment). */
export function mask(datagram: Uint8Array, options: MaskOptions = {}): Uint8Array {
  const out = new Uint8Array(datagram);
  for (const m of messages(out)) {
    const at = m.bytes.byteOffset - out.byteOffset;
    out.fill(0, at + 12, at + 16);
    if (m.type >> 8 !== 6) continue;
    for (const top of attrs(m.bytes, 20)) {
      if (top.type === 7) {
        for (const a of attrs(top.value)) if (a.type === 17 || a.type === 26 || (options.hashsize && a.type === 18)) zero(out, a.value);
      }
      if (top.type === 8) {
        const children = attrs(top.value);
        for (const d of children) for (const a of attrs(d.value)) if (a.type === 6) zero(out, a.value);
        const blobs = children.map((d) => Buffer.from(top.value.subarray(d.start, d.start + ((d.value.length + 4 + 3) & ~3))));
        blobs.sort(Buffer.compare);
        let off = top.value.byteOffset - out.byteOffset;
        for (const b of blobs) {
          out.set(b, off);
          off += b.length;
        }
      }
    }
  }
  return out;
}

export function hex(datagrams: Uint8Array[], options: MaskOptions = {}): string[] {
  return datagrams.map((d) => Buffer.from(mask(d, options)).toString('hex'));
}
