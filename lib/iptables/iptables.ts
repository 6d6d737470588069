/**
 * Iptables is the client: rule sets applied in one iptables-restore --noflush run inside a netns, verified against
 * iptables-save, reconciled, removed. Operations on one client run one at a time, so a snapshot taken for an apply
 * is not invalidated by the same client's next call.
 */
import {
  IptablesCommandError,
  PodnetError,
  IptablesLockTimeoutError,
  IptablesRestoreError,
  type IptablesRestoreErrorFields,
} from '../errors.js';
import { type Netns } from '../netns.js';
import { checkInteger, checkOptions, checkString, invalidValue } from '../validate.js';
import { type IptablesBackend, type IptablesFamily, detectBackend, iptablesBinary } from './backend.js';
import { Canonicalizer } from './canonical.js';
import { canonicalCacheFor, sharedVersion } from './program-cache.js';
import { type RestoreScript, applyPrefix, planApply, planRemove } from './render.js';
import { KnownChains, committedBefore, createPlanOf, refusedForExisting, stateBeforeCreate } from './fresh.js';
import { planRollback } from './rollback.js';
import { type IptablesTable, RuleSet } from './rule-set.js';
import { type IptablesRunResult, type IptablesRunner, type IptablesStartedRun, NetnsRunner, observedRunner } from './runner.js';
import { type IptablesState, parseSave, withoutPristineTables } from './save-parser.js';
import { parseRestoreStderr } from './stderr-parser.js';
import { type VerifyResult, diffRuleSet } from './verify.js';

/** IptablesOptions are the options of Iptables.open. */
export interface IptablesOptions {
  /** The namespace to work in (a handle, kept open by you, or a path); default: this process's own. */
  netns?: Netns | string;
  /** 4 (iptables, default) or 6 (ip6tables). */
  family?: IptablesFamily;
  /** 'auto' (default) detects the backend as the reference describes; 'nft' or 'legacy' forces it. */
  backend?: 'auto' | IptablesBackend;
  /**
   * Seconds the legacy backend waits for the xtables lock (`--wait`), 0 to 3600; default 5. nft takes no lock. 0
   * means do not wait: a held lock ends the apply at once in IptablesLockTimeoutError. iptables-legacy-restore has
   * no such form (`--wait=0` and no `--wait` both wait forever), so podnet takes the lock itself without waiting
   * and runs the restore under it (with a lock file private to this process; see NetnsRunnerOptions.noWaitLockFile).
   * A runner of your own (`runner`) gets `--wait=1`, the program's shortest bounded wait.
   */
  lockWaitSeconds?: number;
  /** A lock file of your own (XTABLES_LOCKFILE), e.g. one per pod, to avoid host-wide contention (legacy). */
  lockFile?: string;
  /** Deadline of each program run in ms; default lockWaitSeconds * 1000 + 30000. */
  timeoutMs?: number;
  /** Runs the programs; default a NetnsRunner in `netns`. FakeIptables from podnet/testing plugs in here. */
  runner?: IptablesRunner;
}

const DEFAULT_LOCK_WAIT = 5;
/** The lock file iptables-legacy takes when XTABLES_LOCKFILE does not name one (its build default). */
const XTABLES_LOCK_DEFAULT = '/run/xtables.lock';

/** Iptables applies, verifies and removes RuleSets in one namespace, with one backend and one IP family. */
export class Iptables {
  /** backend is the one in use ('nft' or 'legacy'), detected at open when 'auto'. */
  readonly backend: IptablesBackend;
  /** family is 4 or 6. */
  readonly family: IptablesFamily;
  /** version is the iptables version the restore program reports, e.g. "1.8.9". */
  readonly version: string;
  readonly #runner: IptablesRunner;
  readonly #lockWait: number;
  readonly #canonical: Canonicalizer;
  /** The owned chains this client knows to be in its namespace (see KnownChains). */
  readonly #knownChains = new KnownChains();
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(
    runner: IptablesRunner,
    backend: IptablesBackend,
    family: IptablesFamily,
    version: string,
    lockWait: number,
  ) {
    this.#runner = observedRunner(runner);
    this.backend = backend;
    this.family = family;
    this.version = version;
    this.#lockWait = lockWait;
    this.#canonical = new Canonicalizer(
      (script) => this.#restore(script),
      () => this.#state(),
      canonicalCacheFor(runner, `${backend}/${family}/${version}`),
    );
  }

  /**
   * Iptables.open checks the options, picks the backend and asks its restore program for its version. Throws
   * InvalidArgumentError for bad options; rejects when the programs cannot run (a missing namespace or binary:
   * PodnetSystemError `ENOENT`), or with PodnetError `ERR_IPTABLES_VERSION` when the program reports another backend
   * than its name says, or is older than 1.8.6 while `lockFile` is set (XTABLES_LOCKFILE would be ignored).
   */
  static async open(options?: IptablesOptions): Promise<Iptables> {
    const opts = checkOptions<IptablesOptions>('options', options);
    const family = opts.family ?? 4;
    if (family !== 4 && family !== 6) throw invalidValue('family', '4 or 6', family);
    const choice = opts.backend ?? 'auto';
    if (choice !== 'auto' && choice !== 'nft' && choice !== 'legacy') {
      throw invalidValue('backend', "'auto', 'nft' or 'legacy'", choice);
    }
    const lockWait = opts.lockWaitSeconds === undefined ? DEFAULT_LOCK_WAIT : checkInteger('lockWaitSeconds', opts.lockWaitSeconds, 0, 3600);
    const timeoutMs =
      opts.timeoutMs === undefined ? lockWait * 1000 + 30_000 : checkInteger('timeoutMs', opts.timeoutMs, 1, 2 ** 31 - 1);
    const env: Record<string, string> = {};
    if (opts.lockFile !== undefined) {
      const file = checkString('lockFile', opts.lockFile, 4096);
      if (!file.startsWith('/')) throw invalidValue('lockFile', 'an absolute path', file);
      env.XTABLES_LOCKFILE = file;
    }
    const runner =
      opts.runner ??
      new NetnsRunner(opts.netns, { timeoutMs, env, ...(lockWait === 0 ? { noWaitLockFile: env.XTABLES_LOCKFILE ?? XTABLES_LOCK_DEFAULT } : {}) });
    const backend = choice === 'auto' ? await detectBackend(runner, family) : choice;
    const needsLockFile = opts.lockFile !== undefined;
    const version = await sharedVersion(runner, `${backend}/${family}/${needsLockFile}`, () =>
      programVersion(runner, backend, family, needsLockFile),
    );
    return new Iptables(runner, backend, family, version, lockWait);
  }

  /**
   * apply makes the namespace hold the rule set: owned chains exactly as written, the other rules once each. All or
   * nothing: when a later table fails, what it wrote in the earlier tables is undone, and rules other writers added
   * meanwhile stay (see rollback.ts). A namespace that holds none of the set's chains is written in one restore run
   * without reading it first, when the set allows it (see fresh.ts). Rejects with IptablesRestoreError (or
   * IptablesLockTimeoutError), or throws the rule set's first InvalidArgumentError before anything runs.
   */
  apply(rules: RuleSet): Promise<void> {
    checkRuleSet(rules);
    return this.#exclusive(async () => {
      // A set whose chains this client has seen in place (it wrote them, or a guess was refused for them) is not
      // guessed about again: the refused run would cost as much as the restore itself.
      const create = this.#knownChains.some(rules) ? undefined : createPlanOf(rules);
      let written: IptablesTable[] = [];
      if (create !== undefined) {
        const result = await this.#runner.run(this.#restoreArgv(), create.text);
        if (result.exitCode === 0) {
          this.#knownChains.add(rules);
          return;
        }
        const err = restoreError(create, result.exitCode, result.stderr);
        // A held lock is not an answer about the chains; apply reports it as it does on the save-first path.
        if (err instanceof IptablesLockTimeoutError) throw err;
        written = committedBefore(rules, err.table);
        if (!refusedForExisting(create, err)) {
          // Refused where the save-first plan writes the same lines over the same state: it would fail alike.
          await this.#rollBack(rules, { tables: {} }, written, err);
          throw err;
        }
        this.#knownChains.add(rules);
      }
      await this.#applyReading(rules, written);
      this.#knownChains.add(rules);
    });
  }

  /**
   * #applyReading is apply that reads the state first. `written` lists the tables a planCreate run committed just
   * before: a rollback takes them back to holding nothing of the set's.
   */
  async #applyReading(rules: RuleSet, written: readonly IptablesTable[]): Promise<void> {
    // Only the rules outside owned chains are compared with the state; owned chains are written as given. Forms
    // still to be learned are learned first, so that no restore waits through the learning's own runs.
    const canonical = this.#canonical.cached(rules, 'foreign') ?? (await this.#canonical.canonicalize(rules, 'foreign'));
    // iptables-restore starts now, while iptables-save runs: its start (exec, linking, xtables setup) overlaps
    // the save, and with nft so does its reading of the owned chains (which do not depend on the save). The rest
    // of its input (the deletions the save calls for, the other rules, COMMIT) follows. iptables-save takes no
    // lock; a restore cut off before COMMIT commits nothing. Legacy gets nothing early: iptables-legacy-restore
    // takes the xtables lock (host-wide unless lockFile is set) as soon as it reads a table, and would hold it
    // for the length of the save.
    const early = this.#runner.start?.(this.#restoreArgv());
    const prefix = early && this.backend === 'nft' ? applyPrefix(canonical) : '';
    if (prefix !== '') early!.write(prefix);
    let before: IptablesState;
    try {
      before = await this.#planState(canonical);
    } catch (err) {
      await abandon(early);
      throw err;
    }
    await this.#applyWith(canonical, before, early, prefix, written);
  }

  /**
   * verify compares the namespace's state with the rule set, rule texts in iptables-save's canonical form. It changes
   * no rule a packet can reach; the first time this client sees a rule text it learns its canonical form through a
   * scratch chain that nothing jumps to (see canonical.ts). Throws the rule set's InvalidArgumentError; rejects with
   * IptablesCommandError when iptables-save fails, IptablesRestoreError when a rule text is refused.
   */
  verify(rules: RuleSet): Promise<VerifyResult> {
    checkRuleSet(rules);
    return this.#exclusive(async () => {
      const canonical = await this.#canonical.canonicalize(rules);
      return diffRuleSet(canonical, await this.#state());
    });
  }

  /**
   * reconcile applies the rule set only when verify finds a difference; resolves whether it changed anything. Throws
   * and rejects as verify and apply do.
   */
  reconcile(rules: RuleSet): Promise<{ changed: boolean }> {
    checkRuleSet(rules);
    return this.#exclusive(async () => {
      const canonical = await this.#canonical.canonicalize(rules);
      const before = await this.#state();
      if (diffRuleSet(canonical, before).inSync) return { changed: false };
      await this.#applyWith(canonical, before);
      return { changed: true };
    });
  }

  /**
   * remove deletes the set's rules from chains it does not own (jumps into its chains included), then flushes and
   * deletes its owned chains, in one run. Resolves whether anything was there to remove. Throws the rule set's
   * InvalidArgumentError; rejects with IptablesCommandError when iptables-save fails, IptablesRestoreError (or
   * IptablesLockTimeoutError) when the removal run is refused.
   */
  remove(rules: RuleSet): Promise<{ changed: boolean }> {
    checkRuleSet(rules);
    return this.#exclusive(async () => {
      const canonical = await this.#canonical.canonicalize(rules, 'foreign');
      const script = planRemove(canonical, await this.#state());
      this.#knownChains.delete(rules);
      if (script.blocks.length === 0) return { changed: false };
      await this.#restore(script);
      return { changed: true };
    });
  }

  /**
   * save reads the state: tables -> chains -> (policy, rules), rules in iptables-save's canonical form. Tables that
   * hold nothing (only empty built-in chains with policy ACCEPT) are left out. Rejects with IptablesCommandError.
   */
  save(): Promise<IptablesState> {
    return this.#exclusive(async () => withoutPristineTables(await this.#state()));
  }

  /**
   * restore runs raw restore input with --noflush (an escape hatch and a test aid): InvalidArgumentError for input
   * that is not a string, IptablesRestoreError or IptablesLockTimeoutError as for apply, but no rollback across tables.
   */
  restore(input: string): Promise<void> {
    checkString('input', input, Infinity, 0);
    const lines = input.replace(/\n$/, '').split('\n');
    const blocks: { table: string; first: number; last: number }[] = [];
    lines.forEach((l, i) => {
      if (l.startsWith('*')) blocks.push({ table: l.slice(1), first: i + 1, last: lines.length });
      else if (l === 'COMMIT' && blocks.length) blocks[blocks.length - 1]!.last = i + 1;
    });
    return this.#exclusive(() => this.#restore({ text: input, lines, blocks }));
  }

  async #applyWith(
    rules: RuleSet,
    before: IptablesState,
    early?: IptablesStartedRun,
    sent = '',
    written: readonly IptablesTable[] = [],
  ): Promise<void> {
    let script: RestoreScript;
    try {
      script = planApply(rules, before);
    } catch (err) {
      await abandon(early);
      throw err;
    }
    try {
      if (early && script.text.startsWith(sent)) {
        early.end(script.text.slice(sent.length));
        this.#checkRestore(script, await early.result);
      } else {
        // No early restore; or, defensively, a plan that does not start with what was sent (applyPrefix is the
        // start of every plan): the early restore then ends without COMMIT, changing nothing, and the plan runs alone.
        await abandon(early);
        await this.#restore(script);
      }
    } catch (err) {
      if (!(err instanceof IptablesRestoreError) || err instanceof IptablesLockTimeoutError || rules.tables.length < 2) {
        throw err;
      }
      const failed = script.blocks.findIndex((b) => b.table === err.table);
      // Unknown failing table: undo every table; the undo leaves a table that reads as before untouched. Tables an
      // unread run wrote just before are undone too, even where this run's block did not commit.
      const reached = failed < 0 ? rules.tables.length : Math.max(failed, written.length);
      await this.#rollBack(rules, stateBeforeCreate(before, written), rules.tables.slice(0, reached), err);
      throw err;
    }
  }

  /**
   * #rollBack undoes what an apply that failed with err wrote in `committed`, back to `before`; nothing when that
   * is empty. Throws err with the rollback's failure attached when the undo fails.
   */
  async #rollBack(rules: RuleSet, before: IptablesState, committed: readonly IptablesTable[], err: IptablesRestoreError): Promise<void> {
    if (committed.length === 0) return;
    try {
      // Planned against the state after the failure, not the one before the apply: rules other writers added in
      // between stay (see rollback.ts).
      const after = await this.#state();
      await this.#restore(planRollback(rules, before, after, committed));
    } catch (rollbackError) {
      throw new IptablesRestoreError(`${err.message} (and rolling back earlier tables failed)`, {
        ...fieldsOf(err),
        rollbackError,
      });
    }
  }

  /**
   * #planState reads what apply plans against. A one-table plan reads only its table: the others may be large (a
   * node's nat table), and neither the plan nor a rollback (there is none for one table) looks at them. When that
   * table cannot be read (legacy without its module: "Cannot initialize"), everything is read instead, so that the
   * restore reports the table as it would have.
   */
  async #planState(rules: RuleSet): Promise<IptablesState> {
    const only = rules.tables.length === 1 ? rules.tables[0] : undefined;
    if (only === undefined) return this.#state();
    try {
      return await this.#state(only);
    } catch (err) {
      if (err instanceof IptablesCommandError) return this.#state();
      throw err;
    }
  }

  /**
   * #state runs iptables-save, of one table or of all. Only apply reads one table: legacy's `-t` instantiates a
   * table that is not there yet, which apply's restore is about to do anyway.
   */
  async #state(table?: IptablesTable): Promise<IptablesState> {
    const argv = [iptablesBinary(this.backend, this.family, 'save')];
    if (table !== undefined) argv.push('-t', table);
    const result = await this.#runner.run(argv);
    if (result.exitCode !== 0) throw new IptablesCommandError(argv, result.exitCode, result.stderr);
    return parseSave(result.stdout);
  }

  #restoreArgv(): string[] {
    const argv = [iptablesBinary(this.backend, this.family, 'restore'), '--noflush'];
    // iptables-legacy-restore reads `--wait=0` as "no alarm", i.e. wait forever; 1 s is its shortest bounded wait. With
    // lockWaitSeconds 0 the runner holds the real lock and the program's own is private, so it never waits.
    if (this.backend === 'legacy') argv.push(`--wait=${Math.max(this.#lockWait, 1)}`);
    return argv;
  }

  async #restore(script: RestoreScript): Promise<void> {
    if (script.text === '') return;
    this.#checkRestore(script, await this.#runner.run(this.#restoreArgv(), script.text));
  }

  #checkRestore(script: RestoreScript, result: IptablesRunResult): void {
    if (result.exitCode === 0) return;
    throw restoreError(script, result.exitCode, result.stderr);
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const caller = new Error('iptables');
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run.catch((err: unknown) => {
      if (err instanceof Error && caller.stack) {
        err.stack = `${err.stack ?? String(err)}\n    --- async call site ---\n${caller.stack.split('\n').slice(2).join('\n')}`;
      }
      throw err;
    });
  }
}

/**
 * abandon ends a started restore on a path that will not use it: its input stops before COMMIT, so it commits
 * nothing, and it is waited for, so it never outlives the operation.
 */
async function abandon(early: IptablesStartedRun | undefined): Promise<void> {
  if (!early) return;
  early.end('');
  await early.result.catch(() => undefined);
}

// "iptables-nft-restore v1.8.9 (nf_tables)"; legacy names itself "iptables-restore v1.8.9 (legacy)".
const VERSION_LINE = /v(\d+)\.(\d+)\.(\d+) \((legacy|nf_tables)\)/;

async function programVersion(
  runner: IptablesRunner,
  backend: IptablesBackend,
  family: IptablesFamily,
  lockFile: boolean,
): Promise<string> {
  const argv = [iptablesBinary(backend, family, 'restore'), '--version'];
  const result = await runner.run(argv);
  const m = VERSION_LINE.exec(result.stdout);
  if (result.exitCode !== 0 || !m) throw new IptablesCommandError(argv, result.exitCode, result.stderr || result.stdout);
  const version = `${m[1]}.${m[2]}.${m[3]}`;
  if ((m[4] === 'nf_tables' ? 'nft' : 'legacy') !== backend) {
    throw new PodnetError(`'${argv[0]}' reports the ${m[4]} backend, not ${backend}`, 'ERR_IPTABLES_VERSION');
  }
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (lockFile && major * 10000 + minor * 100 + patch < 10806) {
    throw new PodnetError(`iptables ${version} ignores XTABLES_LOCKFILE (1.8.6 or newer needed for lockFile)`, 'ERR_IPTABLES_VERSION');
  }
  return version;
}

function checkRuleSet(rules: unknown): asserts rules is RuleSet {
  if (!(rules instanceof RuleSet)) throw invalidValue('rules', 'a RuleSet', rules);
  rules.check();
}

function fieldsOf(err: IptablesRestoreError): IptablesRestoreErrorFields {
  return {
    exitCode: err.exitCode,
    stderr: err.stderr,
    reason: err.reason,
    line: err.line,
    table: err.table,
    rule: err.rule,
    input: err.input,
  };
}

/** restoreError builds the typed error for a failed run of script. */
export function restoreError(script: RestoreScript, exitCode: number, stderr: string): IptablesRestoreError {
  const parsed = parseRestoreStderr(stderr);
  const block = parsed.line === undefined ? undefined : script.blocks.find((b) => parsed.line! >= b.first && parsed.line! <= b.last);
  let rule: string | undefined;
  if (parsed.line !== undefined) {
    const text = script.lines[parsed.line - 1];
    rule = text === 'COMMIT' && block ? script.lines.slice(block.first - 1, block.last).join('\n') : text;
  }
  const fields: IptablesRestoreErrorFields = {
    exitCode,
    stderr,
    reason: parsed.reason,
    line: parsed.line,
    table: block?.table,
    rule,
    input: script.text,
  };
  const where = parsed.line === undefined ? '' : ` at line ${parsed.line}${block ? ` (table ${block.table})` : ''}`;
  const message = `iptables-restore failed${where}: ${parsed.message}`;
  if (parsed.reason === 'lock-timeout') return new IptablesLockTimeoutError(message, fields);
  return new IptablesRestoreError(message, fields);
}
