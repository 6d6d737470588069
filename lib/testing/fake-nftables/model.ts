/**
 * The fake's nf_tables state: tables keyed by family and name, each holding its chains, sets and rules. A batch
 * works on a Draft, which copies an object the first time the batch changes it (tables, chains, sets and element
 * maps alike), so the committed state is never touched by a batch that is then aborted.
 */

/** A user data attribute is opaque to the kernel: it keeps the bytes and dumps them back. */
export type Udata = Uint8Array | undefined;

export interface ElementObj {
  key: Uint8Array;
  flags: number;
  udata: Udata;
  /** A map element's NFTA_SET_ELEM_DATA nest as the kernel dumps it (its value, or its verdict's code). */
  data: Uint8Array | undefined;
}

export interface SetObj {
  name: string;
  handle: bigint;
  flags: number;
  keyType: number;
  keyLen: number;
  /** NFTA_SET_DATA_TYPE / DATA_LEN of a map (a verdict map's length is the kernel's, 16), 0 otherwise. */
  dataType: number;
  dataLen: number;
  policy: number | undefined;
  /** NFTA_SET_DESC_SIZE, 0 without. */
  size: number;
  /** A size an update in the running batch gives the set: the kernel applies it at commit, adds see the old one. */
  newSize?: number;
  udata: Udata;
  /** Rules whose lookups refer to the set. */
  use: number;
  /** Elements by their key in hex, in insertion order. */
  elements: Map<string, ElementObj>;
}

/**
 * RuleCheck is what a table's validation looks at in a rule, in the rule's order: a jump or goto to walk into, or a
 * statement that may run only under base chains of some hooks (NF_INET_* bits), of the nat type when nat is set.
 */
export type RuleCheck = { kind: 'jump'; chain: string } | { kind: 'hooks'; nat: boolean; hooks: number };

export interface RuleObj {
  handle: bigint;
  /** The NFTA_RULE_EXPRESSIONS payload as it came. */
  expressions: Uint8Array;
  udata: Udata;
  /** What the rule holds: the sets its lookups use, the chains it jumps to. */
  sets: string[];
  jumps: string[];
  checks: RuleCheck[];
}

export interface ChainObj {
  name: string;
  handle: bigint;
  /**
   * A base chain's hook; undefined for a regular chain. devices is there for a chain on devices (any netdev hook,
   * inet ingress): the names it was given, in order, none when it was given none.
   */
  base: { type: string; hook: number; priority: number; policy: number; devices?: readonly string[] } | undefined;
  udata: Udata;
  /** Jumps and gotos from rules that refer to this chain. */
  refs: number;
  rules: RuleObj[];
}

export interface TableObj {
  family: number;
  name: string;
  handle: bigint;
  flags: number;
  udata: Udata;
  chains: Map<string, ChainObj>;
  sets: Map<string, SetObj>;
  /** The table's handle generator, shared by its chains, sets and rules. */
  nextHandle: bigint;
}

export interface State {
  tables: Map<string, TableObj>;
  /** The netns's table handle generator. */
  nextTableHandle: bigint;
  /** The generation (nft_net->base_seq): moves on with every commit that changed something. */
  genId: number;
  /**
   * Whether the last commit failed validation (nft_net->validate_state DO): until a commit succeeds, a new table
   * is validated after each of its rules, so its bad rule fails at once, without a replay.
   */
  validateDo: boolean;
}

export function tableKey(family: number, name: string): string {
  return `${family}/${name}`;
}

export function emptyState(): State {
  return { tables: new Map(), nextTableHandle: 1n, genId: 1, validateDo: false };
}

/** Draft is one batch's view of the state: reads see the batch's own changes, writes copy on first touch. */
export class Draft {
  readonly tables: Map<string, TableObj>;
  nextTableHandle: bigint;
  /** Whether a message of the batch changed anything (a commit then moves the generation on). */
  changed = false;
  readonly #fresh = new WeakSet<object>();
  /** The batch's latest copy of every committed table it touched, deleted ones too (for abort()). */
  readonly #touched = new Map<string, TableObj>();
  /**
   * Sets bound to a rule (the kernel's set->bindings): by a committed rule, which unbinds only at commit even when
   * this batch deletes it, or by a rule this batch added.
   */
  readonly #bound = new WeakSet<SetObj>();
  /** The sets this batch resized, whose new size the commit applies. */
  readonly #resized: SetObj[] = [];

  constructor(readonly base: State) {
    this.tables = new Map(base.tables);
    this.nextTableHandle = base.nextTableHandle;
  }

  table(family: number, name: string): TableObj | undefined {
    return this.tables.get(tableKey(family, name));
  }

  /** mutableTable returns the table for writing: a copy of the committed one the first time. */
  mutableTable(t: TableObj): TableObj {
    if (this.#fresh.has(t)) return t;
    const copy: TableObj = { ...t, chains: new Map(t.chains), sets: new Map(t.sets) };
    this.#fresh.add(copy);
    this.tables.set(tableKey(t.family, t.name), copy);
    this.#touched.set(tableKey(t.family, t.name), copy);
    return copy;
  }

  addTable(t: TableObj): void {
    this.#fresh.add(t);
    this.tables.set(tableKey(t.family, t.name), t);
    this.changed = true;
  }

  deleteTable(t: TableObj): void {
    this.tables.delete(tableKey(t.family, t.name));
    this.changed = true;
  }

  mutableChain(table: TableObj, c: ChainObj): { table: TableObj; chain: ChainObj } {
    const t = this.mutableTable(table);
    const current = t.chains.get(c.name) ?? c;
    if (this.#fresh.has(current)) return { table: t, chain: current };
    const copy: ChainObj = { ...current, rules: [...current.rules] };
    this.#fresh.add(copy);
    t.chains.set(copy.name, copy);
    return { table: t, chain: copy };
  }

  mutableSet(table: TableObj, s: SetObj): { table: TableObj; set: SetObj } {
    const t = this.mutableTable(table);
    const current = t.sets.get(s.name) ?? s;
    if (this.#fresh.has(current)) return { table: t, set: current };
    const copy: SetObj = { ...current, elements: new Map(current.elements) };
    this.#fresh.add(copy);
    if (current.use > 0) this.#bound.add(copy);
    t.sets.set(copy.name, copy);
    return { table: t, set: copy };
  }

  /** bindSet records that a rule of this batch looks the set up (the set is one of the draft's own). */
  bindSet(s: SetObj): void {
    this.#bound.add(s);
  }

  /** isBound tells whether rules are bound to the set as the batch sees it: committed ones or this batch's. */
  isBound(s: SetObj): boolean {
    return s.use > 0 || this.#bound.has(s);
  }

  /** resizeSet gives one of the draft's own sets a size from the commit on. */
  resizeSet(s: SetObj, size: number): void {
    s.newSize = size;
    this.#resized.push(s);
    this.changed = true;
  }

  /** fresh marks an object made by this batch as its own (no copy needed on the next write). */
  fresh<T extends object>(o: T): T {
    this.#fresh.add(o);
    this.changed = true;
    return o;
  }

  /**
   * abort leaves the base as it was, except for handles: the kernel does not give back the handles an aborted batch
   * took, from the netns's counter or from a table's (even a table the batch then deleted).
   */
  abort(): void {
    this.base.nextTableHandle = this.nextTableHandle;
    for (const [key, copy] of this.#touched) {
      const t = this.base.tables.get(key);
      if (t && t.handle === copy.handle && copy.nextHandle > t.nextHandle) t.nextHandle = copy.nextHandle;
    }
  }

  /** commit writes the batch's state into the base, moving the generation on when something changed. */
  commit(): void {
    if (!this.changed) return;
    for (const s of this.#resized) {
      if (s.newSize !== undefined) s.size = s.newSize;
      delete s.newSize;
    }
    this.base.validateDo = false;
    this.base.tables = this.tables;
    this.base.nextTableHandle = this.nextTableHandle;
    // The kernel skips 0 when base_seq wraps.
    this.base.genId = (this.base.genId + 1) >>> 0 || 1;
  }
}
