/**
 * Nftables: tables, chains, sets and set elements of one network namespace over nf_tables netlink, spoken by the
 * addon's codec on the same engine as ipset and rtnetlink (no `nft` binary). Changes go in transactions: one batch,
 * one sendmsg, one kernel transaction, all or nothing. Element adds are exclusive (EEXIST on a duplicate); replacing
 * is explicit. Operations run one after another in call order.
 */
import { NftablesError, NftablesGenerationError, withCallerStack } from '../errors.js';
import { native, type RawNftablesHandle } from '../native.js';
import { NetlinkClient, openNetlink } from '../netlink/client.js';
import type { Netns } from '../netns.js';
import { checkInteger, checkOptions, checkString, invalidType, invalidValue } from '../validate.js';
import { addressKey } from './address-key.js';
import { ELEMENT_CHUNK, streamElements } from './element-stream.js';
import { withContext } from './errors.js';
import { elementOf, isIntervalSet, isRangeEnd, listing, rangeHolding, toChain, toElements, toRule, toSet, toTable } from './listing.js';
import { FAMILIES } from './names.js';
import type { NftVerifyResult } from './ruleset-diff.js';
import { NftPreparedTransaction } from './prepared.js';
import { applyRuleset, applyTransaction, reconcileRuleset, removeRuleset, verifyRuleset } from './ruleset-ops.js';
import { type NftRuleset, checkRuleset } from './ruleset.js';
import { NftTransaction } from './transaction.js';
import type { NftChain, NftElement, NftElementSpec, NftFamily, NftListing, NftRule, NftRunOptions, NftSet, NftTable, NftTableRef, NftablesOpenOptions } from './types.js';

const K = native.nftablesConstants;

/** tableMustExist throws ENOENT (as the kernel does for a set dump) unless the family has a table of that name. */
async function tableMustExist(h: RawNftablesHandle, family: number, name: string): Promise<void> {
  if ((await h.tables(family)).objects.some((t) => t.name === name)) return;
  throw new NftablesError(`nftables: no table '${name}'`, 'ENOENT', -2, { operation: 'tables' });
}

/** The options of run(): only `generation`, a generation() read (1..2^32-1: the kernel hands out no 0). */
function checkRunOptions(value: unknown): number | undefined {
  const o = checkOptions<NftRunOptions>('options', value);
  for (const k of Object.keys(o)) if (k !== 'generation') throw invalidValue(`options.${k}`, 'none (options are generation)', (o as Record<string, unknown>)[k]);
  return o.generation === undefined ? undefined : checkInteger('options.generation', o.generation, 1, 0xffffffff);
}

function checkTable(value: unknown): { family: number; name: string } {
  if (typeof value !== 'object' || value === null) throw invalidType('table', 'a table reference { family, name }', value);
  const t = value as Partial<NftTableRef>;
  if (typeof t.family !== 'string' || !Object.hasOwn(FAMILIES, t.family)) throw invalidType('table.family', `one of ${Object.keys(FAMILIES).join(', ')}`, t.family);
  return { family: FAMILIES[t.family as NftFamily], name: checkString('table.name', t.name, K.nameMax) };
}

/**
 * Nftables is an open nf_tables netlink session in one namespace. Close it (or `using` it) when done. Operations run
 * in call order; a kernel refusal rejects with NftablesError (the errno's name as `code`, with the operation and the
 * object), a lost or malformed answer with PodnetSystemError (`ETIMEDOUT` after timeoutMs, `EBADMSG`), and calls
 * after close() (NetlinkClient.close) with PodnetError `ERR_NFTABLES_CLOSED`. Bad arguments reject with
 * InvalidArgumentError before anything is sent.
 */
export class Nftables extends NetlinkClient<RawNftablesHandle> {
  /** Opens another handle on the same namespace or peer (a stream's own socket). */
  readonly #reopen: () => RawNftablesHandle;

  private constructor(handle: RawNftablesHandle, netns: Netns | undefined, reopen: () => RawNftablesHandle) {
    super(handle, netns, 'nftables');
    this.#reopen = reopen;
  }

  /**
   * Nftables.open opens a NETLINK_NETFILTER socket inside the namespace (a Netns or a path; default: the current
   * one), or talks to a NetlinkPeer. Throws InvalidArgumentError on bad options, PodnetSystemError when the namespace
   * cannot be opened or entered.
   */
  static async open(options: NftablesOpenOptions = {}): Promise<Nftables> {
    const { handle, netns, reopen } = await openNetlink(options, native.NftablesHandle);
    return new Nftables(handle, netns, reopen);
  }

  /** Runs fn in call order (NetlinkClient.serial), with what the operation was about (and opAt's op) on its errors. */
  #serial<T>(operation: string, object: unknown, fn: (h: RawNftablesHandle) => Promise<T>, opAt?: Parameters<typeof withContext>[4]): Promise<T> {
    return this.serial(fn, (err) => withContext(err, operation, object, this.netns?.path, opAt));
  }

  /**
   * Nftables.prepare converts a transaction (or what apply() of a ruleset sends) to the addon's form once, for run()
   * on any client as often as wanted: the same batch, without building and converting it again. The transaction's
   * later changes do not reach it. Throws the transaction's first argument error, or InvalidArgumentError for a
   * malformed ruleset. Running a prepared ruleset writes it as apply() does (apply never lists first either).
   */
  static prepare(what: NftTransaction | NftRuleset): NftPreparedTransaction {
    if (what instanceof NftTransaction) return new NftPreparedTransaction(what);
    return new NftPreparedTransaction(applyTransaction(new NftTransaction(), checkRuleset(what)));
  }

  /** transaction starts an empty transaction for run(). */
  transaction(): NftTransaction {
    return new NftTransaction();
  }

  /**
   * run sends the transaction as one batch: everything in it is applied, or nothing. Throws the transaction's first
   * argument error (InvalidArgumentError) before anything is sent; a kernel refusal is an NftablesError whose `index`
   * and `object` name the op that caused it (and `element`, for element ops, the first element of the refused part).
   * With `{ generation }` (what generation() read before the listing the transaction was planned from) a batch the
   * ruleset moved on from is refused whole with NftablesGenerationError (`ERESTART`, `isGenerationChanged`). A batch
   * that encodes to more than the kernel takes in one sendmsg (16 MiB less 32 bytes: netlink_sendmsg's limit on a
   * send buffer of 16 MiB; about 1M IPv4 elements without comments, 150k with 100-byte ones) is refused before
   * anything is sent with PodnetSystemError `ERR_NFTABLES_BATCH_TOO_LARGE` (errno EMSGSIZE): split its elements over
   * several transactions.
   */
  async run(tx: NftTransaction | NftPreparedTransaction, options: NftRunOptions = {}): Promise<void> {
    if (!(tx instanceof NftTransaction) && !(tx instanceof NftPreparedTransaction)) {
      return Promise.reject(invalidType('tx', 'an NftTransaction or NftPreparedTransaction', tx));
    }
    let generation: number | undefined;
    try {
      generation = checkRunOptions(options);
    } catch (err) {
      return Promise.reject(err);
    }
    if (tx instanceof NftTransaction && tx.error) return Promise.reject(tx.error);
    const { ops, opAt } = tx instanceof NftTransaction ? tx.compile() : { ops: tx.batch, opAt: tx.opAt };
    if (ops === undefined || (Array.isArray(ops) && ops.length === 0)) return this.#serial('run', undefined, async () => undefined);
    const run = this.#serial('run', undefined, (h) => h.run(ops, generation), opAt);
    if (generation === undefined) return run;
    const caller = new Error();
    const at = generation;
    return withCallerStack(
      run.catch((err: unknown) => {
        if (!(err instanceof NftablesError) || err.code !== 'ERESTART') throw err;
        throw new NftablesGenerationError(
          `nftables run: the ruleset is no longer at generation ${at} (a transaction committed since); nothing was applied`,
          { operation: 'run', netns: err.netns, attempts: 1, generation: at },
          { cause: err },
        );
      }),
      caller,
    );
  }

  /**
   * generation reads the ruleset generation (NFT_MSG_GETGEN): a number that changes with every transaction committed
   * in the namespace, by anyone. Read it before listing and pass it to run() as `{ generation }` so that a plan made
   * from that listing is never applied over a change made since.
   */
  async generation(): Promise<number> {
    return this.#serial('generation', undefined, (h) => h.generation());
  }

  /**
   * tables lists the tables of one family, or of all (families podnet does not name by number). Every listing keeps
   * what it does not decode: attributes in each object's `raw`, other messages in the listing's `rawMessages`.
   */
  async tables(family?: NftFamily): Promise<NftListing<NftTable>> {
    let f = 0;
    if (family !== undefined) f = checkTable({ family, name: 'x' }).family;
    return this.#serial('tables', family, async (h) => {
      const { objects, raw } = await h.tables(f);
      return listing(objects.map(toTable), raw);
    });
  }

  /** chains lists the chains of a table (ENOENT when the table is missing). */
  async chains(table: NftTableRef): Promise<NftListing<NftChain>> {
    const t = checkTable(table);
    return this.#serial('chains', table, async (h) => {
      // The kernel's chain dump filters by family only: the table's own are picked here.
      const { objects, raw } = await h.chains(t.family, t.name);
      const chains = objects.filter((c) => c.table === t.name);
      if (chains.length === 0) await tableMustExist(h, t.family, t.name);
      return listing(chains.map(toChain), raw);
    });
  }

  /**
   * sets lists the sets of a table (ENOENT when the table is missing); maps among them (nft's `map`) carry `map`,
   * their data's type.
   */
  async sets(table: NftTableRef): Promise<NftListing<NftSet>> {
    const t = checkTable(table);
    return this.#serial('sets', table, async (h) => {
      const { objects, raw } = await h.sets(t.family, t.name);
      return listing(objects.map(toSet), raw);
    });
  }

  /**
   * rules lists the rules of a table in chain order with their handles, comments and expressions (decoded into the
   * rule AST; what it does not model as `{ type: 'raw' }`). ENOENT when the table is missing.
   */
  async rules(table: NftTableRef): Promise<NftListing<NftRule>> {
    const t = checkTable(table);
    return this.#serial('rules', table, async (h) => {
      const { objects, raw } = await h.rules(t.family, t.name);
      // A rule dump of a missing table is empty rather than refused: looked up, so it is ENOENT as sets() is.
      if (objects.length === 0) await tableMustExist(h, t.family, t.name);
      return listing(objects.map(toRule), raw);
    });
  }

  /**
   * elements lists a set's elements with their comments (ENOENT when the table or set is missing): a map's with
   * their `data`; an interval set's as the ranges `nft list` prints (`10.0.0.0/24`, `10.1.0.1-10.1.0.5`), in key
   * order, the kernel's range-end elements merged into them. It also asks for the set, to know its kind. A dump
   * the kernel flags interrupted is taken again, and so is one that lists a key twice: a hash set whose table the
   * kernel grows between two dump datagrams (after many adds, without a new generation) comes out repeating some
   * elements and missing as many. Rejects with PodnetSystemError EAGAIN after five such dumps in a row.
   */
  async elements(table: NftTableRef, set: string): Promise<NftElement[]> {
    const t = checkTable(table);
    const s = checkString('set', set, K.nameMax);
    return this.#serial('elements', { table, set }, async (h) => {
      const list = await h.elements(t.family, t.name, s);
      return toElements(list, (await h.getSet(t.family, t.name, s)) ?? undefined);
    });
  }

  /**
   * elementsStream yields a set's elements as elements() lists them, reading the kernel's dump a chunk at a time
   * (`chunk` elements, default 512) over a socket of its own, so memory stays bounded however large the set is and
   * the client's other operations go on meanwhile; the socket closes when the loop ends. An interval set is read
   * whole before its first range is yielded (its ranges are merged from starts and ends in key order). Throws
   * InvalidArgumentError on bad arguments and ERR_NFTABLES_CLOSED after close() when iteration begins; rejects with
   * NftablesError ENOENT when the table or set is missing, and with PodnetSystemError EAGAIN when the set changed
   * during the dump so that the kernel flagged it interrupted (elements already yielded may have missed or repeated
   * some: list again). A stream keeps no record of the keys it yielded, so the one inconsistency the kernel does not
   * flag passes through it: a hash set the kernel grows while it is streamed (right after many adds) may yield some
   * elements twice and miss as many. elements() takes such a listing again.
   */
  async *elementsStream(table: NftTableRef, set: string, options: { chunk?: number } = {}): AsyncGenerator<NftElement, void, undefined> {
    const t = checkTable(table);
    const s = checkString('set', set, K.nameMax);
    const o = checkOptions<{ chunk?: number }>('options', options);
    for (const k of Object.keys(o)) if (k !== 'chunk') throw invalidValue(`options.${k}`, 'none (options are chunk)', (o as Record<string, unknown>)[k]);
    const chunk = o.chunk === undefined ? ELEMENT_CHUNK : checkInteger('options.chunk', o.chunk, 1, 1 << 20);
    this.live();
    const handle = this.#reopen();
    try {
      yield* streamElements(handle, { family: t.family, table: t.name, set: s }, chunk);
    } catch (err) {
      throw withContext(err, 'elements', { table, set }, this.netns?.path);
    }
  }

  /**
   * addElement adds elements in one transaction: exclusive (EEXIST on one already there) unless `{ replace: true }`.
   */
  async addElement(table: NftTableRef, set: string, elements: NftElementSpec | NftElementSpec[], options: { replace?: boolean } = {}): Promise<void> {
    return this.run(new NftTransaction().addElement(table, set, elements, options));
  }

  /** deleteElement deletes elements in one transaction; ENOENT (`isNotFound`) when one is missing. */
  async deleteElement(table: NftTableRef, set: string, elements: { address: string } | { address: string }[]): Promise<void> {
    return this.run(new NftTransaction().deleteElement(table, set, elements));
  }

  /**
   * testElement returns the element with its comment, or undefined when the set does not hold it (the kernel's
   * ENOENT; a missing table or set answers the same). In an interval set it is the range that holds the address, as
   * elements() lists it; in a map it carries its `data`.
   */
  async testElement(table: NftTableRef, set: string, address: string): Promise<NftElement | undefined> {
    const t = checkTable(table);
    const s = checkString('set', set, K.nameMax);
    const key = addressKey('address', address);
    return this.#serial('testElement', { table, set, address }, async (h) => {
      const e = await h.getElement(t.family, t.name, s, key);
      if (e === null || isRangeEnd(e)) return undefined;
      const info = (await h.getSet(t.family, t.name, s)) ?? undefined;
      if (!isIntervalSet(info)) return elementOf(e, info);
      // The kernel answers with the start of the range: the range whole comes from the listing.
      return rangeHolding(await h.elements(t.family, t.name, s), info, key);
    });
  }

  /**
   * apply writes the ruleset in one transaction: each of its tables added, flushed (every rule of every chain gone)
   * and refilled with its sets, chains and rules; each owned table it does not list deleted. Set elements are left
   * as they are, and so are chains and sets in its tables that it does not have (apply does not list first;
   * reconcile deletes them). Throws InvalidArgumentError for a malformed ruleset before anything is sent; rejects with
   * NftablesError naming the object the kernel refused, and then nothing changed.
   */
  async apply(ruleset: NftRuleset): Promise<void> {
    return applyRuleset(this, checkRuleset(ruleset));
  }

  /**
   * verify lists the ruleset's tables and compares them with it: missing or different objects, unexpected ones in
   * its tables (and owned tables it does not want), chains whose rules are right but in another order. Changes
   * nothing. Throws InvalidArgumentError for a malformed ruleset; rejects with NftablesError when a listing fails (a
   * missing table is reported as missing, not thrown).
   */
  async verify(ruleset: NftRuleset): Promise<NftVerifyResult> {
    return (await verifyRuleset(this, checkRuleset(ruleset))).result;
  }

  /**
   * reconcile applies the ruleset when verify finds drift, deleting in the same transaction the chains and sets of
   * its tables that it does not have or has in another kind; a set remade with the same key type (its flags or size
   * changed) keeps its elements, added back in that transaction; a set whose key type changed starts empty. Resolves
   * whether it changed anything (a second call changes nothing). The transaction carries the generation read before
   * the listing, so a write committed in between (an element added to a set it remakes) is never undone: the kernel
   * refuses the batch and reconcile lists and plans again, a few times (RECONCILE_ATTEMPTS), then rejects with the
   * retryable NftablesGenerationError (`ERESTART`), having applied nothing. Otherwise throws and rejects as verify
   * and apply do.
   */
  async reconcile(ruleset: NftRuleset): Promise<{ changed: boolean }> {
    return reconcileRuleset(this, checkRuleset(ruleset));
  }

  /**
   * remove deletes the ruleset's tables and its owned tables (with their chains, rules, sets and elements) in one
   * transaction; tables already gone are fine. Throws InvalidArgumentError for a malformed ruleset; rejects with
   * NftablesError when the kernel refuses (a rule elsewhere jumping into one, say), and then nothing changed.
   */
  async remove(ruleset: NftRuleset): Promise<void> {
    return removeRuleset(this, checkRuleset(ruleset));
  }
}
