// Every ```ts / ```js block of README.md is a program that type-checks against the built package and runs to its
// end with node, printing exactly the lines its `// → ` comments show. Blocks marked
// `ts root` run as root inside a throwaway namespace, so what they do to "the current namespace" happens there; each
// `/run/netns/<name>` they name is replaced by the path of another throwaway namespace (the pods of the example).
// Namespaces are deleted after each block, also when it fails. Shell blocks are not run.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { TestNetns } from '../helpers/netns.js';
import { describePrivileged, missingBinary } from '../helpers/privileged.js';
import { readmeBlocks, type ReadmeBlock } from './blocks.js';
import { runNode, runNodeIn, type NodeRun } from './run-node.js';
import { BlockWorkspace } from './workspace.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const blocks = readmeBlocks(README);
const NETNS_PATH = /\/run\/netns\/([A-Za-z0-9._-]+)/g;

let ws: BlockWorkspace;
beforeAll(() => {
  ws = BlockWorkspace.create(blocks);
});
afterAll(() => ws?.close());

/** expectRan checks a block's program ended well and printed what the README shows for it. */
function expectRan(block: ReadmeBlock, run: NodeRun): void {
  expect({ exitCode: run.exitCode, signal: run.signal, stderr: run.stderr }).toEqual({ exitCode: 0, signal: null, stderr: '' });
  expect(run.stdout).toBe(block.prints.map((l) => `${l}\n`).join(''));
}

describe('README code blocks', () => {
  it('has runnable blocks, some needing root and some not, each showing what it prints', () => {
    expect(blocks.filter((b) => !b.root).length).toBeGreaterThanOrEqual(3);
    expect(blocks.filter((b) => b.root).length).toBeGreaterThanOrEqual(4);
    expect(blocks.filter((b) => b.prints.length === 0).map((b) => b.name)).toEqual([]);
  });

  it('type-checks every block as strict TypeScript against the built package', () => {
    expect(ws.typecheck()).toEqual({});
  });

  it('never lets a root block reach the machine\'s own namespace (pid 1\'s)', () => {
    expect(blocks.filter((b) => b.root && /\/proc\/1\/|fromPid\(1\)/.test(b.code)).map((b) => b.name)).toEqual([]);
  });

  for (const block of blocks.filter((b) => !b.root)) {
    it(`runs "${block.name}" (README line ${block.line})`, async () => {
      expectRan(block, await runNode(ws.compile(block)));
    });
  }
});

describePrivileged(
  'README code blocks that need root',
  () => {
    for (const block of blocks.filter((b) => b.root)) {
      it(`runs "${block.name}" (README line ${block.line}) in a throwaway namespace`, async () => {
        const made: TestNetns[] = [];
        try {
          const host = new TestNetns('readme');
          made.push(host);
          const pods = new Map<string, TestNetns>();
          const code = block.code.replace(NETNS_PATH, (_, name: string) => {
            if (!pods.has(name)) {
              const ns = new TestNetns('readme-pod');
              made.push(ns);
              pods.set(name, ns);
            }
            return pods.get(name)!.path;
          });
          const file = ws.compile(block, code);
          expectRan(block, await runNodeIn(host.path, file));
        } finally {
          for (const ns of made) ns.delete();
        }
      });
    }
  },
  missingBinary('iptables-nft-restore', 'iptables-nft-save'),
);
