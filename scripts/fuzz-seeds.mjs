// Seed corpora for the fuzz targets in native/fuzz, made from the captured
// kernel replies in test/fixtures/ipset/*.hex each time scripts/fuzz.mjs
// runs (so they follow the fixtures and nothing generated is committed).
// The control-byte layouts here are the ones the header comment of each
// target describes; a seed that drifted from them would still run, only
// aimed worse.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const NLM_F_DUMP = 0x300;
const NLM_F_EXCL = 0x200;
const CMD = { PROTOCOL: 1, CREATE: 2, DESTROY: 3, FLUSH: 4, RENAME: 5, SWAP: 6, LIST: 7, SAVE: 8, ADD: 9, DEL: 10, TEST: 11, TYPE: 13 };
const ATTR = { SETNAME: 2, TYPENAME: 3, FAMILY: 5, FLAGS: 6, DATA: 7, ADT: 8 };
const TYPES = ['hash:ip', 'hash:net', 'hash:ip,port', 'list:set']; // kTypes in ipset_fuzz.cc
const FRAME = { datagram: 0, echoError: 1 };
const IPSET_ERR_EXIST = 4103;

function loadSteps(file) {
  const steps = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [kind, ...rest] = line.split(' ');
    if (kind === 'step') steps.push({ label: rest.join(' '), request: Buffer.alloc(0), replies: [] });
    else if (kind === 'request') steps.at(-1).request = Buffer.from(rest.join(''), 'hex');
    else if (kind === 'reply') steps.at(-1).replies.push(Buffer.from(rest.join(''), 'hex'));
  }
  return steps;
}

function* messages(buf) {
  for (let off = 0; off + 16 <= buf.length; ) {
    const len = buf.readUInt32LE(off);
    if (len < 16 || len > buf.length - off) return;
    yield { len, type: buf.readUInt16LE(off + 4), flags: buf.readUInt16LE(off + 6), seq: buf.readUInt32LE(off + 8), bytes: buf.subarray(off, off + len) };
    off += (len + 3) & ~3;
  }
}

function* attrs(buf, start = 0) {
  for (let off = start; off + 4 <= buf.length; ) {
    const len = buf.readUInt16LE(off);
    if (len < 4 || len > buf.length - off) return;
    yield { type: buf.readUInt16LE(off + 2) & 0x3fff, value: buf.subarray(off + 4, off + len) };
    off += (len + 3) & ~3;
  }
}

function topAttrs(msg) {
  const out = new Map();
  for (const a of attrs(msg.bytes, 20)) out.set(a.type, a.value);
  return out;
}

// The same walk as FuzzTransport::Rebase, undone: seqs relative to the request's.
function rebase(datagram, base) {
  const d = Buffer.from(datagram);
  for (let off = 0; off + 16 <= d.length; ) {
    const len = d.readUInt32LE(off);
    d.writeUInt32LE((d.readUInt32LE(off + 8) - base) >>> 0, off + 8);
    if (len < 16 || len > d.length - off) break;
    off += (len + 3) & ~3;
  }
  return d;
}

function frame(kind, bytes) {
  if (bytes.length > 0xffff) return null;
  const head = Buffer.alloc(3);
  head[0] = kind;
  head.writeUInt16LE(bytes.length, 1);
  return Buffer.concat([head, bytes]);
}

function replyFrames(step) {
  const base = step.request.length >= 16 ? step.request.readUInt32LE(8) : 0;
  return step.replies.map((r) => frame(FRAME.datagram, rebase(r, base))).filter(Boolean);
}

function echoError(error, seq, lineno) {
  const b = Buffer.alloc(12);
  b.writeInt32LE(error, 0);
  b.writeUInt32LE(seq, 4);
  b.writeUInt32LE(lineno, 8);
  return frame(FRAME.echoError, b);
}

function control(size, bytes) {
  const c = Buffer.alloc(size);
  Buffer.from(bytes).copy(c);
  return c;
}

function typeIndex(name) {
  const i = TYPES.indexOf(name);
  return i < 0 ? 0 : i;
}

function cstring(value) {
  if (!value) return '';
  const nul = value.indexOf(0);
  return value.subarray(0, nul < 0 ? value.length : nul).toString();
}

// One ipset_fuzz op (8 bytes) for a captured request, or null for none.
function ipsetOp(request) {
  const msg = messages(request).next().value;
  if (!msg || msg.type >> 8 !== 6) return null;
  const cmd = msg.type & 0xff;
  const top = topAttrs(msg);
  const excl = msg.flags & NLM_F_EXCL ? 1 : 0;
  switch (cmd) {
    case CMD.PROTOCOL:
      return [0];
    case CMD.TYPE:
      return [1, typeIndex(cstring(top.get(ATTR.TYPENAME))), top.get(ATTR.FAMILY)?.[0] ?? 2];
    case CMD.ADD:
    case CMD.DEL: {
      const adt = top.get(ATTR.ADT);
      const n = adt ? [...attrs(adt)].filter((a) => a.type === ATTR.DATA).length : 1;
      return [2, (cmd === CMD.DEL ? 1 : 0) | (excl << 1), n & 0xff, n >> 8];
    }
    case CMD.TEST:
      return [3];
    case CMD.LIST:
    case CMD.SAVE: {
      const flags = top.get(ATTR.FLAGS);
      return [4, top.has(ATTR.SETNAME) ? 0 : 1, flags && flags.length === 4 ? flags.readUInt32BE(0) & 0xff : 0];
    }
    case CMD.CREATE:
      return [6, typeIndex(cstring(top.get(ATTR.TYPENAME))), 2];
    case CMD.DESTROY:
    case CMD.FLUSH:
    case CMD.RENAME:
    case CMD.SWAP:
      return [7, cmd - CMD.DESTROY, excl];
    default:
      return [7, 0, excl];
  }
}

// Entry DATA payloads in the LIST replies of a step, with their set's family.
function* dumpEntries(step) {
  let family = 2;
  for (const reply of step.replies) {
    for (const msg of messages(reply)) {
      if (msg.type >> 8 !== 6 || (msg.type & 0xff) !== CMD.LIST) continue;
      const top = topAttrs(msg);
      if (top.has(ATTR.FAMILY)) family = top.get(ATTR.FAMILY)[0];
      const adt = top.get(ATTR.ADT);
      if (!adt) continue;
      const entries = [...attrs(adt)].filter((a) => a.type === ATTR.DATA).map((a) => a.value);
      if (entries.length > 0) yield { family, entries };
    }
  }
}

// record.h's layout, host order (little-endian here, as on every CI host).
function recordOf(data, family) {
  const r = { family, flags: 0, cidr: 0, proto: 0, port: 0, timeout: 0, ip: Buffer.alloc(16), bytes: 0n, packets: 0n, comment: Buffer.alloc(0) };
  for (const a of attrs(data)) {
    const v = a.value;
    if (a.type === 1) {
      for (const ip of attrs(v)) {
        ip.value.copy(r.ip);
        r.family = ip.type === 1 ? 2 : 10;
      }
    } else if (a.type === 3 && v.length === 1) [r.cidr, r.flags] = [v[0], r.flags | 1];
    else if (a.type === 4 && v.length === 2) [r.port, r.flags] = [v.readUInt16BE(0), r.flags | 2];
    else if (a.type === 7 && v.length === 1) [r.proto, r.flags] = [v[0], r.flags | 4];
    else if (a.type === 6 && v.length === 4) [r.timeout, r.flags] = [v.readUInt32BE(0), r.flags | 8];
    else if (a.type === 26) [r.comment, r.flags] = [Buffer.from(cstring(v)), r.flags | 16];
    else if (a.type === 24 && v.length === 8) [r.bytes, r.flags] = [v.readBigUInt64BE(0), r.flags | 32];
    else if (a.type === 25 && v.length === 8) [r.packets, r.flags] = [v.readBigUInt64BE(0), r.flags | 32];
    else if (a.type === 8 && v.length === 4 && v.readUInt32BE(0) & 4) r.flags |= 64;
  }
  return r;
}

function encodeRecord(r) {
  const b = Buffer.alloc((48 + r.comment.length + 7) & ~7);
  b.writeUInt16LE(b.length, 0);
  b[2] = r.family;
  b[3] = r.flags;
  b[4] = r.cidr;
  b[5] = r.proto;
  b.writeUInt16LE(r.port, 6);
  b.writeUInt32LE(r.timeout, 8);
  b.writeUInt16LE(r.comment.length, 12);
  r.ip.copy(b, 16);
  b.writeDoubleLE(Number(r.bytes), 32);
  b.writeDoubleLE(Number(r.packets), 40);
  r.comment.copy(b, 48);
  return b;
}

class SeedDir {
  constructor(dir) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    this.dir = dir;
    this.seen = new Set();
  }
  add(name, parts) {
    const bytes = Buffer.concat(parts.filter(Boolean));
    const key = bytes.toString('base64');
    if (this.seen.has(key)) return;
    this.seen.add(key);
    writeFileSync(join(this.dir, name.replace(/[^a-z0-9]+/gi, '-')), bytes);
  }
  get count() {
    return this.seen.size;
  }
}

/**
 * writeSeeds replaces outDir/<target>/ with seeds made from the fixtures in
 * fixturesDir and returns how many each target got.
 */
export function writeSeeds(fixturesDir, outDir) {
  const engine = new SeedDir(join(outDir, 'engine'));
  const ipset = new SeedDir(join(outDir, 'ipset'));
  const records = new SeedDir(join(outDir, 'records'));
  const typeReplies = new Map(); // type name -> frames of its TYPE step, for CREATE seeds

  for (const file of readdirSync(fixturesDir).filter((f) => f.endsWith('.hex')).sort()) {
    const scenario = file.replace(/\.hex$/, '');
    const steps = loadSteps(join(fixturesDir, file));
    const ops = [];
    steps.forEach((step, i) => {
      const name = `${scenario}-${i}-${step.label}`;
      const frames = replyFrames(step);
      const msgs = [...messages(step.request)];
      if (msgs.length === 0) return;
      const dump = (msgs[0].flags & NLM_F_DUMP) === NLM_F_DUMP;
      if (dump) {
        engine.add(`${name}-dump`, [control(17, [0, 0, 0, 0, 0, 1, 0, 0]), ...frames]);
        engine.add(`${name}-cursor`, [control(17, [0, 0, 0, 0, 0, 2, 7, 0]), ...frames]);
      } else {
        engine.add(`${name}-exchange`, [control(17, [0, 0, 0, 0, 0, 0, msgs.length - 1, 1]), ...frames]);
      }

      const op = ipsetOp(step.request);
      if (op === null) return;
      const typeName = cstring(topAttrs(msgs[0]).get(ATTR.TYPENAME));
      if (op[0] === 1) typeReplies.set(typeName, frames);
      const pre = op[0] === 6 ? (typeReplies.get(typeName) ?? []) : [];
      ipset.add(name, [control(33, [0, ...op]), ...pre, ...frames]);
      ops.push({ op, frames: [...pre, ...frames] });
      if (op[0] === 4 && op[1] === 0) ipset.add(`${name}-entries`, [control(33, [0, 5, 0xff, 0xff, 7]), ...frames]);

      for (const { family, entries } of dumpEntries(step)) {
        for (const e of entries.slice(0, 8)) records.add(`${name}-attrs-${records.count}`, [Buffer.from([1, family]), e]);
        records.add(`${name}-records-${records.count}`, [Buffer.from([0, 0]), ...entries.slice(0, 64).map((e) => encodeRecord(recordOf(e, family)))]);
      }
    });
    // Runs of four steps in one input: what one op leaves behind (a dirty
    // engine, unread replies) meets the next.
    for (let i = 0; i + 4 <= ops.length; i += 4) {
      const run = ops.slice(i, i + 4);
      const ctl = [3];
      for (const { op } of run) ctl.push(...op, ...Array(8 - op.length).fill(0));
      ipset.add(`${scenario}-run-${i}`, [control(33, ctl), ...run.flatMap((r) => r.frames)]);
    }
  }

  // Batches of several messages (600 records with 200-byte comments): the
  // first acked, then a failure echoing a line in a later message.
  for (const lineno of [1, 240, 300, 599]) {
    ipset.add(`adt-multi-${lineno}`, [control(33, [0, 2, 0, 600 & 0xff, 600 >> 8, 0, 0x10, 200]), echoError(0, 0, 0), echoError(-IPSET_ERR_EXIST, 0, lineno), echoError(0, 0, 0), echoError(0, 0, 0)]);
  }
  return { engine: engine.count, ipset: ipset.count, records: records.count };
}

// The rtnetlink target's op byte for a captured request (rtnetlink_fuzz.cc's
// header): the kind in bits 0-2, the family in bits 3-4 for dumps, delete in
// bit 3 for changes.
const RTM = { GETLINK: 18, GETADDR: 22, NEWROUTE: 24, DELROUTE: 25, GETROUTE: 26, NEWRULE: 32, DELRULE: 33, GETRULE: 34 };
function rtOp(request) {
  const type = request.readUInt16LE(4);
  const familyBits = [0, 2, 10].indexOf(request[16]) << 3;
  switch (type) {
    case RTM.GETLINK: return (request.readUInt16LE(6) & NLM_F_DUMP) === NLM_F_DUMP ? 0 : 1;
    case RTM.GETADDR: return 2 | familyBits;
    case RTM.GETROUTE: return 3 | familyBits;
    case RTM.GETRULE: return 4 | familyBits;
    case RTM.NEWROUTE: return 5;
    case RTM.DELROUTE: return 5 | 8;
    case RTM.NEWRULE: return 6;
    case RTM.DELRULE: return 6 | 8;
    default: return null;
  }
}

/**
 * writeRtnetlinkSeeds replaces outDir/rtnetlink/ with seeds made from the
 * captured replies in fixturesDir/*.hex (test/fixtures/rtnetlink): each step
 * as one op, runs of steps as one input, and each dumped message's payload
 * for the decoders alone. Returns the count.
 */
export function writeRtnetlinkSeeds(fixturesDir, outDir) {
  const seeds = new SeedDir(join(outDir, 'rtnetlink'));
  for (const file of readdirSync(fixturesDir).filter((f) => f.endsWith('.hex')).sort()) {
    const steps = loadSteps(join(fixturesDir, file));
    const ops = [];
    steps.forEach((step, i) => {
      if (step.request.length < 16) return;
      const op = rtOp(step.request);
      if (op === null) return;
      const frames = replyFrames(step);
      seeds.add(`${file}-${i}-${step.label}`, [control(9, [0, op]), ...frames]);
      ops.push({ op, frames });
      for (const reply of step.replies) {
        for (const m of messages(reply)) {
          if (m.type >= 16) seeds.add(`${file}-${i}-decode-${seeds.count}`, [control(9, [0, 7]), m.bytes.subarray(16)]);
        }
      }
    });
    for (let i = 0; i + 8 <= ops.length; i += 4) {
      const run = ops.slice(i, i + 8);
      seeds.add(`${file}-run-${i}`, [control(9, [7, ...run.map((r) => r.op)]), ...run.flatMap((r) => r.frames)]);
    }
  }
  return seeds.count;
}
