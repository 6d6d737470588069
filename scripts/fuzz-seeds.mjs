// Seed corpora for the fuzz targets in native/fuzz, made from the captured
// kernel replies in test/fixtures/{ipset,rtnetlink,nftables}/*.hex each time scripts/fuzz.mjs
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

// nftables_fuzz.cc's layout: 65 control bytes (flags, eight session ops of
// 4 bytes, eight batch descriptors of 4 bytes), then frames.
const NFT = {
  control: 65,
  subsys: 10,
  msg: { NEWTABLE: 0, GETTABLE: 1, DELTABLE: 2, NEWCHAIN: 3, GETCHAIN: 4, DELCHAIN: 5, NEWRULE: 6, GETRULE: 7, DELRULE: 8, NEWSET: 9, GETSET: 10, DELSET: 11, NEWSETELEM: 12, GETSETELEM: 13, DELSETELEM: 14, NEWGEN: 15, GETGEN: 16 },
  batchBegin: 16,
  families: [1, 2, 10, 7], // kFamilies
  dumpFamilies: [0, 1, 2, 10], // kDumpFamilies
  elementsNestMax: 60000, // kElementsNestMax in codec.h
};
const NLM_F = { REPLACE: 0x100, EXCL: 0x200, CREATE: 0x400 };

function nftAttrs(msg) {
  const out = new Map();
  for (const a of attrs(msg.bytes, 20)) out.set(a.type, a.value);
  return out;
}

function flagsIndex(flags) {
  if (flags & NLM_F.REPLACE) return 3;
  if (flags & NLM_F.EXCL) return 2;
  return flags & NLM_F.CREATE ? 1 : 0;
}

function familyIndex(family, table) {
  const i = table.indexOf(family);
  return i < 0 ? 0 : i;
}

// The comment length of a user data blob's record of the given type (0: none).
function udataCommentLength(udata, type) {
  for (let off = 0; udata && off + 2 <= udata.length; off += 2 + udata[off + 1]) {
    if (udata[off] === type) return Math.max(0, udata[off + 1] - 1);
  }
  return 0;
}

// p3 for an element count: (p3 & 0x7f) * (p3 & 0x80 ? 16 : 1) + 1, as near as it goes.
function countByte(n) {
  if (n - 1 < 128) return Math.max(0, n - 1);
  return 0x80 | Math.min(127, Math.round((n - 1) / 16));
}

// The batch descriptors of a captured batch's messages: one per op, a split
// element op's messages (its nest filled to kElementsNestMax) merged back.
function nftDescriptors(msgs) {
  const descs = [];
  let open = null; // the element op the previous message may continue
  for (const m of msgs) {
    if (m.type >> 8 !== NFT.subsys) continue;
    const cmd = m.type & 0xff;
    const family = m.bytes[16];
    const a = nftAttrs(m);
    const del = [NFT.msg.DELTABLE, NFT.msg.DELCHAIN, NFT.msg.DELSET, NFT.msg.DELSETELEM].includes(cmd) ? 8 : 0;
    const k = del | (flagsIndex(m.flags) << 4);
    const fam = familyIndex(family, NFT.families);
    const long = (a.get(1)?.length ?? 0) > 2 ? 0x10 : 0;
    if (cmd === NFT.msg.NEWSETELEM || cmd === NFT.msg.DELSETELEM) {
      const list = a.get(3);
      const items = list ? [...attrs(list)] : [];
      const first = items[0] ? new Map([...attrs(items[0].value)].map((x) => [x.type, x.value])) : new Map();
      const key = first.get(1) ? [...attrs(first.get(1))].find((x) => x.type === 1)?.value : undefined;
      const continues = open && open.cmd === cmd && open.full;
      const full = list ? list.length + 4 >= NFT.elementsNestMax : false;
      if (continues) {
        open.count += items.length;
        open.full = full;
        open.desc[3] = countByte(open.count);
        continue;
      }
      const desc = [3 | k | (a.has(4) ? 0x40 : 0), fam | (key?.length === 16 ? 4 : 0) | (first.has(3) ? 8 : 0) | long, udataCommentLength(first.get(6), 0), countByte(items.length)];
      descs.push(desc);
      open = { cmd, full, count: items.length, desc };
      continue;
    }
    open = null;
    switch (cmd) {
      case NFT.msg.NEWTABLE:
      case NFT.msg.DELTABLE: {
        const dormant = a.get(2)?.length === 4 && a.get(2).readUInt32BE(0) & 1 ? 8 : 0;
        descs.push([0 | k, fam | dormant | long, udataCommentLength(a.get(6), 0), 0]);
        break;
      }
      case NFT.msg.NEWCHAIN:
      case NFT.msg.DELCHAIN: {
        const hook = a.get(4) ? new Map([...attrs(a.get(4))].map((x) => [x.type, x.value])) : null;
        const type = cstring(a.get(7));
        const policy = a.get(5)?.length === 4 ? a.get(5).readUInt32BE(0) : null;
        const p1 = fam | (hook ? 4 : 0) | (type === 'nat' ? 8 : 0) | ((a.get(3)?.length ?? 0) > 2 ? 0x10 : 0) | (policy !== null ? 0x20 : 0) | (policy === 0 ? 0x40 : 0);
        descs.push([1 | k, p1, udataCommentLength(a.get(12), 0), hook?.get(1)?.length === 4 ? hook.get(1).readUInt32BE(0) % 5 : 0]);
        break;
      }
      case NFT.msg.NEWSET:
      case NFT.msg.DELSET: {
        const keyLen = a.get(5)?.length === 4 ? a.get(5).readUInt32BE(0) : 4;
        const flags = a.get(3)?.length === 4 ? a.get(3).readUInt32BE(0) & 0xff : 0;
        descs.push([2 | k | (a.get(10)?.length === 4 && a.get(10).readUInt32BE(0) ? 0x40 : 0), fam | (keyLen === 16 ? 4 : 0) | ((a.get(2)?.length ?? 0) > 2 ? 0x10 : 0), udataCommentLength(a.get(13), 7), flags]);
        break;
      }
      case NFT.msg.DELRULE:
        descs.push([4 | (flagsIndex(m.flags) << 4), fam, 0, 0]);
        break;
      default:
        break;
    }
  }
  return descs;
}

// The session op of a captured request, with its batch descriptors for a batch; null for none.
function nftOp(request) {
  const msgs = [...messages(request)];
  if (msgs.length === 0) return null;
  const m = msgs[0];
  if (m.type === NFT.batchBegin) {
    const descs = nftDescriptors(msgs.slice(1));
    return descs.length <= 8 ? { op: [0, descs.length, 0, 0], descs } : null;
  }
  if (m.type >> 8 !== NFT.subsys) return null;
  const a = nftAttrs(m);
  const famBits = familyIndex(m.bytes[16], NFT.dumpFamilies) << 1;
  const tableBit = a.has(1) ? 8 : 0;
  switch (m.type & 0xff) {
    case NFT.msg.GETTABLE: return { op: [1, famBits] };
    case NFT.msg.GETCHAIN: return { op: [2, famBits | tableBit] };
    case NFT.msg.GETSET: return (m.flags & NLM_F_DUMP) === NLM_F_DUMP ? { op: [3, famBits | tableBit] } : { op: [6, famBits | 8] };
    case NFT.msg.GETRULE: return { op: [4, famBits | tableBit] };
    case NFT.msg.GETSETELEM: {
      if ((m.flags & NLM_F_DUMP) === NLM_F_DUMP) return { op: [5, famBits] };
      const list = a.get(3);
      const item = list ? [...attrs(list)][0] : undefined;
      const key = item ? [...attrs(item.value)].find((x) => x.type === 1) : undefined;
      const value = key ? [...attrs(key.value)].find((x) => x.type === 1)?.value : undefined;
      return { op: [6, famBits | (value?.length === 16 ? 1 : 0)] };
    }
    default:
      return null;
  }
}

function nftControl(flags, ops, descs = []) {
  const c = Buffer.alloc(NFT.control);
  c[0] = flags;
  ops.forEach((op, i) => Buffer.from(op).copy(c, 1 + 4 * i));
  descs.forEach((d, i) => Buffer.from(d).copy(c, 33 + 4 * i));
  return c;
}

/**
 * writeNftablesSeeds replaces outDir/nftables/ with seeds made from the
 * captured replies in fixturesDir/*.hex (test/fixtures/nftables): each step
 * as one op (a batch with its descriptors), runs of dump steps as one input,
 * each dumped message's payload for the decoders alone, and batches whose
 * acks are made up (an error at each message of a split element op, a
 * refusal at BEGIN). Returns the count.
 */
export function writeNftablesSeeds(fixturesDir, outDir) {
  const seeds = new SeedDir(join(outDir, 'nftables'));
  for (const file of readdirSync(fixturesDir).filter((f) => f.endsWith('.hex')).sort()) {
    const steps = loadSteps(join(fixturesDir, file));
    const runs = [];
    steps.forEach((step, i) => {
      if (step.request.length < 16) return;
      const got = nftOp(step.request);
      if (got === null) return;
      const frames = replyFrames(step);
      seeds.add(`${file}-${i}-${step.label}`, [nftControl(0, [got.op], got.descs), ...frames]);
      if (got.op[0] !== 0) runs.push({ op: got.op, frames });
      for (const reply of step.replies) {
        for (const m of messages(reply)) {
          if (m.type >> 8 === NFT.subsys) seeds.add(`${file}-${i}-decode-${seeds.count}`, [nftControl(0, [[7]]), m.bytes.subarray(16)]);
        }
      }
    });
    for (let i = 0; i + 8 <= runs.length; i += 4) {
      const run = runs.slice(i, i + 8);
      seeds.add(`${file}-run-${i}`, [nftControl(7, run.map((r) => r.op)), ...run.flatMap((r) => r.frames)]);
    }
  }
  // A table, a chain, then an element op split over three messages (2001
  // elements with 40-byte comments), each message refused in turn; and the
  // batch refused at BEGIN.
  const descs = [[0x10, 0, 0, 0], [0x11, 4, 0, 1], [0x23, 0, 40, 0x80 | 125]];
  for (let at = 0; at <= 5; at++) {
    const acks = [];
    for (let seq = 0; seq <= 5; seq++) acks.push(echoError(seq === at ? -17 : 0, seq, 0));
    seeds.add(`batch-split-error-at-${at}`, [nftControl(0, [[0, 3, 0]], descs), ...(at === 0 ? [acks[0]] : acks)]);
  }
  writeNftGenerationSeeds(seeds);
  return seeds.count;
}

// NEWGEN as the kernel answers GETGEN: NFTA_GEN_ID, _PROC_PID, _PROC_NAME, res_id the generation's low 16 bits.
function newGen(gen) {
  const attr = (type, value) => {
    const a = Buffer.alloc(4 + ((value.length + 3) & ~3));
    a.writeUInt16LE(4 + value.length, 0);
    a.writeUInt16LE(type, 2);
    value.copy(a, 4);
    return a;
  };
  const be32 = (v) => {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(v >>> 0, 0);
    return b;
  };
  const body = Buffer.concat([Buffer.from([0, 0, (gen >> 8) & 0xff, gen & 0xff]), attr(1, be32(gen)), attr(2, be32(4242)), attr(3, Buffer.from('nft\0'))]);
  const h = Buffer.alloc(16);
  h.writeUInt32LE(16 + body.length, 0);
  h.writeUInt16LE((NFT.subsys << 8) | NFT.msg.NEWGEN, 4);
  return Buffer.concat([h, body]);
}

// NLMSG_DONE ending a dump with nothing in it.
function doneMessage() {
  const d = Buffer.alloc(20);
  d.writeUInt32LE(20, 0);
  d.writeUInt16LE(3, 4);
  d.writeUInt16LE(2, 6); // NLM_F_MULTI
  return d;
}

// Flags bit 4 (the generation): GETGEN answered, a dump primed by it, a batch carrying a generation accepted and one
// refused at BEGIN with ERESTART (85).
function writeNftGenerationSeeds(seeds) {
  const gen = [frame(FRAME.datagram, newGen(7)), echoError(0, 0, 0)];
  seeds.add('generation-get', [nftControl(0x10, [[7]]), ...gen]);
  seeds.add('generation-get-zero', [nftControl(0x10, [[7]]), frame(FRAME.datagram, newGen(0)), echoError(0, 0, 0)]);
  seeds.add('generation-primes-dump', [nftControl(0x10, [[1, 0], [4, 8]]), ...gen, frame(FRAME.datagram, doneMessage()), frame(FRAME.datagram, doneMessage())]);
  const descs = [[0x10, 0, 0, 0]];
  seeds.add('generation-batch-current', [nftControl(0x10, [[0, 1, 0, 7]], descs), echoError(0, 0, 0), echoError(0, 1, 0)]);
  seeds.add('generation-batch-stale', [nftControl(0x10, [[0, 1, 0, 7]], descs), echoError(-85, 0, 0)]);
  seeds.add('generation-decode', [nftControl(0, [[7]]), newGen(0x12345678).subarray(16)]);
}
