/**
 * NftProbeSet: the host's pod-IP sets for kubelet probes as nft sets in the host's `inet istio-ambient-nat` table
 * (`<prefix>-v4` of type ipv4_addr, `<prefix>-v6` of type ipv6_addr, the reference's comment), the owning pod's UID
 * as each element's comment. The same API and ownership semantics as ProbeSet on ipset: adds are exclusive
 * (NLM_F_EXCL: the kernel detects an IP another pod still holds atomically, where the reference's nft mode silently
 * accepts the duplicate), the previous owner is read back from the element's comment, a takeover replaces the
 * element in one batch, and a removal deletes only when IP and owner match. Work on one IP is serialized inside the
 * process; like ProbeSet it assumes it is the only writer of its sets.
 */
import { isAlreadyExists, isNotFound } from '../errors.js';
import type { Nftables } from '../nftables/client.js';
import type { NftTableRef } from '../nftables/index.js';
import { silentLogger, type Logger } from '../logger.js';
import { checkString, invalidType, invalidValue } from '../validate.js';
import { ProbeOwnerConflictError } from './errors.js';
import { KeyedLock } from './keyed-lock.js';
import { NFT_TABLES, nftProbeSetNames, nftProbeSets } from './nft-rules.js';
import { normalizeIp, type AddOutcome, type ConflictPolicy, type ProbeConflict, type ProbeOwnerMismatch, type RemoveOutcome } from './probe-set.js';

/** The longest element comment the nftables client writes (libnftnl's user data record holds it with its NUL). */
const OWNER_MAX = 128;

/** NftProbeSetOptions configure an NftProbeSet: ProbeSetOptions with an Nftables client of the host instead of ipset. */
export interface NftProbeSetOptions {
  /** The client of the host namespace's nf_tables (the NftProbeSet does not close it). */
  nftables: Nftables;
  /** Set names are `<prefix>-v4` and `<prefix>-v6`; default 'istio-inpod-probes'. */
  prefix?: string;
  /** Also keep the IPv6 set (default true). */
  ipv6?: boolean;
  /** What add does with an IP another pod owns (default 'takeover'). */
  onConflict?: ConflictPolicy;
  /** Where conflicts, mismatches and listener failures are logged (default: nowhere). */
  logger?: Logger;
  /** Told of each takeover, once it is done (with the IP's lock held; what it throws is logged). */
  onConflictEvent?: (conflict: ProbeConflict) => void;
  /** Told of each removal refused for a wrong owner (what it throws is logged). */
  onOwnerMismatch?: (mismatch: ProbeOwnerMismatch) => void;
}

/**
 * NftProbeSet keeps the host's probe sets as nft sets with owner comments (see the module comment). The constructor
 * throws InvalidArgumentError (`ERR_INVALID_ARG_VALUE`, `ERR_INVALID_ARG_TYPE`) for a bad client, prefix or policy.
 */
export class NftProbeSet {
  /** v4Name is the IPv4 set's name. */
  readonly v4Name: string;
  /** v6Name is the IPv6 set's name (kept only when ipv6 is true). */
  readonly v6Name: string;
  /** ipv6 tells whether the IPv6 set is kept. */
  readonly ipv6: boolean;
  /** table is the host table the sets live in. */
  readonly table: NftTableRef = Object.freeze({ family: 'inet', name: NFT_TABLES.nat });
  readonly #prefix: string;
  readonly #nft: Nftables;
  readonly #policy: ConflictPolicy;
  readonly #log: Logger;
  readonly #onConflict: ((c: ProbeConflict) => void) | undefined;
  readonly #onMismatch: ((m: ProbeOwnerMismatch) => void) | undefined;
  readonly #owners = new Map<string, string>();
  readonly #lock = new KeyedLock();

  constructor(options: NftProbeSetOptions) {
    if (typeof options !== 'object' || options === null) throw invalidType('options', 'an object', options);
    const nft = options.nftables as unknown as Record<string, unknown> | undefined;
    if (typeof nft?.run !== 'function' || typeof nft?.elements !== 'function') throw invalidType('nftables', 'an Nftables client', options.nftables);
    this.#prefix = checkString('prefix', options.prefix ?? 'istio-inpod-probes', 28);
    const ipv6 = options.ipv6 ?? true;
    if (typeof ipv6 !== 'boolean') throw invalidType('ipv6', 'a boolean', ipv6);
    this.ipv6 = ipv6;
    const names = nftProbeSetNames(this.#prefix, true);
    this.v4Name = names.v4;
    this.v6Name = names.v6;
    this.#nft = options.nftables;
    const policy = options.onConflict ?? 'takeover';
    if (policy !== 'takeover' && policy !== 'error') throw invalidValue('onConflict', "'takeover' or 'error'", policy);
    this.#policy = policy;
    this.#log = options.logger ?? silentLogger;
    this.#onConflict = options.onConflictEvent;
    this.#onMismatch = options.onOwnerMismatch;
  }

  /** setNames are the sets this NftProbeSet keeps. */
  get setNames(): string[] {
    return this.ipv6 ? [this.v4Name, this.v6Name] : [this.v4Name];
  }

  #setFor(family: 4 | 6): string {
    if (family === 6 && !this.ipv6) throw invalidValue('ip', 'an IPv4 address (IPv6 is off)', family);
    return family === 4 ? this.v4Name : this.v6Name;
  }

  /**
   * ensure creates the table and the sets in one transaction; existing ones are accepted (nft's `add`). Rejects with
   * NftablesError when the kernel refuses (a set of that name with another type).
   */
  async ensure(): Promise<void> {
    const tx = this.#nft.transaction().addTable(this.table);
    for (const set of nftProbeSets(this.#prefix, this.ipv6)) tx.addSet(set);
    await this.#nft.run(tx);
  }

  /** load replaces the owner view with what the kernel holds. Rejects with NftablesError (`ENOENT`: a set is missing). */
  async load(): Promise<void> {
    const next = new Map<string, string>();
    for (const name of this.setNames) {
      for (const e of await this.#nft.elements(this.table, name)) next.set(e.address, e.comment ?? '');
    }
    this.#owners.clear();
    for (const [ip, owner] of next) this.#owners.set(ip, owner);
  }

  /** owner is the UID owning ip ('' for an element without comment), or undefined when ip is not in the sets. */
  owner(ip: string): string | undefined {
    return this.#owners.get(normalizeIp(ip).ip);
  }

  /** entries lists the view: every IP with its owner. */
  entries(): { ip: string; owner: string }[] {
    return [...this.#owners].map(([ip, owner]) => ({ ip, owner }));
  }

  /**
   * add puts ip in the set of its family for owner. Same owner: nothing to do. Another owner: with 'takeover' the
   * element is replaced (in one batch) and the conflict reported; with 'error' it rejects with
   * ProbeOwnerConflictError (`ERR_PROBE_OWNER_CONFLICT`) and changes nothing. Throws InvalidArgumentError for a bad
   * ip or owner (an IPv6 address when ipv6 is off too); rejects with NftablesError when the kernel refuses.
   */
  async add(ip: string, owner: string): Promise<AddOutcome> {
    const { ip: addr, family } = normalizeIp(ip);
    checkString('owner', owner, OWNER_MAX);
    const set = this.#setFor(family);
    return this.#lock.run(addr, async () => {
      try {
        await this.#nft.addElement(this.table, set, { address: addr, comment: owner });
        this.#owners.set(addr, owner);
        this.#log.debug('probe entry added', { ip: addr, pod: owner, set });
        return 'added';
      } catch (err) {
        if (!isAlreadyExists(err)) throw err;
      }
      // The kernel's word: the element's comment (one GET of that element, no dump).
      const found = await this.#nft.testElement(this.table, set, addr);
      const previous = found === undefined ? this.#owners.get(addr) : (found.comment ?? '');
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
      await this.#nft.addElement(this.table, set, { address: addr, comment: owner }, { replace: true });
      this.#owners.set(addr, owner);
      this.#log.warn('probe entry taken over from another pod', { ip: addr, pod: owner, set, previousOwner: conflict.previousOwner });
      this.#tell('conflict', this.#onConflict, conflict);
      return 'taken-over';
    });
  }

  /**
   * remove deletes ip only when owner owns it; a mismatch is reported (logged and passed to onOwnerMismatch), never
   * thrown. Throws InvalidArgumentError for a bad ip or owner; rejects with NftablesError when the kernel fails the
   * delete (an element already gone is fine).
   */
  async remove(ip: string, owner: string): Promise<RemoveOutcome> {
    const { ip: addr, family } = normalizeIp(ip);
    checkString('owner', owner, OWNER_MAX);
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
      try {
        await this.#nft.deleteElement(this.table, set, { address: addr });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      this.#owners.delete(addr);
      this.#log.debug('probe entry removed', { ip: addr, pod: owner, set });
      return 'removed';
    });
  }

  /**
   * prune removes every element whose IP is not in keep (a set of normalized addresses); returns what it removed.
   * Rejects with NftablesError when the kernel fails a delete (the other deletes still go ahead).
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

  /** #tell calls a listener of what already happened; its throw is logged, never turned into a failure. */
  #tell<T extends { ip: string }>(event: string, listener: ((value: T) => void) | undefined, value: T): void {
    if (!listener) return;
    try {
      listener(value);
    } catch (err) {
      this.#log.error(`a '${event}' listener threw: ${err instanceof Error ? err.message : String(err)}`, { ip: value.ip, error: err });
    }
  }
}
