#!/usr/bin/env node
// npm run fuzz [-- --seconds N] [--target NAME]...: builds the libFuzzer
// targets in native/fuzz with clang (ASan + UBSan, no N-API), replays every
// regression input under test/fixtures/fuzz/<target>/regressions/, fuzzes
// each target for N seconds (default 60; 0 replays only) from seeds made from
// test/fixtures/ipset, test/fixtures/rtnetlink and test/fixtures/nftables (and, for the podnet-cni target, configs
// and answers written out in scripts/fuzz-cni-seeds.mjs) and the corpus kept in build-fuzz/corpus/, and prints
// iterations, time and coverage per target. Exits 1 on any crash, leak,
// sanitizer report or failed check; the input that caused it is left in
// build-fuzz/artifacts/<target>/ for a regression. No network access.
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, delimiter, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { writeCniSeeds } from './fuzz-cni-seeds.mjs';
import { writeNftablesSeeds, writeRtnetlinkSeeds, writeSeeds } from './fuzz-seeds.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = join(root, 'build-fuzz');

// The plain layers each target links: engine and codecs, never a binding.
const LIBRARY = ['native/util/sys_error.cc', 'native/netlink/attr.cc', 'native/netlink/engine.cc', 'native/ipset/record.cc', 'native/ipset/session.cc'];
const TARGETS = {
  engine: { source: 'native/fuzz/engine_fuzz.cc', library: ['native/util/sys_error.cc', 'native/netlink/attr.cc', 'native/netlink/engine.cc'] },
  ipset: { source: 'native/fuzz/ipset_fuzz.cc', library: LIBRARY },
  records: { source: 'native/fuzz/records_fuzz.cc', library: ['native/util/sys_error.cc', 'native/netlink/attr.cc', 'native/ipset/record.cc'] },
  rtnetlink: {
    source: 'native/fuzz/rtnetlink_fuzz.cc',
    library: ['native/util/sys_error.cc', 'native/netlink/attr.cc', 'native/netlink/engine.cc', 'native/rtnetlink/codec.cc', 'native/rtnetlink/session.cc'],
  },
  nftables: {
    source: 'native/fuzz/nftables_fuzz.cc',
    library: ['native/util/sys_error.cc', 'native/netlink/attr.cc', 'native/netlink/engine.cc', 'native/nftables/codec.cc', 'native/nftables/element_records.cc', 'native/nftables/expr.cc', 'native/nftables/session.cc'],
  },
  // podnet-cni's parsers and printers (no main, no sockets: exchange.cc and main.cc stay out).
  cni: {
    source: 'native/fuzz/cni_fuzz.cc',
    library: ['native/cni/utf8.cc', 'native/cni/config_scan.cc', 'native/cni/plugin_config.cc', 'native/cni/cni_output.cc', 'native/cni/wire.cc'],
  },
};

// _GLIBCXX_SANITIZE_VECTOR makes a read past a vector's size (inside its
// capacity) an ASan error: the engine's receive buffer is a reused vector.
const CXXFLAGS = ['-std=c++17', '-g', '-O1', '-fno-omit-frame-pointer', '-fsanitize=address,undefined', '-fno-sanitize-recover=all', '-D_GLIBCXX_SANITIZE_VECTOR=1', '-Wall', '-Wextra', '-Wno-unused-parameter', `-I${join(root, 'native')}`];
const ENV = {
  ...process.env,
  ASAN_OPTIONS: 'detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1',
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
};
// What a finding prints even when the exit status would not say so.
const FINDING = /ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: \w+Sanitizer|fuzz check failed/;

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    target: { type: 'string', multiple: true },
  },
});
const seconds = Number(values.seconds);
if (!Number.isInteger(seconds) || seconds < 0) fail(`expected a whole number of seconds for --seconds but received ${values.seconds}`);
const names = values.target ?? Object.keys(TARGETS);
for (const name of names) if (!TARGETS[name]) fail(`unknown target '${name}' (targets: ${Object.keys(TARGETS).join(', ')})`);

function fail(message) {
  console.error(`fuzz: ${message}`);
  process.exit(1);
}

function findClang() {
  const dirs = (process.env.PATH ?? '').split(delimiter);
  for (const name of [process.env.FUZZ_CXX, 'clang++', 'clang++-14'].filter(Boolean)) {
    if (name.includes('/')) return name;
    for (const dir of dirs) if (existsSync(join(dir, name))) return join(dir, name);
  }
  fail('clang++ not found (apt-get install clang libclang-rt-14-dev, or set FUZZ_CXX)');
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) fail(`${cmd} ${args.join(' ')} failed`);
}

function newestUnder(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestUnder(path));
    else if (/\.(h|cc)$/.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function findTool(names) {
  const dirs = (process.env.PATH ?? '').split(delimiter);
  for (const name of names) for (const dir of dirs) if (existsSync(join(dir, name))) return join(dir, name);
  fail(`none of ${names.join(', ')} found (apt-get install binutils)`);
}

// libFuzzer's runtime is built against the system libstdc++ without
// _GLIBCXX_SANITIZE_VECTOR, and clang links it (--whole-archive) ahead of the
// targets, so its weak template instantiations win over theirs: the
// annotated std::vector<uint8_t>::_M_default_append and operator= of the
// targets were libFuzzer's unannotated ones, and a vector grown by one and
// read or written by the other reported a container-overflow that was not
// there (or missed one that was). A private copy of the runtime with its
// weak C++ symbols renamed keeps the two apart, as upstream builds do by
// giving libFuzzer its own libc++. Rebuilt when the runtime changes.
function fuzzerRuntime(cxx, fresh) {
  const builtins = spawnSync(cxx, ['--rtlib=compiler-rt', '-print-libgcc-file-name'], { encoding: 'utf8' }).stdout?.trim() ?? '';
  const archive = join(dirname(builtins), basename(builtins).replace('builtins', 'fuzzer'));
  if (!builtins || !existsSync(archive)) fail(`libFuzzer runtime not found next to '${builtins}' (apt-get install libclang-rt-14-dev)`);
  const own = join(out, 'libfuzzer-private.a');
  if (fresh && existsSync(own) && statSync(own).mtimeMs >= statSync(archive).mtimeMs) return own;
  const nm = spawnSync(findTool(['nm', 'llvm-nm', 'llvm-nm-14']), ['-g', '--defined-only', archive], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (nm.status !== 0) fail(`nm ${archive} failed`);
  const weak = new Set();
  for (const line of nm.stdout.split('\n')) {
    const [, type, name] = line.trim().split(/\s+/);
    if (name?.startsWith('_Z') && ['W', 'V', 'u'].includes(type)) weak.add(name);
  }
  const map = join(out, 'libfuzzer-private.syms');
  writeFileSync(map, [...weak].map((n) => `${n} __podnet_libfuzzer${n}\n`).join(''));
  run(findTool(['objcopy', 'llvm-objcopy', 'llvm-objcopy-14']), [`--redefine-syms=${map}`, archive, own]);
  return own;
}

// Rebuilds what is older than any native header or source (headers are
// shared widely enough that tracking them one by one buys little) or than
// a change of compiler or flags.
function build(cxx) {
  mkdirSync(join(out, 'obj'), { recursive: true });
  const stamp = join(out, 'flags');
  const flags = JSON.stringify([cxx, CXXFLAGS]);
  const fresh = existsSync(stamp) && readFileSync(stamp, 'utf8') === flags;
  const newest = Math.max(newestUnder(join(root, 'native')), statSync(fileURLToPath(import.meta.url)).mtimeMs);
  const stale = (file) => !fresh || !existsSync(file) || statSync(file).mtimeMs < newest;
  const runtime = fuzzerRuntime(cxx, fresh);
  const linkStale = (file) => stale(file) || statSync(file).mtimeMs < statSync(runtime).mtimeMs;
  const objects = new Map();
  for (const name of names) {
    const { source, library } = TARGETS[name];
    for (const src of [...library, source]) {
      if (objects.has(src)) continue;
      const obj = join(out, 'obj', src.replace(/[/.]/g, '_') + '.o');
      // Only the target itself carries the fuzzer's main; the rest is instrumented for it.
      const mode = src === source ? '-fsanitize=fuzzer' : '-fsanitize=fuzzer-no-link';
      if (stale(obj)) run(cxx, [...CXXFLAGS, mode, '-c', join(root, src), '-o', obj]);
      objects.set(src, obj);
    }
    const bin = join(out, name);
    const link = ['-fsanitize=address,undefined', `-Wl,--whole-archive,${runtime},--no-whole-archive`, ...[...library, source].map((s) => objects.get(s))];
    if (linkStale(bin)) run(cxx, [...link, '-o', bin]);
  }
  writeFileSync(stamp, flags);
}

function filesIn(dir) {
  return existsSync(dir) ? readdirSync(dir).filter((f) => !f.startsWith('.')).map((f) => join(dir, f)) : [];
}

// Runs the fuzzer binary with its output in a log; true when it found nothing.
function libFuzzer(bin, args, log) {
  const fd = openSync(log, 'w');
  const r = spawnSync(bin, args, { cwd: root, env: ENV, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const text = readFileSync(log, 'utf8');
  return { ok: r.status === 0 && !FINDING.test(text), text, status: r.status ?? r.signal };
}

function tail(text, lines) {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function stats(text) {
  const done = [...text.matchAll(/^#(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)\/(\S+).*?exec\/s: (\d+)/gm)].at(-1);
  const stat = (key) => Number(new RegExp(`^stat::${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
  if (done) return { runs: Number(done[1]), cov: Number(done[2]), ft: Number(done[3]), corp: `${done[4]}/${done[5]}`, execs: Number(done[6]) };
  return { runs: stat('number_of_executed_units'), cov: NaN, ft: NaN, corp: '?', execs: stat('average_exec_per_sec') };
}

const cxx = findClang();
console.log(`fuzz: building ${names.join(', ')} with ${cxx}`);
build(cxx);
const seedCounts = {
  ...writeSeeds(join(root, 'test/fixtures/ipset'), join(out, 'seeds')),
  rtnetlink: writeRtnetlinkSeeds(join(root, 'test/fixtures/rtnetlink'), join(out, 'seeds')),
  nftables: writeNftablesSeeds(join(root, 'test/fixtures/nftables'), join(out, 'seeds')),
  cni: writeCniSeeds(join(out, 'seeds')),
};

const results = [];
let failed = false;
for (const name of names) {
  const bin = join(out, name);
  const logs = join(out, 'logs');
  const artifacts = join(out, 'artifacts', name) + '/';
  const corpus = join(out, 'corpus', name);
  const seeds = join(out, 'seeds', name);
  const regressions = join(root, 'test/fixtures/fuzz', name, 'regressions');
  for (const dir of [logs, artifacts, corpus]) mkdirSync(dir, { recursive: true });

  // Every regression and seed once, before any mutation: a fix that came
  // undone fails here whatever --seconds says.
  const replayed = [...filesIn(regressions), ...filesIn(seeds)];
  const replay = libFuzzer(bin, [`-artifact_prefix=${artifacts}`, ...replayed], join(logs, `${name}-replay.log`));
  if (!replay.ok) {
    failed = true;
    console.error(`fuzz: ${name}: replaying regressions and seeds failed (exit ${replay.status}):\n${tail(replay.text, 60)}`);
    results.push({ name, result: 'FAILED (replay)', replayed: replayed.length });
    continue;
  }
  if (seconds === 0) {
    results.push({ name, result: 'ok', replayed: replayed.length });
    continue;
  }

  const started = Date.now();
  const log = join(logs, `${name}.log`);
  const args = [`-max_total_time=${seconds}`, '-print_final_stats=1', '-timeout=10', '-rss_limit_mb=2048', `-artifact_prefix=${artifacts}`, corpus, seeds];
  if (existsSync(regressions)) args.push(regressions);
  const fuzz = libFuzzer(bin, args, log);
  const elapsed = (Date.now() - started) / 1000;
  const s = stats(fuzz.text);
  const row = { name, result: fuzz.ok ? 'ok' : 'FAILED', replayed: replayed.length, seeds: seedCounts[name], seconds: elapsed.toFixed(1), iterations: s.runs, 'exec/s': s.execs, cov: s.cov, ft: s.ft, corp: s.corp, corpusFiles: filesIn(corpus).length };
  results.push(row);
  if (!fuzz.ok) {
    failed = true;
    const found = [...fuzz.text.matchAll(/Test unit written to (\S+)/g)].map((m) => relative(root, m[1]));
    console.error(`fuzz: ${name}: finding (exit ${fuzz.status}), log ${relative(root, log)}:\n${tail(fuzz.text, 80)}`);
    console.error(`fuzz: ${name}: inputs: ${found.join(' ') || '(none written)'}; once fixed, keep one under ${relative(root, regressions)}/`);
  } else {
    console.log(`fuzz: ${name}: ${s.runs} runs in ${elapsed.toFixed(1)} s, ${s.execs} exec/s, cov ${s.cov} ft ${s.ft}, corpus ${s.corp}`);
  }
}

console.table(results);
process.exit(failed ? 1 : 0);
