// The example of docs/diagnostics.md is a program a user would write: it type-checks against the built package and
// prints exactly what its `// → ` comments show (the README blocks' own machinery, pointed at this page).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { readmeBlocks } from '../readme/blocks.js';
import { runNode } from '../readme/run-node.js';
import { BlockWorkspace } from '../readme/workspace.js';

const blocks = readmeBlocks(readFileSync(new URL('../../docs/diagnostics.md', import.meta.url), 'utf8'));

describe('docs/diagnostics.md', () => {
  let ws: BlockWorkspace;
  beforeAll(() => {
    ws = BlockWorkspace.create(blocks);
  });
  afterAll(() => ws?.close());

  it('has one runnable example, which needs no root and shows what it prints', () => {
    expect(blocks.map((b) => ({ root: b.root, prints: b.prints.length > 0 }))).toEqual([{ root: false, prints: true }]);
  });

  it('type-checks the example as strict TypeScript against the built package', () => {
    expect(ws.typecheck()).toEqual({});
  });

  it('runs the example, printing the histogram the page shows', async () => {
    const block = blocks[0]!;
    const run = await runNode(ws.compile(block));
    expect({ exitCode: run.exitCode, signal: run.signal, stderr: run.stderr }).toEqual({ exitCode: 0, signal: null, stderr: '' });
    expect(run.stdout).toBe(block.prints.map((l) => `${l}\n`).join(''));
  });
});
