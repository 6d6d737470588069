// The files at the root of lib/ (errors, diagnostics, logger, validate, native, netns, spawn) are the bottom layer:
// every layer imports them, so none of them imports a layer built on top (design.md: an arrow only ever points down).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { expect, it } from 'vitest';

const LIB = fileURLToPath(new URL('../../lib', import.meta.url));
const UPPER = ['agent', 'cni', 'proxy', 'preflight', 'cli', 'testing'];

function rootFiles(): string[] {
  return readdirSync(LIB).filter((name) => name.endsWith('.ts') && name !== 'index.ts');
}

function importsOf(file: string): string[] {
  const text = readFileSync(join(LIB, file), 'utf8');
  return [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.\/[^']+)'/gms)].map((m) => m[1]!);
}

it('reads the root files it checks', () => {
  expect(rootFiles()).toEqual(expect.arrayContaining(['diagnostics.ts', 'errors.ts', 'validate.ts']));
  expect(importsOf('diagnostics.ts').length + importsOf('netns.ts').length).toBeGreaterThan(0);
});

it('has no file at the root of lib/ that imports a layer above it', () => {
  const upward = rootFiles().flatMap((file) =>
    importsOf(file)
      .filter((spec) => UPPER.includes(spec.slice(2).split('/')[0]!))
      .map((spec) => `${file} -> ${spec}`),
  );
  expect(upward).toEqual([]);
});
