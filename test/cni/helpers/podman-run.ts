// Runs podman 4.3 with its CNI backend inside a test namespace (argv, no shell): `nsenter --net=PATH podman ...`
// (not `ip netns exec`, which remounts /sys and hides the cgroup mounts runc needs), with its storage, run state,
// tmp dir and network configs in a temp dir, and the flags this machine needs (runc, cgroupfs, file events, limits
// the sandbox can grant).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { CLI_ENV } from '../../helpers/netns.js';

/** PODMAN_TIMEOUT_MS bounds each podman call: it is killed (SIGKILL) past it. */
export const PODMAN_TIMEOUT_MS = 60_000;

/** The statically linked busybox the image is made of (Debian's busybox-static). */
export const BUSYBOX = '/bin/busybox';

/** PodmanExit is how one podman call ended. */
export interface PodmanExit {
  argv: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  elapsedMs: number;
}

/** PodmanOptions are where a Podman keeps its state. */
export interface PodmanOptions {
  /** The namespace podman (and so the CNI plugins and the bridge) runs in. */
  netnsPath: string;
  /** A temp dir for storage, run state, tmp files and containers.conf. */
  dir: string;
  /** The CNI plugin dirs podman searches, in order. */
  cniPluginDirs: string[];
  /** The CNI config dir. */
  cniConfigDir: string;
  /** The cgroup every container and conmon go under (its name, unique to the test). */
  cgroupParent: string;
}

/** describeExit is an exit with its output, for assertion messages. */
export function describeExit(e: PodmanExit): string {
  const status = e.signal === null ? `exit ${e.code}` : `signal ${e.signal}`;
  return `podman ${e.argv.join(' ')}: ${status} after ${Math.round(e.elapsedMs)} ms\nstdout: ${e.stdout}\nstderr: ${e.stderr}`;
}

/** Podman runs podman with the given state dirs; every call is bounded by PODMAN_TIMEOUT_MS. */
export class Podman {
  readonly options: PodmanOptions;
  readonly #env: NodeJS.ProcessEnv;
  readonly #global: string[];

  constructor(options: PodmanOptions) {
    this.options = options;
    const { dir } = options;
    for (const sub of ['root', 'runroot', 'tmp']) mkdirSync(join(dir, sub), { recursive: true });
    const conf = join(dir, 'containers.conf');
    const list = (items: string[]): string => `[${items.map((s) => JSON.stringify(s)).join(', ')}]`;
    // File locks in the tmp dir keep podman's shm lock file out of /dev/shm.
    writeFileSync(
      conf,
      [
        '[network]',
        'network_backend = "cni"',
        `cni_plugin_dirs = ${list(options.cniPluginDirs)}`,
        `network_config_dir = ${JSON.stringify(options.cniConfigDir)}`,
        '[engine]',
        `tmp_dir = ${JSON.stringify(join(dir, 'tmp'))}`,
        'lock_type = "file"',
        '',
      ].join('\n'),
    );
    this.#env = { ...CLI_ENV, CONTAINERS_CONF: conf, TMPDIR: join(dir, 'tmp') };
    this.#global = [
      '--root',
      join(dir, 'root'),
      '--runroot',
      join(dir, 'runroot'),
      '--runtime',
      'runc',
      '--cgroup-manager',
      'cgroupfs',
      '--events-backend',
      'file',
    ];
  }

  /** runFlags are the flags `podman run` needs here besides the test's own. */
  get runFlags(): string[] {
    return ['--cgroup-parent', this.options.cgroupParent, '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];
  }

  /** call runs podman with args (and stdin from `input`, a readable stream), resolving however it ends. */
  call(args: string[], input?: NodeJS.ReadableStream): Promise<PodmanExit> {
    const argv = [`--net=${this.options.netnsPath}`, 'podman', ...this.#global, ...args];
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const child = spawn('nsenter', argv, { env: this.#env, stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
      child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
      if (input && child.stdin) {
        child.stdin.on('error', () => {
          // podman exited before reading all of it: its exit status says why.
        });
        input.pipe(child.stdin);
      }
      const timer = setTimeout(() => child.kill('SIGKILL'), PODMAN_TIMEOUT_MS);
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ argv: args, code, signal, stdout, stderr, elapsedMs: performance.now() - started });
      });
    });
  }

  /** ok runs podman and returns its stdout, throwing with the whole exit when it did not exit 0. */
  async ok(args: string[], input?: NodeJS.ReadableStream): Promise<string> {
    const exit = await this.call(args, input);
    if (exit.code !== 0) throw new Error(describeExit(exit));
    return exit.stdout;
  }

  /**
   * importBusybox makes a rootfs of BUSYBOX and a link per applet in the temp dir and imports it as `image`
   * (`tar -C rootfs -c . | podman import - image`, piped by node).
   */
  async importBusybox(image: string): Promise<void> {
    const rootfs = join(this.options.dir, 'rootfs');
    mkdirSync(join(rootfs, 'bin'), { recursive: true });
    execFileSync('cp', [BUSYBOX, join(rootfs, 'bin', 'busybox')], { env: CLI_ENV });
    const applets = execFileSync(BUSYBOX, ['--list'], { encoding: 'utf8', env: CLI_ENV }).split('\n').filter((a) => /^[\w.[-]+$/.test(a));
    for (const applet of applets) {
      if (applet === 'busybox') continue;
      const link = join(rootfs, 'bin', applet);
      try {
        readlinkSync(link);
      } catch {
        symlinkSync('busybox', link);
      }
    }
    const tar = spawn('tar', ['-C', rootfs, '-c', '.'], { env: CLI_ENV, stdio: ['ignore', 'pipe', 'pipe'] });
    let tarErr = '';
    tar.stderr.setEncoding('utf8').on('data', (s: string) => (tarErr += s));
    const tarDone = new Promise<number | null>((resolve) => tar.on('close', resolve));
    const imported = await this.call(['import', '-', image], tar.stdout);
    const tarCode = await tarDone;
    if (tarCode !== 0) throw new Error(`tar of ${rootfs} exited ${tarCode}: ${tarErr}`);
    if (imported.code !== 0) throw new Error(describeExit(imported));
  }
}
