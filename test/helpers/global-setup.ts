// Gives the run an id that every test namespace name carries, and deletes any
// namespace of this run that a crashed test file could not delete itself.
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

export function setup(): () => void {
  const runId = process.env.PODNET_TEST_RUN ?? `${process.pid.toString(36)}${Date.now().toString(36).slice(-4)}`;
  process.env.PODNET_TEST_RUN = runId;
  return () => {
    let names: string[] = [];
    try {
      names = readdirSync('/run/netns');
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.startsWith(`podnet-t-${runId}-`)) continue;
      try {
        execFileSync('ip', ['netns', 'delete', name], { stdio: 'ignore' });
      } catch {
        // Reported by the before-stop check; nothing else to do here.
      }
    }
  };
}
