/**
 * Canonical rule text. iptables-save prints a rule in its own canonical form (`-s 10.0.0.1` comes back as
 * `-s 10.0.0.1/32`, `-p tcp --dport 22` as `-p tcp -m tcp --dport 22`), and podnet recognises rules already in place
 * by comparing with that text. Rather than guessing iptables' rewriting rules, the client asks the kernel once per
 * new rule text: the rules go into a scratch chain that nothing jumps to (so no packet ever sees them), are read back
 * with iptables-save, and the scratch chain is deleted. The answers are cached per program (see program-cache.ts): every
 * namespace's iptables prints a rule the same way, so one pod's client need not learn what another's already did.
 */
import { randomBytes } from 'node:crypto';

import { IptablesLockTimeoutError, IptablesRestoreError } from '../errors.js';
import { renderArgs } from './quote.js';
import { jumpTarget, sameArgs, type RestoreScript } from './render.js';
import { RuleSet, type IptablesTable, type RuleSpec } from './rule-set.js';
import type { IptablesState } from './save-parser.js';

/** CanonicalScope is which rules canonicalize rewrites: all of them, or those of chains the set does not own. */
export type CanonicalScope = 'all' | 'foreign';

/** The prefix of scratch chains; a leftover one (after a crash) is unreferenced and harmless. */
export const SCRATCH_PREFIX = 'PODNET_CANON_';

// Arguments never hold control characters (checkRuleArgs), so NUL separates them unambiguously; cheaper than
// JSON.stringify for the thousands of rules of one apply.
const keyOf = (table: string, args: readonly string[]): string => `${table}\0${args.join('\0')}`;

function scriptOf(blocks: [string, string[]][]): RestoreScript {
  const lines: string[] = [];
  const out: RestoreScript['blocks'][number][] = [];
  for (const [table, body] of blocks) {
    const first = lines.length + 1;
    lines.push(`*${table}`, ...body, 'COMMIT');
    out.push({ table, first, last: lines.length });
  }
  return { text: lines.length ? `${lines.join('\n')}\n` : '', lines, blocks: out };
}

/** Canonicalizer learns and caches the canonical form of rule arguments, per table. */
export class Canonicalizer {
  readonly #cache: Map<string, readonly string[]>;
  readonly #restore: (script: RestoreScript) => Promise<void>;
  readonly #save: () => Promise<IptablesState>;

  constructor(
    restore: (script: RestoreScript) => Promise<void>,
    save: () => Promise<IptablesState>,
    cache: Map<string, readonly string[]> = new Map(),
  ) {
    this.#restore = restore;
    this.#save = save;
    this.#cache = cache;
  }

  /**
   * canonicalize returns the rule set with its rules in canonical form, learning the forms it has not seen. A rule
   * the kernel refuses keeps its text: apply then reports the refusal with its line. With scope 'foreign' only the
   * rules of chains the set does not own are canonicalized: the only ones apply and remove compare with the
   * namespace's state (an owned chain is rewritten whole), and the set comes back unchanged when they already are.
   */
  async canonicalize(rules: RuleSet, scope: CanonicalScope = 'all'): Promise<RuleSet> {
    const specs = this.#inScope(rules, scope);
    // One key per rule, used for both the lookup and the rebuild (a key costs more than the lookup).
    const keys = specs.map((r) => keyOf(r.table, r.args));
    const pending = specs.filter((_, i) => !this.#cache.has(keys[i]!));
    if (pending.length > 0) await this.#learn(rules, pending);
    return this.#fromCache(rules, specs, keys);
  }

  /** cached is canonicalize without learning: undefined when a rule in scope has no known canonical form yet. */
  cached(rules: RuleSet, scope: CanonicalScope = 'all'): RuleSet | undefined {
    const specs = this.#inScope(rules, scope);
    const keys = specs.map((r) => keyOf(r.table, r.args));
    return keys.every((k) => this.#cache.has(k)) ? this.#fromCache(rules, specs, keys) : undefined;
  }

  #inScope(rules: RuleSet, scope: CanonicalScope): readonly RuleSpec[] {
    const specs = rules.rules();
    return scope === 'all' ? specs : specs.filter((r) => !rules.isOwned(r.table, r.chain));
  }

  #fromCache(rules: RuleSet, specs: readonly RuleSpec[], keys: readonly string[]): RuleSet {
    const canonical = new Map<RuleSpec, readonly string[]>();
    let changed = false;
    specs.forEach((r, i) => {
      const args = this.#cache.get(keys[i]!);
      if (!args) return;
      canonical.set(r, args);
      if (!sameArgs(args, r.args)) changed = true;
    });
    return changed ? this.#rebuild(rules, canonical) : rules;
  }

  async #learn(rules: RuleSet, pending: readonly RuleSpec[]): Promise<void> {
    const suffix = randomBytes(4).toString('hex').toUpperCase();
    const scratch = `${SCRATCH_PREFIX}${suffix}`;
    // Jumps into chains the set owns (which may not exist yet) point at a second empty scratch chain instead.
    const stand = `${SCRATCH_PREFIX}J${suffix}`;
    const byTable = new Map<IptablesTable, { spec: RuleSpec; target: string | undefined }[]>();
    const seen = new Set<string>();
    for (const spec of pending) {
      const key = keyOf(spec.table, spec.args);
      if (seen.has(key)) continue;
      seen.add(key);
      const target = jumpTarget(spec.args);
      const owned = target !== undefined && rules.isOwned(spec.table, target) ? target : undefined;
      const list = byTable.get(spec.table) ?? [];
      list.push({ spec, target: owned });
      byTable.set(spec.table, list);
    }
    const swap = (args: readonly string[], from: string, to: string): string[] => args.map((a) => (a === from ? to : a));

    const create: [string, string[]][] = [];
    for (const [table, list] of byTable) {
      const body = [`:${scratch} - [0:0]`, `:${stand} - [0:0]`];
      for (const { spec, target } of list) {
        body.push(`-A ${scratch} ${renderArgs(target === undefined ? spec.args : swap(spec.args, target, stand))}`);
      }
      create.push([table, body]);
    }
    try {
      await this.#restore(scriptOf(create));
    } catch (err) {
      // A table that refused a rule: the tables before it were created and are read and cleaned up below. Anything
      // else (a held lock, a deadline) is the caller's failure too.
      if (!(err instanceof IptablesRestoreError) || err instanceof IptablesLockTimeoutError) throw err;
    }
    const state = await this.#save();
    const cleanup: [string, string[]][] = [];
    for (const [table, list] of byTable) {
      const chains = state.tables[table]?.chains;
      const learned = chains?.[scratch];
      if (!chains || !learned) continue;
      cleanup.push([table, [`:${scratch} - [0:0]`, `-X ${scratch}`, ...(chains[stand] ? [`-X ${stand}`] : [])]]);
      if (learned.rules.length !== list.length) continue;
      list.forEach(({ spec, target }, i) => {
        const canonical = learned.rules[i]!;
        // Frozen: shared by every client of this program and rendered once (renderArgs memoizes frozen lists).
        this.#cache.set(keyOf(spec.table, spec.args), Object.freeze(target === undefined ? canonical : swap(canonical, stand, target)));
      });
    }
    if (cleanup.length > 0) await this.#restore(scriptOf(cleanup));
  }

  #rebuild(rules: RuleSet, canonical: ReadonlyMap<RuleSpec, readonly string[]>): RuleSet {
    const out = new RuleSet();
    for (const table of rules.tables) {
      for (const chain of rules.ownedChains(table)) out.chain(table, chain);
      for (const rule of rules.rules(table)) {
        const args = canonical.get(rule) ?? rule.args;
        if (rule.position === undefined) out.append(table, rule.chain, args);
        else out.insert(table, rule.chain, rule.position, args);
      }
    }
    try {
      out.check();
    } catch {
      return rules;
    }
    return out;
  }
}
