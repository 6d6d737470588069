// binding.gyp (install build) and CMakeLists.txt (sanitizer build) must compile the same sources for each thing they
// build (the addon, and podnet-cni, the plugin executable), and every source under native/ must be in one of them,
// but for native/fuzz: libFuzzer targets that scripts/fuzz.mjs builds without N-API.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

/** Each binding.gyp target's sources, by target name. */
function gypSources(): Map<string, string[]> {
  const gyp = JSON.parse(readFileSync(join(root, 'binding.gyp'), 'utf8')) as { targets: { target_name: string; sources: string[] }[] };
  return new Map(gyp.targets.map((t) => [t.target_name, t.sources.slice().sort()]));
}

/** Each CMakeLists.txt source list (PODNET_SOURCES, PODNET_CNI_SOURCES), by name. */
function cmakeSources(): Map<string, string[]> {
  const text = readFileSync(join(root, 'CMakeLists.txt'), 'utf8');
  const lists = new Map<string, string[]>();
  for (const m of text.matchAll(/set\((PODNET_\w*SOURCES)([\s\S]*?)\)/g)) lists.set(m[1]!, m[2]!.split(/\s+/).filter(Boolean).sort());
  return lists;
}

function sourcesOnDisk(dir = join(root, 'native')): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (relative(root, path) !== join('native', 'fuzz')) found.push(...sourcesOnDisk(path));
    } else if (entry.name.endsWith('.cc')) found.push(relative(root, path));
  }
  return found.sort();
}

describe('native build definitions', () => {
  it('binding.gyp and CMakeLists.txt list the same sources for the addon and for podnet-cni', () => {
    const gyp = gypSources();
    const cmake = cmakeSources();
    expect([...gyp.keys()].sort()).toEqual(['podnet', 'podnet-cni']);
    expect(cmake.get('PODNET_SOURCES')).toEqual(gyp.get('podnet'));
    expect(cmake.get('PODNET_CNI_SOURCES')).toEqual(gyp.get('podnet-cni'));
  });

  it('every .cc under native/ is built, by exactly one of them', () => {
    const built = [...gypSources().values()].flat().sort();
    expect(built).toEqual(sourcesOnDisk());
  });
});
