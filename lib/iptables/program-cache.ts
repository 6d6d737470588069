/**
 * What holds for an iptables program in every namespace: its version and how its save program prints a rule. Real
 * runners (NetnsRunner) share these per backend and family for the life of the process, so opening a client per pod
 * costs no version probe and no re-learning of canonical forms; each other runner (a FakeIptables) keeps its own.
 */
import { NetnsRunner, type IptablesRunner } from './runner.js';

type CanonicalCache = Map<string, readonly string[]>;

const realVersions = new Map<string, Promise<string>>();
const realCanonical = new Map<string, CanonicalCache>();
const otherCanonical = new WeakMap<IptablesRunner, Map<string, CanonicalCache>>();

/** sharedVersion returns the cached version probe of a real runner's program, or runs probe (uncached) for others. */
export function sharedVersion(runner: IptablesRunner, key: string, probe: () => Promise<string>): Promise<string> {
  if (!(runner instanceof NetnsRunner)) return probe();
  let version = realVersions.get(key);
  if (!version) {
    version = probe();
    realVersions.set(key, version);
    // A failed probe (a missing namespace, say) must not poison later opens.
    version.catch(() => realVersions.delete(key));
  }
  return version;
}

/** canonicalCacheFor returns the canonical-form cache for a program (backend, family, version) behind runner. */
export function canonicalCacheFor(runner: IptablesRunner, program: string): CanonicalCache {
  if (runner instanceof NetnsRunner) {
    let cache = realCanonical.get(program);
    if (!cache) realCanonical.set(program, (cache = new Map()));
    return cache;
  }
  let perRunner = otherCanonical.get(runner);
  if (!perRunner) otherCanonical.set(runner, (perRunner = new Map()));
  let cache = perRunner.get(program);
  if (!cache) perRunner.set(program, (cache = new Map()));
  return cache;
}
