// Running programs hold no libuv pool thread: more long runs than the pool has threads leave fs, ipset and
// another run's deadline unaffected. Every assertion is about order (what settled first), never about time.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { Ipset, ProcessTimeoutError, runInNetns, startInNetns, type StartedProgram } from '../lib/index.js';
import { withNetns } from './helpers/netns.js';
import { describePrivileged } from './helpers/privileged.js';
import { rejection } from './helpers/rejection.js';

// More than libuv's default pool (4 threads): with a thread per running program, none would be left.
const LONG_RUNS = 6;
// Far beyond anything the test waits for: a run that ends by this deadline shows the starvation.
const LONG_DEADLINE_MS = 20_000;

const dir = mkdtempSync(join(tmpdir(), 'podnet-spawn-pool-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Tracked {
  program: StartedProgram;
  settled: boolean;
}

/** startCats starts programs that run until their stdin ends, each noting when its result settles. */
function startCats(netns?: string): Tracked[] {
  const out: Tracked[] = [];
  for (let i = 0; i < LONG_RUNS; i++) {
    const tracked: Tracked = { program: startInNetns(netns, ['cat'], { timeoutMs: LONG_DEADLINE_MS }), settled: false };
    tracked.program.result.then(
      () => (tracked.settled = true),
      () => (tracked.settled = true),
    );
    out.push(tracked);
  }
  return out;
}

async function endAll(cats: Tracked[], input = ''): Promise<string[]> {
  for (const cat of cats) cat.program.end(input);
  const results = await Promise.all(cats.map((c) => c.program.result));
  return results.map((r) => r.stdout);
}

describe('runInNetns holds no pool thread while a program runs', () => {
  it('lets fs.readFile complete while more programs run than the pool has threads', async () => {
    const file = join(dir, 'input');
    writeFileSync(file, 'from a file\n');
    const cats = startCats();
    try {
      const text = await readFile(file, 'utf8');
      expect(text).toBe('from a file\n');
      expect(cats.filter((c) => c.settled)).toEqual([]);
    } finally {
      const outputs = await endAll(cats);
      expect(outputs).toEqual(Array(LONG_RUNS).fill(''));
    }
  });

  it('feeds started programs input that needs a readFile first, without a deadlock', async () => {
    const file = join(dir, 'rules');
    writeFileSync(file, 'rule one\nrule two\n');
    const cats = startCats();
    const input = await readFile(file, 'utf8');
    expect(cats.filter((c) => c.settled)).toEqual([]);
    expect(await endAll(cats, input)).toEqual(Array(LONG_RUNS).fill(input));
  });

  it('counts a deadline from the call: a short run times out while long runs still go on', async () => {
    const cats = startCats();
    try {
      const err = await rejection(runInNetns(undefined, ['sleep', '30'], { timeoutMs: 500 }));
      expect(err).toBeInstanceOf(ProcessTimeoutError);
      expect(cats.filter((c) => c.settled)).toEqual([]);
    } finally {
      await endAll(cats);
    }
  });

  it('settles many short runs started together while long runs go on', async () => {
    const cats = startCats();
    try {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) => runInNetns(undefined, ['echo', `run ${i}`])));
      expect(results.map((r) => r.stdout)).toEqual(Array.from({ length: 12 }, (_, i) => `run ${i}\n`));
      expect(cats.filter((c) => c.settled)).toEqual([]);
    } finally {
      await endAll(cats);
    }
  });
});

describePrivileged('runInNetns in a namespace holds no pool thread (root)', () => {
  it('lets Ipset.open complete while more programs run in the namespace than the pool has threads', async () => {
    await withNetns(async (tns) => {
      const cats = startCats(tns.path);
      try {
        const ipset = await Ipset.open({ netns: tns.path });
        ipset.close();
        expect(cats.filter((c) => c.settled)).toEqual([]);
      } finally {
        await endAll(cats);
      }
    });
  });
});
