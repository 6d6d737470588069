// What the spawn tests ask of processes: whether one still runs, and waiting (bounded) for a condition to hold.
import { readFileSync } from 'node:fs';

/** alive tells whether pid runs (a zombie or a dead process does not). */
export function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** until polls check every 20 ms for up to ms and resolves whether it held. */
export async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}
