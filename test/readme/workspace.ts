// A scratch project in which README blocks are the programs a user would write: its node_modules/podnet is this
// package, so `import 'podnet'` resolves through package.json's exports to the built dist/ as it does after
// `npm install podnet`. Blocks are type-checked as strict TypeScript against dist's declarations (so every API name
// in them is checked), compiled to JavaScript for Node 20 (which has no `using`) and run with node.
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

import type { ReadmeBlock } from './blocks.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The options of a user's strict ESM project on Node 20, as podnet's own tsconfig has them. */
const CHECK: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts', 'lib.esnext.disposable.d.ts'],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  strict: true,
  noUncheckedIndexedAccess: true,
  noEmit: true,
  skipLibCheck: true,
  types: ['node'],
  typeRoots: [join(ROOT, 'node_modules', '@types')],
};

/** BlockWorkspace is the scratch project; close() removes it. */
export class BlockWorkspace {
  readonly dir: string;
  readonly #files = new Map<ReadmeBlock, string>();

  private constructor(dir: string) {
    this.dir = dir;
  }

  /** create makes the project in a fresh temp folder and writes every block into it as block-<n>.ts. */
  static create(blocks: readonly ReadmeBlock[]): BlockWorkspace {
    for (const built of ['dist/index.js', 'dist/testing/index.js']) {
      if (!existsSync(join(ROOT, built))) throw new Error(`README blocks run on the built package, and ${built} is missing: npm run build:ts`);
    }
    const ws = new BlockWorkspace(mkdtempSync(join(tmpdir(), 'podnet-readme-')));
    try {
      writeFileSync(join(ws.dir, 'package.json'), JSON.stringify({ name: 'readme-blocks', private: true, type: 'module' }));
      mkdirSync(join(ws.dir, 'node_modules'));
      symlinkSync(ROOT, join(ws.dir, 'node_modules', 'podnet'), 'dir');
      blocks.forEach((block, i) => {
        const file = join(ws.dir, `block-${i + 1}.ts`);
        writeFileSync(file, `${block.code}\n`);
        ws.#files.set(block, file);
      });
    } catch (err) {
      ws.close();
      throw err;
    }
    return ws;
  }

  /** typecheck returns the compiler's errors per block name (blocks without errors are left out). */
  typecheck(): Record<string, string[]> {
    const byFile = new Map([...this.#files].map(([block, file]) => [file, block]));
    const program = ts.createProgram([...byFile.keys()], CHECK);
    const out: Record<string, string[]> = {};
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const block = d.file ? byFile.get(d.file.fileName) : undefined;
      const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : undefined;
      const name = block ? block.name : (d.file?.fileName ?? 'program');
      const line = block && where !== undefined ? ` (README line ${block.line + 1 + where})` : '';
      (out[name] ??= []).push(`${ts.flattenDiagnosticMessageText(d.messageText, '\n')}${line}`);
    }
    return out;
  }

  /** compile writes the block (or code standing for it) as JavaScript next to its source and returns that file's path. */
  compile(block: ReadmeBlock, code = block.code): string {
    const source = this.#files.get(block);
    if (!source) throw new Error(`block ${block.name} is not in this workspace`);
    const js = ts.transpileModule(code, {
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
      fileName: source,
    }).outputText;
    const file = source.replace(/\.ts$/, '.js');
    writeFileSync(file, js);
    return file;
  }

  close(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
