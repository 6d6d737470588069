/**
 * Reads why iptables-restore failed from its stderr. Every form iptables 1.8.9 prints for the legacy and the
 * nf_tables backend is recognised (see the table-driven test); the program name is never relied on, because legacy
 * calls itself "iptables-restore" even when run as iptables-legacy-restore. Warning lines ("# Warning: ...") and
 * the "Try `... -h'" hint are skipped.
 */
import type { IptablesFailureReason } from '../errors.js';

/** ParsedRestoreStderr is what stderr said: the blamed line (1-based), a reason, and the message to show. */
export interface ParsedRestoreStderr {
  /** The 1-based input line the message blames, when it names one. */
  line: number | undefined;
  /** The failure, classified. */
  reason: IptablesFailureReason;
  /** The line of stderr that says what failed. */
  message: string;
  /** The chain named by the message (nft kernel errors, missing jump targets). */
  chain?: string;
  /** The nft batch operation that failed (RULE_APPEND, CHAIN_DEL, ...). */
  operation?: string;
}

const HEADER = /^\S+ v[\d.]+ \((?:legacy|nf_tables)\):\s?(.*)$/;
const ERROR_AT = /^Error occurred at line: (\d+)$/;
const NFT_BATCH = /^line (\d+): (\w+) failed \(([^)]*)\)(?::\s*(?:rule in )?(?:chain )?(\S+))?/;
const LINE_FAILED = /^\S+: line (\d+) failed(?::\s*(.*))?$/;
const COMMIT_EXPECTED = /COMMIT expected at line (\d+)/;
const LOCK = /Another app is currently holding the xtables lock/;

function reasonOfDetail(detail: string | undefined): IptablesFailureReason {
  if (detail === undefined || detail === '') return 'failed';
  if (/No chain\/target\/match by that name/.test(detail)) return 'missing-chain';
  if (/does a matching rule exist/.test(detail)) return 'missing-rule';
  if (/already exists/i.test(detail)) return 'chain-exists';
  return 'failed';
}

function reasonOfBatch(operation: string, errnoText: string): IptablesFailureReason {
  if (/busy/i.test(errnoText)) return 'chain-busy';
  if (/No such file or directory/i.test(errnoText)) return operation.startsWith('RULE_DEL') ? 'missing-rule' : 'missing-chain';
  if (/exists/i.test(errnoText)) return 'chain-exists';
  return 'kernel-rejected';
}

/** parseRestoreStderr classifies an iptables-restore failure from its stderr alone; it never throws. */
export function parseRestoreStderr(stderr: string): ParsedRestoreStderr {
  const lines = stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('Try `'));

  let line: number | undefined;
  for (const l of lines) {
    const at = ERROR_AT.exec(l);
    if (at) line = Number(at[1]);
  }

  for (const l of lines) {
    if (LOCK.test(l)) return { line: undefined, reason: 'lock-timeout', message: l };

    const batch = NFT_BATCH.exec(l);
    if (batch) {
      const out: ParsedRestoreStderr = {
        line: Number(batch[1]),
        reason: reasonOfBatch(batch[2]!, batch[3]!),
        message: l,
        operation: batch[2]!,
      };
      if (batch[4] !== undefined) out.chain = batch[4];
      return out;
    }

    const failed = LINE_FAILED.exec(l);
    if (failed) return { line: Number(failed[1]), reason: reasonOfDetail(failed[2]), message: l };

    const commit = COMMIT_EXPECTED.exec(l);
    if (commit) return { line: Number(commit[1]), reason: 'commit-expected', message: l };

    const header = HEADER.exec(l);
    if (header && header[1] !== '') {
      const text = header[1]!;
      const legacyTarget = /Couldn't load target `([^']+)'/.exec(text);
      if (legacyTarget) return { line, reason: 'missing-target', message: text, chain: legacyTarget[1]! };
      const nftChain = /Chain '([^']+)' does not exist/.exec(text);
      if (nftChain) return { line, reason: 'missing-target', message: text, chain: nftChain[1]! };
      if (/unknown option|unknown arguments|invalid|Bad argument|requires|Parameter/i.test(text)) {
        return { line, reason: 'bad-argument', message: text };
      }
      return { line, reason: 'unknown', message: text };
    }
  }
  const first = lines.find((l) => !ERROR_AT.test(l) && !/^\S+ v[\d.]+ \([^)]*\):$/.test(l));
  return { line, reason: 'unknown', message: first ?? 'iptables-restore failed without a message' };
}
