#!/usr/bin/env node
// Reads vitest JSON reports and prints one line per report plus the closing
// "N passed, N failed" line CI reads. Skipped tests count as failures when
// PODNET_REQUIRE_PRIVILEGED=1: nothing may be silently skipped in CI.
import { existsSync, readFileSync } from 'node:fs';

let passed = 0;
let failed = 0;
let skipped = 0;
const strict = process.env.PODNET_REQUIRE_PRIVILEGED === '1';

for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.log(`ci-summary: ${file}: no report (the run did not finish)`);
    failed += 1;
    continue;
  }
  const report = JSON.parse(readFileSync(file, 'utf8'));
  const p = report.numPassedTests ?? 0;
  const f = (report.numFailedTests ?? 0) + (report.numFailedTestSuites ?? 0);
  const s = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  console.log(`ci-summary: ${file}: ${p} passed, ${f} failed, ${s} skipped`);
  passed += p;
  failed += f;
  skipped += s;
}

if (strict && skipped > 0) {
  console.log(`ci-summary: ${skipped} skipped test(s) with PODNET_REQUIRE_PRIVILEGED=1 count as failed`);
  failed += skipped;
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
