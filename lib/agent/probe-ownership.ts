/**
 * ProbeOwnership: the ownership rules of the host's probe sets, kept once for every kind of set that holds them
 * (ipset for ProbeSet, nft sets for NftProbeSet). A ProbeStore says how a set is written and read; this module says
 * what an add, a removal, a load and a prune mean for who owns an IP.
 *
 * Ownership, not overwrite: adds are exclusive, so the kernel detects an IP that another pod still holds atomically;
 * the conflict is then resolved by policy and reported, never silently. A removal deletes an entry only when IP and
 * owner match. Work on one IP is serialized inside the process.
 *
 * The view of owners is loaded from the kernel by load(), updated by its own writes, and refreshed from the kernel
 * for an IP whenever the kernel disagrees. A write whose answer was lost (a timed-out add) leaves an entry the view
 * never saw, so what must hold for the sets themselves (prune, held) reads the sets, not the view. It assumes it is
 * the only writer of its sets, as the node agent is.
 */
import { isAlreadyExists } from '../errors.js';
import { formatIp, parseIp, unmapIpv4 } from '../address/index.js';
import { silentLogger, type Logger } from '../logger.js';
import { checkString, invalidValue } from '../validate.js';
import { ProbeOwnerConflictError } from './errors.js';
import { KeyedLock } from './keyed-lock.js';

/**
 * ConflictPolicy says what ProbeSet.add does with an IP another pod owns: 'takeover' replaces the entry and reports
 * the conflict, 'error' rejects with ProbeOwnerConflictError and changes nothing.
 */
export type ConflictPolicy = 'takeover' | 'error';

/** ProbeConflict is a takeover: ip was owned by previousOwner when newOwner claimed it. */
export interface ProbeConflict {
  /** The IP address (IPv4-mapped IPv6 unmapped). */
  ip: string;
  /** The UID of the pod that held the IP. */
  previousOwner: string;
  /** The UID of the pod that claimed it. */
  newOwner: string;
}

/** ProbeOwnerMismatch is a removal that did not happen because someone else owns the entry (or nobody does). */
export interface ProbeOwnerMismatch {
  /** The IP address. */
  ip: string;
  /** The UID the removal was asked for. */
  owner: string;
  /** The UID that holds the entry, or undefined when nobody does. */
  actualOwner: string | undefined;
}

/** AddOutcome is what ProbeSet.add did: a new entry, nothing (same owner), or a takeover from another owner. */
export type AddOutcome = 'added' | 'unchanged' | 'taken-over';
/** RemoveOutcome is what ProbeSet.remove did: deleted, refused for another owner, or nothing to delete. */
export type RemoveOutcome = 'removed' | 'mismatch' | 'missing';

/**
 * normalizeIp unmaps IPv4-mapped IPv6 and returns the address in canonical form (RFC 5952 for IPv6, as the kernel
 * lists it) with its family, or throws ERR_INVALID_ARG_VALUE.
 */
export function normalizeIp(ip: unknown, name = 'ip'): { ip: string; family: 4 | 6 } {
  checkString(name, ip, 64);
  const parsed = parseIp(unmapIpv4(ip as string));
  if (!parsed) throw invalidValue(name, 'an IPv4 or IPv6 address', ip);
  // One spelling per address, so an IP a pod names and the same IP the kernel lists compare equal.
  return { ip: formatIp(parsed.family, parsed.bytes), family: parsed.family };
}

/** ProbeStore is how one kind of kernel set holds probe entries, the owner's UID as each entry's comment. */
export interface ProbeStore {
  /**
   * add writes ip into set with owner as its comment. Without replace it is exclusive: an ip already in the set
   * rejects with an error isAlreadyExists accepts. Other rejections are the kernel's and pass through.
   */
  add(set: string, ip: string, owner: string, replace: boolean): Promise<void>;
  /**
   * conflictOwner is who holds ip in set after an exclusive add found it there, given what the view says (viewed).
   * Each store weighs the view against a kernel read by what that read costs.
   */
  conflictOwner(set: string, ip: string, viewed: string | undefined): Promise<string | undefined>;
  /** delete removes ip from set; an ip already gone is no error. */
  delete(set: string, ip: string): Promise<void>;
  /** list yields every entry of set with its owner ('' for an entry without comment); rejects when set is missing. */
  list(set: string): AsyncIterable<{ ip: string; owner: string }>;
}

/** ProbeSetCommonOptions are the options every probe set class takes, whatever kernel set holds its entries. */
export interface ProbeSetCommonOptions {
  /** Set names are `<prefix>-v4` and `<prefix>-v6`; default 'istio-inpod-probes'. */
  prefix?: string;
  /** Also keep the IPv6 set (default true). */
  ipv6?: boolean;
  /** What add does with an IP another pod owns (default 'takeover'). */
  onConflict?: ConflictPolicy;
  /** Where conflicts, mismatches and listener failures are logged (default: nowhere). */
  logger?: Logger;
  /**
   * Told of each takeover, once it is done. Called with the IP's lock held: it may call the probe set (the calls
   * wait their turn), and what it throws is logged as an error, never turned into a failure of the add that did
   * take over.
   */
  onConflictEvent?: (conflict: ProbeConflict) => void;
  /** Told of each removal refused for a wrong owner; what it throws is logged too, as for onConflictEvent. */
  onOwnerMismatch?: (mismatch: ProbeOwnerMismatch) => void;
}

/** ProbeOwnershipOptions are what a probe set class has checked and hands to ProbeOwnership's constructor. */
export interface ProbeOwnershipOptions extends Omit<ProbeSetCommonOptions, 'prefix' | 'ipv6'> {
  /** Where the entries live. */
  store: ProbeStore;
  /** The prefix of the set names: the sets are `<prefix>-v4` and `<prefix>-v6` (checked here: 1 to 28 bytes). */
  prefix: string;
  /** Whether the IPv6 set is kept. */
  ipv6: boolean;
  /** The longest owner the store can keep as a comment, in bytes. */
  ownerMax: number;
}

/**
 * ProbeOwnership is the one ownership core of the probe set classes (ProbeSet on ipset, NftProbeSet on nft sets): it
 * keeps the owner view of a set pair and enforces ownership on its ProbeStore (see the module comment); a subclass
 * says how the sets are created (ensure) and which store holds their entries. The constructor throws
 * InvalidArgumentError (`ERR_INVALID_ARG_VALUE`, `ERR_INVALID_ARG_TYPE`) for a bad prefix or onConflict policy.
 * Every rejection of the store passes through: IpsetError for ProbeSet, NftablesError for NftProbeSet (`ENOENT`
 * when a set is missing).
 */
export abstract class ProbeOwnership {
  /** ProbeOwnership.v4Name is the IPv4 set's name. */
  readonly v4Name: string;
  /** ProbeOwnership.v6Name is the IPv6 set's name (kept only when ipv6 is true). */
  readonly v6Name: string;
  /** ProbeOwnership.ipv6 tells whether the IPv6 set is kept. */
  readonly ipv6: boolean;
  readonly #store: ProbeStore;
  readonly #ownerMax: number;
  readonly #policy: ConflictPolicy;
  readonly #log: Logger;
  readonly #onConflict: ((c: ProbeConflict) => void) | undefined;
  readonly #onMismatch: ((m: ProbeOwnerMismatch) => void) | undefined;
  readonly #owners = new Map<string, string>();
  readonly #lock = new KeyedLock();
  /** The IPs the view changed for while each running read of the sets was under way (see #read). */
  readonly #reads = new Set<Set<string>>();

  constructor(options: ProbeOwnershipOptions) {
    const prefix = checkString('prefix', options.prefix, 28);
    this.#store = options.store;
    this.v4Name = `${prefix}-v4`;
    this.v6Name = `${prefix}-v6`;
    this.ipv6 = options.ipv6;
    this.#ownerMax = options.ownerMax;
    const policy = options.onConflict ?? 'takeover';
    if (policy !== 'takeover' && policy !== 'error') throw invalidValue('onConflict', "'takeover' or 'error'", policy);
    this.#policy = policy;
    this.#log = options.logger ?? silentLogger;
    this.#onConflict = options.onConflictEvent;
    this.#onMismatch = options.onOwnerMismatch;
  }

  /**
   * ProbeOwnership.ensure creates the sets; existing ones of the same type are accepted. Rejects with the store's
   * error class when the kernel refuses (a set of that name with another type).
   */
  abstract ensure(): Promise<void>;

  /** ProbeOwnership.setNames are the sets kept. */
  get setNames(): string[] {
    return this.ipv6 ? [this.v4Name, this.v6Name] : [this.v4Name];
  }

  #setFor(family: 4 | 6): string {
    if (family === 6 && !this.ipv6) throw invalidValue('ip', 'an IPv4 address (IPv6 is off)', family);
    return family === 4 ? this.v4Name : this.v6Name;
  }

  /** ProbeOwnership.load replaces the owner view with what the kernel holds; rejects as the store's list does. */
  async load(): Promise<void> {
    await this.#read();
  }

  /**
   * ProbeOwnership.held lists what the sets hold, every IP with its owner, and brings the view in line with it;
   * rejects as the store's list does.
   */
  async held(): Promise<{ ip: string; owner: string }[]> {
    return [...(await this.#read())].map(([ip, owner]) => ({ ip, owner }));
  }

  /**
   * #read lists the sets and makes the view what they hold, except for the IPs the view changed for during the
   * listing: those writes happened after the entries were read, so the view knows better.
   */
  async #read(): Promise<Map<string, string>> {
    const changed = new Set<string>();
    this.#reads.add(changed);
    const next = new Map<string, string>();
    try {
      for (const name of this.setNames) {
        for await (const e of this.#store.list(name)) next.set(normalizeIp(e.ip).ip, e.owner);
      }
    } finally {
      this.#reads.delete(changed);
    }
    for (const ip of this.#owners.keys()) if (!next.has(ip) && !changed.has(ip)) this.#owners.delete(ip);
    for (const [ip, owner] of next) if (!changed.has(ip)) this.#owners.set(ip, owner);
    return next;
  }

  /** #setOwner and #forget change the view, and tell the reads under way which IP changed. */
  #setOwner(ip: string, owner: string): void {
    this.#owners.set(ip, owner);
    for (const changed of this.#reads) changed.add(ip);
  }

  #forget(ip: string): void {
    this.#owners.delete(ip);
    for (const changed of this.#reads) changed.add(ip);
  }

  /**
   * ProbeOwnership.owner is the UID owning ip ('' for an entry without comment), or undefined when ip is not in the
   * sets, as the view has it. Throws InvalidArgumentError when ip is not an IP address.
   */
  owner(ip: string): string | undefined {
    return this.#owners.get(normalizeIp(ip).ip);
  }

  /** ProbeOwnership.entries lists the view: every IP with its owner. */
  entries(): { ip: string; owner: string }[] {
    return [...this.#owners].map(([ip, owner]) => ({ ip, owner }));
  }

  /**
   * ProbeOwnership.add claims ip for owner: added, unchanged (same owner), or by policy taken over or refused with
   * ProbeOwnerConflictError. Throws InvalidArgumentError for a bad ip or owner; rejects as the store does.
   */
  async add(ip: string, owner: string): Promise<AddOutcome> {
    const { ip: addr, family } = normalizeIp(ip);
    checkString('owner', owner, this.#ownerMax);
    const set = this.#setFor(family);
    return this.#lock.run(addr, async () => {
      try {
        await this.#store.add(set, addr, owner, false);
        this.#setOwner(addr, owner);
        this.#log.debug('probe entry added', { ip: addr, pod: owner, set });
        return 'added';
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      const previous = await this.#store.conflictOwner(set, addr, this.#owners.get(addr));
      if (previous === owner) {
        this.#setOwner(addr, owner);
        return 'unchanged';
      }
      const conflict: ProbeConflict = { ip: addr, previousOwner: previous ?? '', newOwner: owner };
      if (this.#policy === 'error') {
        if (previous !== undefined) this.#setOwner(addr, previous);
        this.#log.warn('probe entry owned by another pod', { ip: addr, pod: owner, set, previousOwner: conflict.previousOwner });
        throw new ProbeOwnerConflictError(addr, conflict.previousOwner, owner);
      }
      await this.#store.add(set, addr, owner, true);
      this.#setOwner(addr, owner);
      this.#log.warn('probe entry taken over from another pod', { ip: addr, pod: owner, set, previousOwner: conflict.previousOwner });
      this.#tell('conflict', this.#onConflict, conflict);
      return 'taken-over';
    });
  }

  /**
   * ProbeOwnership.remove deletes ip only when owner owns it; a mismatch is reported, never thrown. Throws
   * InvalidArgumentError for a bad ip or owner; rejects as the store's delete does.
   */
  async remove(ip: string, owner: string): Promise<RemoveOutcome> {
    const { ip: addr, family } = normalizeIp(ip);
    checkString('owner', owner, this.#ownerMax);
    const set = this.#setFor(family);
    return this.#lock.run(addr, async () => {
      const actual = this.#owners.get(addr);
      if (actual !== owner) {
        const mismatch: ProbeOwnerMismatch = { ip: addr, owner, actualOwner: actual };
        this.#log.warn(actual === undefined ? 'probe entry already gone' : 'probe entry owned by another pod: not removed', {
          ip: addr,
          pod: owner,
          set,
          actualOwner: actual,
        });
        if (actual !== undefined) this.#tell('ownerMismatch', this.#onMismatch, mismatch);
        return actual === undefined ? 'missing' : 'mismatch';
      }
      await this.#store.delete(set, addr);
      this.#forget(addr);
      this.#log.debug('probe entry removed', { ip: addr, pod: owner, set });
      return 'removed';
    });
  }

  /**
   * ProbeOwnership.prune removes every entry whose IP is not in keep (normalized addresses), as the sets hold them
   * (an entry the view never saw too), and returns what it removed; each IP's delete waits for the work already
   * queued on that IP. Rejects with the first failed delete once every other delete has settled.
   */
  async prune(keep: ReadonlySet<string>): Promise<{ ip: string; owner: string }[]> {
    const held = await this.#read();
    const unclaimed = new Set([...held.keys(), ...this.#owners.keys()].filter((ip) => !keep.has(ip)));
    const removed: { ip: string; owner: string }[] = [];
    const results = await Promise.allSettled(
      [...unclaimed].map((ip) =>
        this.#lock.run(ip, async () => {
          const owner = this.#owners.get(ip) ?? held.get(ip) ?? '';
          const set = this.#setFor(normalizeIp(ip).family);
          await this.#store.delete(set, ip);
          this.#forget(ip);
          this.#log.debug('probe entry pruned', { ip, pod: owner, set });
          removed.push({ ip, owner });
        }),
      ),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    return removed;
  }

  /**
   * #tell calls a listener of what already happened. Its throw is its own bug: logged, and the operation still
   * reports what it did (a takeover that failed the add after changing the entry would be a failure that changed
   * state).
   */
  #tell<T extends { ip: string }>(event: string, listener: ((value: T) => void) | undefined, value: T): void {
    if (!listener) return;
    try {
      listener(value);
    } catch (err) {
      this.#log.error(`a '${event}' listener threw: ${err instanceof Error ? err.message : String(err)}`, { ip: value.ip, error: err });
    }
  }
}
