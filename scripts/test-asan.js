#!/usr/bin/env node
// Runs the whole vitest suite against the sanitizer build (npm run build:asan).
// Node itself is not built with ASan, so the runtime must be preloaded; leak
// detection stays off because Node's own start-up allocations would drown it.
// Any ASan or UBSan finding aborts the process, which fails the test file.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const addon = `${root}build-asan/Release/podnet.node`;
if (!existsSync(addon)) {
  console.error(`test:asan: ${addon} is missing (npm run build:asan builds it)`);
  process.exit(1);
}

const runtime = (name) => execFileSync('cc', [`-print-file-name=${name}`], { encoding: 'utf8' }).trim();
const env = {
  ...process.env,
  PODNET_ADDON_PATH: addon,
  PODNET_EXPECT_ASAN: '1',
  LD_PRELOAD: [runtime('libasan.so'), runtime('libubsan.so')].join(':'),
  ASAN_OPTIONS: 'detect_leaks=0:abort_on_error=1:halt_on_error=1:verify_asan_link_order=0',
  UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1',
};
// Packaging is checked by the plain run: a packed install builds its own prebuild, and the sanitizer has nothing
// to watch there (the test would only skip, which CI counts as a failure). The suites that mostly drive other
// programs through the same addon calls other suites make (the demo and the examples, each a child process of its
// own; podman; the python ztunnel player) or check documents (the README's blocks) also run only in the plain runs
// (Node 20, 22 and 24): under the sanitizer they cost minutes of CI and watch no native path the rest does not.
const PLAIN_ONLY = [
  'test/package/packed-install.test.ts',
  'test/agent/demo.test.ts',
  'test/examples/**',
  'test/cni/podman.test.ts',
  'test/proxy/ztunnel-player.test.ts',
  'test/readme/**',
];
const args = ['vitest', 'run', ...PLAIN_ONLY.flatMap((p) => ['--exclude', p]), ...process.argv.slice(2)];
const result = spawnSync('npx', args, { cwd: root, env, stdio: 'inherit' });
process.exit(result.status ?? 1);
