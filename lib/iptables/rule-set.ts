/**
 * RuleSet is a transaction of iptables rules: chains it owns and rules it appends or inserts. It is built freely;
 * the first invalid call is remembered and reported by check() / render() / apply, so nothing runs with a bad rule.
 */
import { InvalidArgumentError } from '../errors.js';
import { invalidType, invalidValue } from '../validate.js';
import { MAX_ARG_BYTES } from './quote.js';
import { renderRuleSet } from './render.js';
import { BUILTIN_CHAINS, MAX_CHAIN_NAME, MAX_RULE_ARGS, TABLES, type IptablesTable, type RuleSetView, type RuleSpec } from './rule-model.js';

export { BUILTIN_CHAINS, MAX_CHAIN_NAME, MAX_RULE_ARGS, TABLES, type IptablesTable, type RuleSetView, type RuleSpec } from './rule-model.js';

const CHAIN_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.:@+-]*$/;
const RESERVED = new Set(['ACCEPT', 'DROP', 'RETURN', 'QUEUE']);
// Any control character would end the line or change how restore splits it.
const CONTROL = /[\u0000-\u001f\u007f]/;

/** checkTable throws unless table is one of TABLES. */
export function checkTable(table: unknown): IptablesTable {
  if (typeof table !== 'string') throw invalidType('table', 'a string', table);
  if (!(TABLES as readonly string[]).includes(table)) throw invalidValue('table', `one of ${TABLES.join(', ')}`, table);
  return table as IptablesTable;
}

/** checkChainName throws unless name is a chain name iptables-restore reads back as one word. */
function checkChainName(name: unknown, argument = 'chain'): string {
  if (typeof name !== 'string') throw invalidType(argument, 'a string', name);
  if (name.length === 0 || name.length > MAX_CHAIN_NAME || !CHAIN_NAME.test(name)) {
    throw invalidValue(
      argument,
      `a chain name of 1 to ${MAX_CHAIN_NAME} letters, digits or _.:@+- not starting with -`,
      name,
    );
  }
  return name;
}

// Checked copies, by the list they were made from. Only frozen lists are remembered (a list that can still change
// must be read again), and copies map to themselves: a rule set is rebuilt around its own lists (canonicalize), and
// agents append the same frozen lists apply after apply, so each is read and checked once.
const checked = new WeakMap<readonly string[], readonly string[]>();

/**
 * checkRuleArgs throws unless every argument survives the restore input as exactly one argument, and returns a
 * frozen copy of them. Each element is read once, into the copy, and the copy is what is checked and used: an
 * element getter, a Proxy or an Array subclass cannot change an argument after its check.
 */
export function checkRuleArgs(args: unknown): readonly string[] {
  if (!Array.isArray(args)) throw invalidType('args', 'an array of strings', args);
  const known = checked.get(args);
  if (known !== undefined) return known;
  const length: unknown = args.length;
  if (typeof length !== 'number' || length === 0 || length > MAX_RULE_ARGS) {
    throw invalidValue('args', `1 to ${MAX_RULE_ARGS} arguments`, args);
  }
  const copy: string[] = new Array<string>(length);
  // A plain loop with the error's name built only on failure: applying 1000 rules checks 10,000 arguments.
  for (let i = 0; i < length; i++) {
    const arg: unknown = args[i];
    if (typeof arg !== 'string') throw invalidType(`args[${i}]`, 'a string', arg);
    // A UTF-16 unit is at most 3 UTF-8 bytes: short arguments need no byte count (a call into C++).
    const tooLong = arg.length * 3 > MAX_ARG_BYTES && Buffer.byteLength(arg) > MAX_ARG_BYTES;
    if (arg.length === 0 || tooLong || CONTROL.test(arg)) {
      throw invalidValue(`args[${i}]`, `a non-empty argument of at most ${MAX_ARG_BYTES} bytes without control characters`, arg);
    }
    // iptables-restore would read a lone surrogate as U+FFFD: the rule would never verify as the one given.
    if (!arg.isWellFormed()) throw invalidValue(`args[${i}]`, 'an argument without lone surrogates', arg);
    copy[i] = arg;
  }
  // Frozen, so that its identity keeps meaning these arguments (renderArgs reuses a frozen list's text).
  const kept = Object.freeze(copy);
  checked.set(kept, kept);
  if (Object.isFrozen(args)) checked.set(args as readonly string[], kept);
  return kept;
}

/**
 * RuleSet collects owned chains and rules, per table, in the order they were added. Like a transaction, building
 * never throws: the first invalid call's InvalidArgumentError is kept and thrown by Iptables.apply, verify, reconcile
 * and remove (and by render) before anything runs; the calls after it are ignored.
 */
export class RuleSet implements RuleSetView {
  #tables: IptablesTable[] = [];
  #owned = new Map<IptablesTable, string[]>();
  #rules: RuleSpec[] = [];
  #error: InvalidArgumentError | undefined;
  #revision = 0;

  /**
   * chain declares that this rule set owns table/name: apply creates (or flushes and refills) it, remove deletes it.
   * An unknown table, a built-in or reserved name, or a chain declared twice is kept as the set's error.
   */
  chain(table: IptablesTable, name: string): this {
    this.#record(() => {
      const t = checkTable(table);
      const n = checkChainName(name, 'name');
      if ((BUILTIN_CHAINS[t] as readonly string[]).includes(n) || RESERVED.has(n)) {
        throw invalidValue('name', `a user chain name (not built into ${t} and not a verdict)`, n);
      }
      const owned = this.#owned.get(t) ?? [];
      if (owned.includes(n)) throw invalidValue('name', `a chain not yet declared in ${t}`, n);
      this.#touch(t);
      owned.push(n);
      this.#owned.set(t, owned);
    });
    return this;
  }

  /**
   * append adds `-A chain args` (args as iptables takes them, one argument per element, never quoted by you). A bad
   * table, chain name or argument is kept as the set's error.
   */
  append(table: IptablesTable, chain: string, args: readonly string[]): this {
    this.#record(() => this.#add(table, chain, undefined, args));
    return this;
  }

  /** insert adds `-I chain position args` (position 1 is the head of the chain); bad input is kept as the set's error. */
  insert(table: IptablesTable, chain: string, position: number, args: readonly string[]): this {
    this.#record(() => {
      if (typeof position !== 'number') throw invalidType('position', 'an integer between 1 and 65535', position);
      if (!Number.isInteger(position) || position < 1 || position > 65535) {
        throw invalidValue('position', 'an integer between 1 and 65535', position);
      }
      this.#add(table, chain, position, args);
    });
    return this;
  }

  /** tables lists the tables this rule set touches, in first-use order. */
  get tables(): readonly IptablesTable[] {
    return this.#tables;
  }

  /** ownedChains lists the chains owned in table, in declaration order. */
  ownedChains(table: IptablesTable): readonly string[] {
    return this.#owned.get(table) ?? [];
  }

  /** isOwned tells whether table/chain is owned by this rule set. */
  isOwned(table: IptablesTable, chain: string): boolean {
    return this.ownedChains(table).includes(chain);
  }

  /** rules lists the rules of table (or of every table) in the order they were added. */
  rules(table?: IptablesTable): readonly RuleSpec[] {
    return table === undefined ? this.#rules : this.#rules.filter((r) => r.table === table);
  }

  /** revision counts the calls made on the set: what was derived from it at another revision is stale. */
  get revision(): number {
    return this.#revision;
  }

  /** check throws the first invalid call's InvalidArgumentError, if any. */
  check(): void {
    if (this.#error) throw this.#error;
  }

  /**
   * render returns the restore input for this rule set on its own (for `iptables-restore --noflush`). Iptables.apply
   * adds the deletions that keep re-applying idempotent. Throws the first invalid call's error.
   */
  render(): string {
    this.check();
    return renderRuleSet(this);
  }

  #touch(table: IptablesTable): void {
    if (!this.#tables.includes(table)) this.#tables.push(table);
  }

  #add(table: IptablesTable, chain: string, position: number | undefined, args: readonly string[]): void {
    const t = checkTable(table);
    const c = checkChainName(chain);
    const a = checkRuleArgs(args);
    this.#touch(t);
    this.#rules.push(Object.freeze({ table: t, chain: c, position, args: a }));
  }

  #record(fn: () => void): void {
    this.#revision++;
    if (this.#error) return;
    try {
      fn();
    } catch (err) {
      if (!(err instanceof InvalidArgumentError)) throw err;
      this.#error = err;
    }
  }
}
