/**
 * ProbeSet: the host's pod-IP sets for kubelet probes, one hash:ip set per
 * family with the owning pod's UID as each entry's comment.
 *
 * Ownership, not overwrite: adds are exclusive, so the kernel detects an IP
 * that another pod still holds atomically; the conflict is then resolved by
 * policy and reported, never silently. A removal deletes an entry only when
 * IP and owner match. Work on one IP is serialized inside the process.
 *
 * ProbeSet keeps a view of owners (loaded from the kernel by load(), updated
 * by its own writes, refreshed from the kernel for an IP whenever the kernel
 * disagrees). It assumes it is the only writer of its sets, as the node
 * agent is.
 */
import { isAlreadyExists } from '../errors.js';
import type { Ipset } from '../ipset/client.js';
import { parseIp, unmapIpv4 } from '../ipset/address.js';
import { invalidValue, checkString } from '../validate.js';
import { ProbeOwnerConflictError } from './errors.js';
import { KeyedLock } from './keyed-lock.js';
import { silentLogger, type Logger } from '../logger.js';

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

/** ProbeSetOptions configure a ProbeSet: the ipset client it writes through, its set names and its conflict policy. */
export interface ProbeSetOptions {
  /** The client of the host namespace's ipset (the ProbeSet does not close it). */
  ipset: Ipset;
  /** Set names are `<prefix>-v4` and `<prefix>-v6`; default 'istio-inpod-probes'. */
  prefix?: string;
  /** Also keep the IPv6 set (default true). */
  ipv6?: boolean;
  /** What add does with an IP another pod owns (default 'takeover'). */
  onConflict?: ConflictPolicy;
  /** Where conflicts, mismatches and listener failures are logged (default: nowhere). */
  logger?: Logger;
  /**
   * Told of each takeover, once it is done. Called with the IP's lock held: it may call the ProbeSet (the calls
   * wait their turn), and what it throws is logged as an error, never turned into a failure of the add that did
   * take over.
   */
  onConflictEvent?: (conflict: ProbeConflict) => void;
  /** Told of each removal refused for a wrong owner; what it throws is logged too, as for onConflictEvent. */
  onOwnerMismatch?: (mismatch: ProbeOwnerMismatch) => void;
}

/** AddOutcome is what ProbeSet.add did: a new entry, nothing (same owner), or a takeover from another owner. */
export type AddOutcome = 'added' | 'unchanged' | 'taken-over';
/** RemoveOutcome is what ProbeSet.remove did: deleted, refused for another owner, or nothing to delete. */
export type RemoveOutcome = 'removed' | 'mismatch' | 'missing';

/** normalizeIp unmaps IPv4-mapped IPv6 and returns the address with its family, or throws ERR_INVALID_ARG_VALUE. */
export function normalizeIp(ip: unknown, name = 'ip'): { ip: string; family: 4 | 6 } {
  checkString(name, ip, 64);
  const unmapped = unmapIpv4(ip as string);
  const parsed = parseIp(unmapped);
  if (!parsed) throw invalidValue(name, 'an IPv4 or IPv6 address', ip);
  return { ip: unmapped, family: parsed.family };
}

/**
 * ProbeSet keeps the host's pod-IP sets for kubelet probes (`<prefix>-v4`, `<prefix>-v6`, hash:ip with comments), the
 * owning pod's UID as each entry's comment. Adds are exclusive in the kernel, so a conflict with another owner is
 * detected atomically and resolved by its ConflictPolicy; removals happen only when the owner matches. It assumes it
 * is the only writer of its sets. The constructor throws InvalidArgumentError (`ERR_INVALID_ARG_VALUE`,
 * `ERR_INVALID_ARG_TYPE`) for a bad prefix or policy.
 */
export class ProbeSet {
  /** v4Name is the IPv4 set's name. */
  readonly v4Name: string;
  /** v6Name is the IPv6 set's name (kept only when ipv6 is true). */
  readonly v6Name: string;
  /** ipv6 tells whether the IPv6 set is kept. */
  readonly ipv6: boolean;
  readonly #ipset: Ipset;
  readonly #policy: ConflictPolicy;
  readonly #log: Logger;
  readonly #onConflict: ((c: ProbeConflict) => void) | undefined;
  readonly #onMismatch: ((m: ProbeOwnerMismatch) => void) | undefined;
  readonly #owners = new Map<string, string>();
  readonly #lock = new KeyedLock();

  constructor(options: ProbeSetOptions) {
    const prefix = options.prefix ?? 'istio-inpod-probes';
    checkString('prefix', prefix, 28);
    this.v4Name = `${prefix}-v4`;
    this.v6Name = `${prefix}-v6`;
    this.ipv6 = options.ipv6 ?? true;
    this.#ipset = options.ipset;
    const policy = options.onConflict ?? 'takeover';
    if (policy !== 'takeover' && policy !== 'error') throw invalidValue('onConflict', "'takeover' or 'error'", policy);
    this.#policy = policy;
    this.#log = options.logger ?? silentLogger;
    this.#onConflict = options.onConflictEvent;
    this.#onMismatch = options.onOwnerMismatch;
  }

  /** setNames are the sets this ProbeSet keeps. */
  get setNames(): string[] {
    return this.ipv6 ? [this.v4Name, this.v6Name] : [this.v4Name];
  }

  #setFor(family: 4 | 6): string {
    if (family === 6 && !this.ipv6) throw invalidValue('ip', 'an IPv4 address (IPv6 is off)', family);
    return family === 4 ? this.v4Name : this.v6Name;
  }

  /**
   * ensure creates the sets; an existing set of the same type and options is accepted. Rejects with IpsetError
   * (`IPSET_ERR_TYPE_MISMATCH` and the like when a set of that name exists with other options).
   */
  async ensure(): Promise<void> {
    await this.#ipset.create(this.v4Name, { type: 'hash:ip', family: 'inet', comment: true }, { exist: true });
    if (this.ipv6) await this.#ipset.create(this.v6Name, { type: 'hash:ip', family: 'inet6', comment: true }, { exist: true });
  }

  /** load replaces the owner view with what the kernel holds. Rejects with IpsetError (`ENOENT`: a set is missing). */
  async load(): Promise<void> {
    const next = new Map<string, string>();
    for (const name of this.setNames) {
      for await (const e of this.#ipset.entries(name)) next.set(e.ip, e.comment ?? '');
    }
    this.#owners.clear();
    for (const [ip, owner] of next) this.#owners.set(ip, owner);
  }

  /**
   * owner is the UID owning ip ('' for an entry without comment), or undefined when ip is not in the sets. Throws
   * InvalidArgumentError when ip is not an IP address.
   */
  owner(ip: string): string | undefined {
    return this.#owners.get(normalizeIp(ip).ip);
  }

  /** entries lists the view: every IP with its owner. */
  entries(): { ip: string; owner: string }[] {
    return [...this.#owners].map(([ip, owner]) => ({ ip, owner }));
  }

  /**
   * add puts ip in the set of its family for owner. Same owner: nothing to do. Another owner: with 'takeover' the
   * entry is replaced and the conflict reported; with 'error' it rejects with ProbeOwnerConflictError
   * (`ERR_PROBE_OWNER_CONFLICT`) and changes nothing. Throws InvalidArgumentError for a bad ip or owner (an IPv6
   * address when ipv6 is off too); rejects with IpsetError when the kernel refuses the entry.
   */
  async add(ip: string, owner: string): Promise<AddOutcome> {
    const { ip: addr, family } = normalizeIp(ip);
    checkString('owner', owner, 255);
    const set = this.#setFor(family);
    return this.#lock.run(addr, async () => {
      try {
        await this.#ipset.add(set, { ip: addr, comment: owner });
        this.#owners.set(addr, owner);
        this.#log.debug('probe entry added', { ip: addr, pod: owner, set });
        return 'added';
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      // The view knows the owner of every entry this (single) writer made or loaded; only an entry it has never
      // seen costs a dump of the set. (A restarted agent re-syncing 10k pods stays linear.)
      const previous = this.#owners.get(addr) ?? (await this.#kernelOwner(set, addr));
      if (previous === owner) {
        this.#owners.set(addr, owner);
        return 'unchanged';
      }
      const conflict: ProbeConflict = { ip: addr, previousOwner: previous ?? '', newOwner: owner };
      if (this.#policy === 'error') {
        if (previous !== undefined) this.#owners.set(addr, previous);
        this.#log.warn('probe entry owned by another pod', { ip: addr, pod: owner, set, previousOwner: conflict.previousOwner });
        throw new ProbeOwnerConflictError(addr, conflict.previousOwner, owner);
      }
      await this.#ipset.add(set, { ip: addr, comment: owner }, { replace: true });
      this.#owners.set(addr, owner);
      this.#log.warn('probe entry taken over from another pod', { ip: addr, pod: owner, set, previousOwner: conflict.previousOwner });
      this.#tell('conflict', this.#onConflict, conflict);
      return 'taken-over';
    });
  }

  /**
   * remove deletes ip only when owner owns it; a mismatch is reported (logged and passed to onOwnerMismatch), never
   * thrown. Throws InvalidArgumentError for a bad ip or owner; rejects with IpsetError when the kernel fails the delete.
   */
  async remove(ip: string, owner: string): Promise<RemoveOutcome> {
    const { ip: addr, family } = normalizeIp(ip);
    checkString('owner', owner, 255);
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
      await this.#ipset.del(set, { ip: addr }, { ignoreMissing: true });
      this.#owners.delete(addr);
      this.#log.debug('probe entry removed', { ip: addr, pod: owner, set });
      return 'removed';
    });
  }

  /**
   * prune removes every entry whose IP is not in keep (an IP set of normalized addresses); returns what it removed.
   * Rejects with IpsetError when the kernel fails a delete (the other deletes still go ahead).
   */
  async prune(keep: ReadonlySet<string>): Promise<{ ip: string; owner: string }[]> {
    const removed: { ip: string; owner: string }[] = [];
    await Promise.all(
      [...this.#owners].map(([ip, owner]) => {
        if (keep.has(ip)) return undefined;
        return this.remove(ip, owner).then((outcome) => {
          if (outcome === 'removed') removed.push({ ip, owner });
        });
      }),
    );
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

  /** The kernel's word on who owns ip (a dump of its set; conflicts are rare). */
  async #kernelOwner(set: string, ip: string): Promise<string | undefined> {
    for await (const e of this.#ipset.entries(set)) {
      if (e.ip === ip) return e.comment ?? '';
    }
    return undefined;
  }
}
