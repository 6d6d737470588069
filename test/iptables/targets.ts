// The targets the contract suite runs on: the fake (modelling each backend) and the real programs of each backend,
// each real run in its own fresh namespace that is always deleted.
import { Iptables } from '../../lib/index.js';
import { FakeIptables } from '../../lib/testing/index.js';
import { withNetns } from '../helpers/netns.js';

export type TargetKind = 'fake-nft' | 'fake-legacy' | 'nft' | 'legacy';
export const TARGETS: TargetKind[] = ['fake-nft', 'fake-legacy', 'nft', 'legacy'];

/** backendOf tells which backend's behaviour a target shows. */
export function backendOf(kind: TargetKind): 'nft' | 'legacy' {
  return kind.endsWith('legacy') ? 'legacy' : 'nft';
}

export interface Target {
  ipt: Iptables;
  /** Counts the program runs so far (fake: recorded calls; real: undefined). */
  runs(): number | undefined;
}

export async function withTarget<T>(kind: TargetKind, fn: (target: Target) => Promise<T>): Promise<T> {
  const backend = backendOf(kind);
  if (kind.startsWith('fake')) {
    const fake = new FakeIptables();
    const ipt = await Iptables.open({ runner: fake, backend });
    return fn({ ipt, runs: () => fake.calls.length });
  }
  return withNetns(async (tns) => {
    const ipt = await Iptables.open({ netns: tns.path, backend, timeoutMs: 20_000 });
    return fn({ ipt, runs: () => undefined });
  });
}
