/**
 * The predicates callers branch on instead of message text; every client (Ipset, Rtnetlink, Nftables) and every
 * fake answers them alike (test/clients/predicates.test.ts).
 */

function codeOf(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
}

/**
 * isNotFound tells whether err means "the thing does not exist": a missing file, namespace, set, chain, route or
 * rule (`ENOENT`, `ESRCH`), or an ipset entry a delete did not find (`IPSET_ERR_ENTRY_MISSING`). Every client answers
 * it alike for a delete or a lookup of something missing; it never throws.
 */
export function isNotFound(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'ENOENT' || code === 'ESRCH' || code === 'IPSET_ERR_ENTRY_MISSING';
}

/**
 * isAlreadyExists tells whether err means "the thing is already there": an exclusive add of something present
 * (`EEXIST`, or `IPSET_ERR_EXIST` from an ipset add). Every client answers it alike; it never throws.
 */
export function isAlreadyExists(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'EEXIST' || code === 'IPSET_ERR_EXIST';
}

/**
 * isGenerationChanged tells whether err is nf_tables refusing a batch planned at an older ruleset generation (an
 * NftablesGenerationError, or any ERESTART refusal): nothing was applied, and planning again may succeed. It never
 * throws.
 */
export function isGenerationChanged(err: unknown): boolean {
  return codeOf(err) === 'ERESTART';
}
