/**
 * Backend choice (legacy or nf_tables), per IP family, in the order the reference gives: a forced choice; kubelet's
 * hint chains in the mangle table of nft, then of legacy; whichever backend already holds rules (rules, not empty
 * chain declarations); else nft. Mixing backends would split the rules invisibly.
 */
import { isNotFound } from '../errors.js';
import type { IptablesRunner } from './runner.js';
import { type IptablesState, countRules, parseSave } from './save-parser.js';

/** IptablesBackend is the kernel interface iptables uses. */
export type IptablesBackend = 'nft' | 'legacy';
/** IptablesFamily is 4 (iptables) or 6 (ip6tables). */
export type IptablesFamily = 4 | 6;

/** HINT_CHAINS are the chains kubelet creates in mangle to tell the node's backend. */
export const HINT_CHAINS = ['KUBE-IPTABLES-HINT', 'KUBE-KUBELET-CANARY'] as const;

/** iptablesBinary names the program for a backend, family and tool, e.g. `ip6tables-legacy-save`. */
export function iptablesBinary(backend: IptablesBackend, family: IptablesFamily, tool: 'restore' | 'save'): string {
  return `${family === 6 ? 'ip6' : 'ip'}tables-${backend}-${tool}`;
}

async function stateOf(runner: IptablesRunner, backend: IptablesBackend, family: IptablesFamily): Promise<IptablesState | undefined> {
  try {
    const result = await runner.run([iptablesBinary(backend, family, 'save')]);
    if (result.exitCode !== 0) return undefined;
    return parseSave(result.stdout);
  } catch (err) {
    // A backend whose tools are not installed holds no rules; any other failure (a missing namespace, ...) is real.
    if (isNotFound(err) && (err as { syscall?: unknown }).syscall === 'execve') return undefined;
    throw err;
  }
}

function hasHint(state: IptablesState | undefined): boolean {
  const mangle = state?.tables.mangle;
  return mangle !== undefined && HINT_CHAINS.some((c) => mangle.chains[c] !== undefined);
}

/**
 * detectBackend picks the backend for family as described above; it reads but never changes anything. A backend whose
 * tools are not installed counts as empty; any other failure of the runner (a missing namespace: PodnetSystemError
 * `ENOENT`, a deadline: ProcessTimeoutError) rejects.
 */
export async function detectBackend(runner: IptablesRunner, family: IptablesFamily): Promise<IptablesBackend> {
  const nft = await stateOf(runner, 'nft', family);
  if (hasHint(nft)) return 'nft';
  const legacy = await stateOf(runner, 'legacy', family);
  if (hasHint(legacy)) return 'legacy';
  const nftRules = nft ? countRules(nft) : 0;
  const legacyRules = legacy ? countRules(legacy) : 0;
  if (legacyRules > nftRules) return 'legacy';
  return 'nft';
}
