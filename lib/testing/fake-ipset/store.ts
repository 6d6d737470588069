/**
 * SetStore holds the sets of one fake network namespace and applies the kernel's rules for them: slot indexes,
 * exists/missing checks in one place, references, and add/del/test of parsed elements with timeouts and extensions.
 */
import { ERRNO, IPSET_ERR, IPSET_MAX_SETS } from './constants.js';
import { type Entry, type SetState, entryKey, isExpired, maskAddr } from './model.js';
import type { Elem, Ext, Parsed } from './types.js';

/** SetStore is the set table of one fake namespace; commands.ts is its only writer. */
export class SetStore {
  /** Slot i holds the set with index i, as the kernel's ip_set_list array does. */
  readonly slots: (SetState | undefined)[] = [];
  readonly #byName = new Map<string, SetState>();

  constructor(readonly now: () => number) {}

  get(name: string): SetState | undefined {
    return this.#byName.get(name);
  }

  /** find is the one place that answers "missing set": the set, or ENOENT. */
  find(name: string): SetState | number {
    return this.#byName.get(name) ?? ERRNO.ENOENT;
  }

  all(): SetState[] {
    return this.slots.filter((s): s is SetState => s !== undefined);
  }

  /** freeIndex is the lowest unused slot (the kernel reuses destroyed slots). */
  freeIndex(): number {
    const i = this.slots.indexOf(undefined);
    if (i >= 0) return i;
    return this.slots.length < IPSET_MAX_SETS ? this.slots.length : -1;
  }

  insert(set: SetState): void {
    this.slots[set.index] = set;
    this.#byName.set(set.name, set);
  }

  /** destroy removes one set, or every set when name is undefined (none if any is referenced). */
  destroy(name: string | undefined): number {
    if (name === undefined) {
      if (this.all().some((s) => s.references > 0)) return IPSET_ERR.BUSY;
      this.slots.length = 0;
      this.#byName.clear();
      return 0;
    }
    const set = this.find(name);
    if (typeof set === 'number') return set;
    if (set.references > 0) return IPSET_ERR.BUSY;
    this.slots[set.index] = undefined;
    while (this.slots.length > 0 && this.slots[this.slots.length - 1] === undefined) this.slots.pop();
    this.#byName.delete(name);
    return 0;
  }

  rename(from: string, to: string): number {
    const set = this.find(from);
    if (typeof set === 'number') return set;
    if (set.references > 0) return IPSET_ERR.REFERENCED;
    if (this.#byName.has(to)) return IPSET_ERR.EXIST_SETNAME2;
    this.#byName.delete(from);
    set.name = to;
    this.#byName.set(to, set);
    return 0;
  }

  /**
   * swap exchanges the contents of two sets of the same type and family; names, indexes and references stay with
   * the slot (a rule that references the name keeps referencing it), as ip_set_swap does.
   */
  swap(a: string, b: string): number {
    const x = this.find(a);
    if (typeof x === 'number') return x;
    const y = this.#byName.get(b);
    if (!y) return IPSET_ERR.EXIST_SETNAME2;
    if (x.type !== y.type || x.family !== y.family) return IPSET_ERR.TYPE_MISMATCH;
    const keep = (s: SetState) => ({ name: s.name, index: s.index, references: s.references });
    const kx = keep(x);
    const ky = keep(y);
    const copy = { ...x };
    Object.assign(x, y, kx);
    Object.assign(y, copy, ky);
    return 0;
  }

  flush(set: SetState): void {
    set.entries.clear();
    set.cidrs.clear();
  }

  /** live drops expired entries of set, so counts and dumps see what the kernel lists. */
  live(set: SetState): void {
    if (set.timeout === undefined) return;
    const now = this.now();
    for (const [k, e] of set.entries) if (isExpired(e, now)) this.#remove(set, k, e);
  }

  #remove(set: SetState, key: string | number, e: Entry): void {
    set.entries.delete(key);
    if (set.type !== 'hash:net') return;
    const n = (set.cidrs.get(e.cidr) ?? 1) - 1;
    if (n === 0) set.cidrs.delete(e.cidr);
    else set.cidrs.set(e.cidr, n);
  }

  /**
   * add applies parsed elements in order and stops at the first failure (earlier ones stay). exist is "no
   * NLM_F_EXCL": a present element then has its extensions overwritten instead of failing.
   */
  add(set: SetState, parsed: Parsed, exist: boolean): number {
    const now = this.now();
    for (const el of parsed.elems) {
      const key = entryKey(set.type, el.addr, el.cidr, el.port, el.proto);
      const old = set.entries.get(key);
      if (old && !isExpired(old, now)) {
        if (!exist) return IPSET_ERR.EXIST;
        this.#overwrite(set, old, parsed.ext, parsed.nomatch, now);
        continue;
      }
      if (old) {
        // An expired element is reused in place by the kernel, extensions overwritten.
        this.#overwrite(set, old, parsed.ext, parsed.nomatch, now);
        continue;
      }
      if (set.entries.size >= set.maxelem) {
        this.live(set);
        if (set.entries.size >= set.maxelem) return IPSET_ERR.HASH_FULL;
      }
      const e = this.#newEntry(set, el, parsed.ext, parsed.nomatch, now);
      set.entries.set(key, e);
      if (set.type === 'hash:net') set.cidrs.set(el.cidr, (set.cidrs.get(el.cidr) ?? 0) + 1);
    }
    return 0;
  }

  #newEntry(set: SetState, el: Elem, ext: Ext, nomatch: boolean, now: number): Entry {
    const e: Entry = {
      addr: el.addr,
      cidr: el.cidr,
      port: el.port,
      proto: el.proto,
      nomatch,
      expires: undefined,
      bytes: 0n,
      packets: 0n,
      comment: undefined,
      commentBytes: undefined,
      skb: undefined,
    };
    this.#overwrite(set, e, ext, nomatch, now);
    return e;
  }

  #overwrite(set: SetState, e: Entry, ext: Ext, nomatch: boolean, now: number): void {
    e.nomatch = nomatch;
    if (set.timeout !== undefined) {
      const t = ext.timeout ?? set.timeout;
      e.expires = t === 0 ? undefined : now + t * 1000;
    }
    if (set.counters) {
      if (ext.bytes !== undefined) e.bytes = ext.bytes;
      if (ext.packets !== undefined) e.packets = ext.packets;
    }
    if (set.comment) {
      e.comment = ext.comment;
      e.commentBytes = undefined;
    }
    if (set.skbinfo) e.skb = { mark: ext.skbmark, prio: ext.skbprio, queue: ext.skbqueue };
  }

  /** del removes parsed elements in order; a missing one is IPSET_ERR_EXIST unless exist (then skipped). */
  del(set: SetState, parsed: Parsed, exist: boolean): number {
    const now = this.now();
    for (const el of parsed.elems) {
      const key = entryKey(set.type, el.addr, el.cidr, el.port, el.proto);
      const old = set.entries.get(key);
      if (!old || isExpired(old, now)) {
        if (!exist) return IPSET_ERR.EXIST;
        continue;
      }
      this.#remove(set, key, old);
    }
    return 0;
  }

  /**
   * test answers membership. For hash:net a host address (full prefix) is matched against every stored prefix
   * length, most specific first, and a nomatch entry answers "not a member" - unless the request itself carries
   * the nomatch flag, which inverts the answer for a found entry (checked against 6.18).
   */
  test(set: SetState, el: Elem, hostCidr: number, nomatch = false): boolean {
    const now = this.now();
    const probe = (key: string | number): Entry | undefined => {
      const e = set.entries.get(key);
      return e && !isExpired(e, now) ? e : undefined;
    };
    if (set.type === 'hash:net' && el.cidr === hostCidr) {
      const lengths = [...set.cidrs.keys()].sort((a, b) => b - a);
      for (const cidr of lengths) {
        const e = probe(entryKey(set.type, maskAddr(el.addr, cidr), cidr, 0, 0));
        if (e) return e.nomatch === nomatch;
      }
      return false;
    }
    const e = probe(entryKey(set.type, el.addr, el.cidr, el.port, el.proto));
    return e !== undefined && e.nomatch === nomatch;
  }
}
