// binding.gyp (install build) and CMakeLists.txt (sanitizer build) must compile
// the same sources, and every source under native/ must be in both, but for
// native/fuzz: libFuzzer targets that scripts/fuzz.mjs builds without N-API.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

function gypSources(): string[] {
  const gyp = JSON.parse(readFileSync(join(root, 'binding.gyp'), 'utf8')) as { targets: { sources: string[] }[] };
  return gyp.targets[0]!.sources.slice().sort();
}

function cmakeSources(): string[] {
  const text = readFileSync(join(root, 'CMakeLists.txt'), 'utf8');
  const block = /set\(PODNET_SOURCES([\s\S]*?)\)/.exec(text);
  expect(block, 'CMakeLists.txt has a PODNET_SOURCES list').not.toBeNull();
  return block![1]!.split(/\s+/).filter(Boolean).sort();
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
  it('binding.gyp and CMakeLists.txt list the same sources', () => {
    expect(cmakeSources()).toEqual(gypSources());
  });

  it('every .cc under native/ is built', () => {
    expect(gypSources()).toEqual(sourcesOnDisk());
  });
});
