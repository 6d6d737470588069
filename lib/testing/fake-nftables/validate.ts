/**
 * A table's validation (nft_table_validate): from every base chain, in the table's chain order, its rules are
 * walked with every jump and goto followed, and a NAT statement, or a meta set of the packet type, is judged by the
 * base chain the walk started from, however many jumps away it is. A walk deeper than the kernel's jump stack
 * (NFT_JUMP_STACK_SIZE) is EMLINK, which is also how a loop of jumps is found: the kernel has no other loop check,
 * so a loop no base chain reaches is taken. The kernel validates the tables a batch gave rules at commit, in the
 * netns's order; when one fails it replays the batch validating that table (and any table the batch makes) after
 * every NEWRULE (kernel.ts), which is where the error is then reported.
 */
import { E } from './constants.js';
import type { ChainObj, TableObj } from './model.js';

const NFT_JUMP_STACK_SIZE = 16;

/** The first error a walk from this base chain meets, 0 when there is none. */
function walk(table: TableObj, base: NonNullable<ChainObj['base']>, chain: ChainObj, level: number, passed: Set<string>): number {
  if (level === NFT_JUMP_STACK_SIZE) return E.EMLINK;
  // The kernel walks every path; a chain that passed at a depth passes again there, so each is walked once.
  const key = `${level}/${chain.name}`;
  if (passed.has(key)) return 0;
  for (const rule of chain.rules) {
    for (const check of rule.checks) {
      if (check.kind === 'jump') {
        const target = table.chains.get(check.chain);
        const err = target ? walk(table, base, target, level + 1, passed) : 0;
        if (err !== 0) return err;
      } else if ((check.nat && base.type !== 'nat') || !(check.hooks & (1 << base.hook))) {
        return E.EOPNOTSUPP;
      }
    }
  }
  passed.add(key);
  return 0;
}

/** validateTable returns the errno nft_table_validate would, 0 when the table is good. */
export function validateTable(table: TableObj): number {
  for (const chain of table.chains.values()) {
    if (!chain.base) continue;
    const err = walk(table, chain.base, chain, 0, new Set());
    if (err !== 0) return err;
  }
  return 0;
}
