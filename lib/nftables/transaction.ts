/**
 * NftTransaction collects changes for one nf_tables batch. Build freely: every call checks its arguments at once and
 * the first bad one is kept (`error`) and thrown by Nftables.run before anything is sent, knftables-style. What
 * reaches the kernel is one batch in one sendmsg, applied all or nothing.
 */
import type { InvalidArgumentError } from '../errors.js';
import { native, type RawNftOp } from '../native.js';
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { FAMILIES, HOOKS, KEY_LENGTHS, POLICIES, SET_FLAGS, hookNumber } from './names.js';
import { addressKey } from './address-key.js';
import { ElementRecordWriter } from './element-records.js';
import { checkExprs } from './expr-encode.js';
import type { NftChainSpec, NftElementSpec, NftFamily, NftRuleRef, NftRuleSpec, NftSetSpec, NftTableRef, NftTableSpec } from './types.js';

const K = native.nftablesConstants;
const KIND = { table: K.opTable, chain: K.opChain, set: K.opSet, elements: K.opElements, flushTable: K.opFlushTable, rule: K.opRule } as const;
/** Rule handles: the kernel's u64, as far as a number holds it exactly. */
const HANDLE_MAX = Number.MAX_SAFE_INTEGER;
const CHAIN_TYPES = new Set(['filter', 'nat', 'route']);
const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;

/** One op as the caller gave it, and the native ops it became. */
interface TxOp {
  operation: string;
  object: unknown;
  raw: RawNftOp[];
}

function checkName(name: string, value: unknown): string {
  return checkString(name, value, K.nameMax);
}

function checkComment(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  return checkString(name, value, K.commentMax);
}

function checkFamily(name: string, value: unknown): number {
  if (typeof value !== 'string' || !Object.hasOwn(FAMILIES, value)) {
    throw invalidValue(name, `one of ${Object.keys(FAMILIES).join(', ')}`, value);
  }
  return FAMILIES[value as NftFamily];
}

/** An options object with only the keys a call knows: a misspelt one (replce, after for before) is refused, not ignored. */
function checkOptionKeys<T extends object>(value: unknown, keys: readonly string[]): Partial<T> {
  const o = checkOptions<T>('options', value);
  for (const k of Object.keys(o)) {
    if (!keys.includes(k)) throw invalidValue(`options.${k}`, `none (options are ${keys.join(', ')})`, (o as Record<string, unknown>)[k]);
  }
  return o;
}

function checkFlag(name: string, value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw invalidType(name, 'a boolean', value);
  return value;
}

/**
 * NftTransaction collects nf_tables ops for Nftables.run, which sends them as one batch: all applied or none. Like
 * RuleSet, building never throws: the first bad argument is kept as `error` (an InvalidArgumentError), later calls
 * are ignored, and run() rejects with it before anything is sent. The kernel's refusals come from run() as
 * NftablesError naming the op.
 */
export class NftTransaction {
  readonly #ops: TxOp[] = [];
  #error: InvalidArgumentError | undefined;
  #nextSetId = 1;
  /** Sets added in this transaction: their batch id and key length, by family/table/name. */
  readonly #sets = new Map<string, { id: number; keyLength: number }>();

  /**
   * error is the first bad argument given to this transaction, which run() rejects with; undefined while all are good.
   */
  get error(): InvalidArgumentError | undefined {
    return this.#error;
  }

  /** size is how many ops the transaction holds. */
  get size(): number {
    return this.#ops.length;
  }

  #add(operation: string, object: unknown, build: () => RawNftOp[]): this {
    if (this.#error) return this;
    try {
      this.#ops.push({ operation, object, raw: build() });
    } catch (err) {
      this.#error = err as InvalidArgumentError;
    }
    return this;
  }

  #table(name: string, value: unknown): { family: number; table: string; comment: string | undefined } {
    const t = checkOptions<NftTableSpec>(name, value);
    return { family: checkFamily(`${name}.family`, t.family), table: checkName(`${name}.name`, t.name), comment: checkComment(`${name}.comment`, t.comment) };
  }

  /**
   * addTable adds a table, or leaves an existing one as it is (nft's `add table`); `{ exclusive: true }`: EEXIST then.
   */
  addTable(table: NftTableSpec, options: { exclusive?: boolean } = {}): this {
    return this.#add('addTable', table, () => {
      const t = this.#table('table', table);
      const excl = checkFlag('options.exclusive', checkOptionKeys<{ exclusive?: boolean }>(options, ['exclusive']).exclusive);
      return [{ kind: KIND.table, flags: K.create | (excl ? K.excl : 0), ...t }];
    });
  }

  /** deleteTable deletes a table with everything in it; ENOENT when it is missing. */
  deleteTable(table: NftTableRef): this {
    return this.#add('deleteTable', table, () => {
      const t = this.#table('table', table);
      return [{ kind: KIND.table, del: true, flags: 0, family: t.family, table: t.table }];
    });
  }

  /** flushTable deletes every rule of the table's chains (nft's `flush table`); chains and sets stay. */
  flushTable(table: NftTableRef): this {
    return this.#add('flushTable', table, () => {
      const t = this.#table('table', table);
      return [{ kind: KIND.flushTable, flags: 0, family: t.family, table: t.table }];
    });
  }

  /**
   * addChain adds a chain, or leaves an existing one (nft's `add chain`). A base chain gives type, hook and priority
   * (and optionally policy); a regular chain none of them.
   */
  addChain(chain: NftChainSpec, options: { exclusive?: boolean } = {}): this {
    return this.#add('addChain', chain, () => {
      const c = checkOptions<NftChainSpec>('chain', chain);
      const excl = checkFlag('options.exclusive', checkOptionKeys<{ exclusive?: boolean }>(options, ['exclusive']).exclusive);
      const op: RawNftOp = {
        kind: KIND.chain,
        flags: K.create | (excl ? K.excl : 0),
        family: checkFamily('chain.family', c.family),
        table: checkName('chain.table', c.table),
        name: checkName('chain.name', c.name),
        comment: checkComment('chain.comment', c.comment),
      };
      const base = c.type !== undefined || c.hook !== undefined || c.priority !== undefined || c.policy !== undefined;
      if (base) {
        if (typeof c.type !== 'string' || !CHAIN_TYPES.has(c.type)) throw invalidValue('chain.type', "'filter', 'nat' or 'route' (a base chain)", c.type);
        if (typeof c.hook !== 'string' || !Object.hasOwn(HOOKS, c.hook)) throw invalidValue('chain.hook', `one of ${Object.keys(HOOKS).join(', ')} (a base chain)`, c.hook);
        const hook = hookNumber(op.family, c.hook);
        if (hook === undefined) throw invalidValue('chain.hook', "'ingress' (a netdev base chain)", c.hook);
        if (typeof c.priority !== 'number' || !Number.isInteger(c.priority) || c.priority < INT32_MIN || c.priority > INT32_MAX) {
          throw invalidValue('chain.priority', 'a 32-bit integer (a base chain)', c.priority);
        }
        op.type = c.type;
        op.hook = hook;
        op.priority = c.priority;
        if (c.policy !== undefined) {
          if (typeof c.policy !== 'string' || !Object.hasOwn(POLICIES, c.policy)) throw invalidValue('chain.policy', "'accept' or 'drop'", c.policy);
          op.policy = POLICIES[c.policy];
        }
      }
      return [op];
    });
  }

  /** deleteChain deletes an empty, unreferenced chain: ENOENT when missing, EBUSY while it holds rules. */
  deleteChain(chain: { family: NftFamily; table: string; name: string }): this {
    return this.#add('deleteChain', chain, () => {
      const c = checkOptions<NftChainSpec>('chain', chain);
      return [{ kind: KIND.chain, del: true, flags: 0, family: checkFamily('chain.family', c.family), table: checkName('chain.table', c.table), name: checkName('chain.name', c.name) }];
    });
  }

  /** addSet adds an address set, or leaves an existing one (nft's `add set`). */
  addSet(set: NftSetSpec, options: { exclusive?: boolean } = {}): this {
    return this.#add('addSet', set, () => {
      const s = checkOptions<NftSetSpec>('set', set);
      const excl = checkFlag('options.exclusive', checkOptionKeys<{ exclusive?: boolean }>(options, ['exclusive']).exclusive);
      const family = checkFamily('set.family', s.family);
      const table = checkName('set.table', s.table);
      const name = checkName('set.name', s.name);
      if (typeof s.type !== 'string' || !Object.hasOwn(KEY_LENGTHS, s.type)) throw invalidValue('set.type', "'ipv4_addr' or 'ipv6_addr'", s.type);
      let flags = 0;
      if (s.flags !== undefined) {
        if (!Array.isArray(s.flags)) throw invalidType('set.flags', 'an array of set flags', s.flags);
        for (const [i, f] of s.flags.entries()) {
          if (typeof f !== 'string' || !Object.hasOwn(SET_FLAGS, f)) throw invalidValue(`set.flags[${i}]`, `one of ${Object.keys(SET_FLAGS).join(', ')}`, f);
          flags |= SET_FLAGS[f as keyof typeof SET_FLAGS];
        }
      }
      const size = s.size === undefined ? undefined : checkInteger('set.size', s.size, 1, 0xffffffff);
      const keyLen = KEY_LENGTHS[s.type];
      const id = this.#nextSetId++;
      this.#sets.set(`${family}/${table}/${name}`, { id, keyLength: keyLen });
      return [{
        kind: KIND.set,
        flags: K.create | (excl ? K.excl : 0),
        family,
        table,
        name,
        comment: checkComment('set.comment', s.comment),
        setFlags: flags,
        keyType: s.type === 'ipv4_addr' ? K.typeIpv4Addr : K.typeIpv6Addr,
        keyLen,
        size,
        setId: id,
      }];
    });
  }

  /** deleteSet deletes a set with its elements: ENOENT when missing, EBUSY while a rule refers to it. */
  deleteSet(set: { family: NftFamily; table: string; name: string }): this {
    return this.#add('deleteSet', set, () => {
      const s = checkOptions<NftSetSpec>('set', set);
      return [{ kind: KIND.set, del: true, flags: 0, family: checkFamily('set.family', s.family), table: checkName('set.table', s.table), name: checkName('set.name', s.name) }];
    });
  }

  #elements(table: unknown, set: unknown, elements: unknown, withComments: boolean) {
    const t = this.#table('table', table);
    const name = checkName('set', set);
    const known = this.#sets.get(`${t.family}/${t.table}/${name}`);
    const list = Array.isArray(elements) ? elements : [elements];
    if (list.length === 0) throw invalidValue('elements', 'at least one element', elements);
    // The argument's name is made only for an error, not three strings per element of a 10k-element add.
    const at = (i: number) => (Array.isArray(elements) ? `elements[${i}]` : 'elements');
    const keyLength = known?.keyLength;
    const out = new ElementRecordWriter(list.length);
    for (let i = 0; i < list.length; i++) {
      const e: unknown = list[i];
      const el = typeof e === 'object' && e !== null && !Array.isArray(e) ? (e as Partial<NftElementSpec>) : checkOptions<NftElementSpec>(at(i), e);
      const address = el.address;
      const n = typeof address === 'string' ? out.key(address) : 0;
      // addressKey throws the error that names what is wrong with it.
      if (n === 0 || (keyLength !== undefined && n !== keyLength)) addressKey(`${at(i)}.address`, address, keyLength);
      if (out.repeated()) throw invalidValue(`${at(i)}.address`, 'an address not given twice', address);
      const c = el.comment;
      if (!withComments || c === undefined) continue;
      // The common comment (a pod UID) passes the checks checkString makes without counting bytes.
      const plain = typeof c === 'string' && c.length > 0 && c.length * 3 <= K.commentMax && !c.includes('\0') && c.isWellFormed();
      out.comment(plain ? c : checkComment(`${at(i)}.comment`, c)!);
    }
    return { family: t.family, table: t.table, name, setId: known?.id, records: out };
  }

  /**
   * addElement adds elements to a set, exclusively: an element already there fails the whole transaction with
   * EEXIST (NftablesError, `isAlreadyExists`). `{ replace: true }` instead takes the element whether or not it is
   * there and gives it this comment (in the batch: add, delete, add).
   */
  addElement(table: NftTableRef, set: string, elements: NftElementSpec | NftElementSpec[], options: { replace?: boolean } = {}): this {
    return this.#add('addElement', { table, set, elements }, () => {
      const e = this.#elements(table, set, elements, true);
      const replace = checkFlag('options.replace', checkOptionKeys<{ replace?: boolean }>(options, ['replace']).replace);
      const base = { kind: KIND.elements, family: e.family, table: e.table, name: e.name, setId: e.setId };
      const add: RawNftOp = { ...base, flags: K.create | K.excl, records: e.records.records() };
      if (!replace) return [add];
      const keys = e.records.keysOnly();
      return [{ ...base, flags: K.create, records: keys }, { ...base, del: true, flags: 0, records: keys }, add];
    });
  }

  /** deleteElement deletes elements of a set; one that is missing fails the transaction with ENOENT (`isNotFound`). */
  deleteElement(table: NftTableRef, set: string, elements: { address: string } | { address: string }[]): this {
    return this.#add('deleteElement', { table, set, elements }, () => {
      const e = this.#elements(table, set, elements, false);
      return [{ kind: KIND.elements, del: true, flags: 0, family: e.family, table: e.table, name: e.name, setId: e.setId, records: e.records.records() }];
    });
  }

  #rule(rule: unknown, flags: number, position: number | undefined): RawNftOp {
    const r = checkOptions<NftRuleSpec>('rule', rule);
    const family = checkFamily('rule.family', r.family);
    const table = checkName('rule.table', r.table);
    const op: RawNftOp = {
      kind: KIND.rule,
      flags,
      family,
      table,
      chain: checkName('rule.chain', r.chain),
      comment: checkComment('rule.comment', r.comment),
      exprs: checkExprs('rule.exprs', r.exprs, (set) => this.#sets.get(`${family}/${table}/${set}`)?.id),
    };
    if (position !== undefined) op.position = position;
    return op;
  }

  #position(options: unknown, key: 'after' | 'before'): number | undefined {
    const o = checkOptionKeys<Record<string, unknown>>(options, [key]);
    return o[key] === undefined ? undefined : checkInteger(`options.${key}`, o[key], 1, HANDLE_MAX);
  }

  /**
   * addRule appends a rule to its chain (nft's `add rule`), or with `{ after: handle }` puts it right after that
   * rule (`add rule ... position H`). ENOENT when the chain, a jumped-to chain, a looked-up set or the rule `after`
   * names is missing.
   */
  addRule(rule: NftRuleSpec, options: { after?: number } = {}): this {
    return this.#add('addRule', rule, () => [this.#rule(rule, K.create | K.append, this.#position(options, 'after'))]);
  }

  /**
   * insertRule puts a rule first in its chain (nft's `insert rule`), or with `{ before: handle }` right before that
   * rule.
   */
  insertRule(rule: NftRuleSpec, options: { before?: number } = {}): this {
    return this.#add('insertRule', rule, () => [this.#rule(rule, K.create, this.#position(options, 'before'))]);
  }

  /** deleteRule deletes one rule by its handle; ENOENT when it is missing. */
  deleteRule(rule: NftRuleRef): this {
    return this.#add('deleteRule', rule, () => {
      const r = checkOptions<NftRuleRef>('rule', rule);
      return [{
        kind: KIND.rule,
        del: true,
        flags: 0,
        family: checkFamily('rule.family', r.family),
        table: checkName('rule.table', r.table),
        chain: checkName('rule.chain', r.chain),
        handle: checkInteger('rule.handle', r.handle, 1, HANDLE_MAX),
      }];
    });
  }

  /** flushChain deletes every rule of one chain (nft's `flush chain`); the chain stays. ENOENT when it is missing. */
  flushChain(chain: { family: NftFamily; table: string; name: string }): this {
    return this.#add('flushChain', chain, () => {
      const c = checkOptions<NftChainSpec>('chain', chain);
      return [{ kind: KIND.rule, del: true, flags: 0, family: checkFamily('chain.family', c.family), table: checkName('chain.table', c.table), chain: checkName('chain.name', c.name) }];
    });
  }

  /**
   * compile returns the native ops in order, and a map from a native op's index back to the caller's op.
   * @internal
   */
  compile(): { ops: RawNftOp[]; opAt: (nativeIndex: number) => { index: number; object: unknown; operation: string } | undefined } {
    const ops: RawNftOp[] = [];
    const owner: number[] = [];
    this.#ops.forEach((op, i) => {
      for (const r of op.raw) {
        ops.push(r);
        owner.push(i);
      }
    });
    return {
      ops,
      opAt: (n) => {
        const i = owner[n];
        if (i === undefined) return undefined;
        const op = this.#ops[i]!;
        return { index: i, object: op.object, operation: op.operation };
      },
    };
  }
}
