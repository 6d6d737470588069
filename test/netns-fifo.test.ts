// A namespace path that is a FIFO: refused as not a network namespace, without open() waiting for a writer.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { Netns, runInNetns } from '../lib/index.js';
import { rejection, thrown } from './helpers/rejection.js';

const dir = mkdtempSync(join(tmpdir(), 'podnet-netns-fifo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function makeFifo(name: string): string {
  const path = join(dir, name);
  const made = spawnSync('mkfifo', [path]);
  if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr.toString()}`);
  return path;
}

const addonPath = process.env.PODNET_ADDON_PATH ?? resolve('build/Release/podnet.node');

// In a separate process, so that an open() that blocks fails this test instead of hanging the test file: it counts
// the ticks of a timer around a synchronous open of the FIFO and prints what the open threw.
const PROBE = `
const addon = require(process.argv[1]);
let ticks = 0;
const timer = setInterval(() => ticks++, 5);
let outcome;
try { addon.netnsOpen(process.argv[2]); outcome = 'opened'; } catch (err) { outcome = String(err && (err.code || err.message)); }
setTimeout(() => { clearInterval(timer); console.log(JSON.stringify({ outcome, ticks })); }, 200);
`;

describe('a namespace path that is a FIFO', () => {
  it('is refused by Netns.open with ERR_NOT_NETNS', () => {
    const fifo = makeFifo('open');
    expect(thrown(() => Netns.open(fifo))).toMatchObject({ code: 'ERR_NOT_NETNS', path: fifo });
  });

  it('is refused by runInNetns before any program starts', async () => {
    const fifo = makeFifo('run');
    expect(await rejection(runInNetns(fifo, ['true']))).toMatchObject({ code: 'ERR_NOT_NETNS', path: fifo });
  });

  it('never blocks the event loop in open(): a timer keeps ticking in the process that opens it', () => {
    const fifo = makeFifo('probe');
    // The bound is lateness only: the probe needs a fraction of a second unless open() waits for a writer forever.
    const probe = spawnSync(process.execPath, ['-e', PROBE, addonPath, fifo], { timeout: 30_000, encoding: 'utf8' });
    expect(probe.signal).toBeNull();
    const report = JSON.parse(probe.stdout) as { outcome: string; ticks: number };
    expect(report.outcome).not.toBe('opened');
    expect(report.ticks).toBeGreaterThan(0);
  });
});
