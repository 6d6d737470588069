// lib/ has no import circle, type-only imports included: each layer reads as built on the ones below it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

import { expect, it } from 'vitest';

const LIB = fileURLToPath(new URL('../../lib', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(LIB)) {
    const text = readFileSync(file, 'utf8');
    const deps = [...text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+'(\.{1,2}\/[^']+)'/gms)].map((m) =>
      normalize(join(dirname(file), m[1]!.replace(/\.js$/, '.ts'))),
    );
    graph.set(normalize(file), deps);
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (node: string): void => {
    const at = path.indexOf(node);
    if (at >= 0) {
      found.push([...path.slice(at), node].map((f) => f.slice(LIB.length + 1)).join(' -> '));
      return;
    }
    if (done.has(node)) return;
    path.push(node);
    for (const dep of graph.get(node) ?? []) visit(dep);
    path.pop();
    done.add(node);
  };
  for (const node of graph.keys()) visit(node);
  return found;
}

it('finds the imports it checks (the graph is not empty)', () => {
  const graph = importGraph();
  expect(graph.size).toBeGreaterThan(50);
  expect(graph.get(normalize(join(LIB, 'iptables/rule-set.ts')))).toContain(normalize(join(LIB, 'iptables/render.ts')));
});

it('has no import circle in lib/', () => {
  expect(cycles(importGraph())).toEqual([]);
});
