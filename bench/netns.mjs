// Throwaway namespaces for benchmarks: unique names (podnet-b-<pid>-<tag><n>), loopback up, always deleted, also
// when a scenario throws or the process gets SIGINT/SIGTERM. Never touches the machine's own namespace.
import { execFileSync } from 'node:child_process';

const live = new Set();
let counter = 0;
let handlersInstalled = false;

function installHandlers() {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', deleteAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      deleteAll();
      process.exit(128 + ({ SIGINT: 2, SIGTERM: 15, SIGHUP: 1 })[sig]);
    });
  }
}

/** createNetns makes `ip netns add podnet-b-...` with lo up; returns { name, path, delete() }. */
export function createNetns(tag = 'ns') {
  installHandlers();
  const name = `podnet-b-${process.pid}-${tag}${++counter}`;
  execFileSync('ip', ['netns', 'add', name], { stdio: 'pipe' });
  const ns = {
    name,
    path: `/run/netns/${name}`,
    delete() {
      if (!live.has(ns)) return;
      live.delete(ns);
      try {
        execFileSync('ip', ['netns', 'delete', name], { stdio: 'ignore' });
      } catch {
        /* already gone */
      }
    },
  };
  live.add(ns);
  try {
    execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up'], { stdio: 'pipe' });
  } catch (err) {
    ns.delete();
    throw err;
  }
  return ns;
}

/** withNetns runs fn with count fresh namespaces and deletes them afterwards, whatever happens. */
export async function withNetns(fn, count = 1, tag = 'ns') {
  const made = [];
  try {
    for (let i = 0; i < count; i++) made.push(createNetns(tag));
    return await fn(...made);
  } finally {
    for (const ns of made) ns.delete();
  }
}

export function deleteAll() {
  for (const ns of [...live]) ns.delete();
}
