/**
 * NftProbeSet: the host's pod-IP sets for kubelet probes as nft sets in the host's `inet istio-ambient-nat` table
 * (`<prefix>-v4` of type ipv4_addr, `<prefix>-v6` of type ipv6_addr, the reference's comment), the owning pod's UID
 * as each element's comment. The same API and ownership semantics as ProbeSet on ipset (probe-ownership.ts keeps
 * them for both): adds are exclusive (NLM_F_EXCL: the kernel detects an IP another pod still holds atomically, where
 * the reference's nft mode silently accepts the duplicate), the previous owner is read back from the element's
 * comment, a takeover replaces the element in one batch, and a removal deletes only when IP and owner match. Work on
 * one IP is serialized inside the process; like ProbeSet it assumes it is the only writer of its sets.
 */
import { isNotFound } from '../errors.js';
import type { Nftables } from '../nftables/client.js';
import type { NftTableRef } from '../nftables/index.js';
import type { Logger } from '../logger.js';
import { checkString, invalidType } from '../validate.js';
import { NFT_TABLES, nftProbeSetNames, nftProbeSets } from './nft-rules.js';
import {
  ProbeOwnership,
  type AddOutcome,
  type ConflictPolicy,
  type ProbeConflict,
  type ProbeOwnerMismatch,
  type ProbeStore,
  type RemoveOutcome,
} from './probe-ownership.js';

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
  readonly #core: ProbeOwnership;

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
    const store = nftStore(this.#nft, this.table);
    this.#core = new ProbeOwnership({ ...options, store, v4Name: this.v4Name, v6Name: this.v6Name, ipv6, ownerMax: OWNER_MAX });
  }

  /** setNames are the sets this NftProbeSet keeps. */
  get setNames(): string[] {
    return this.#core.setNames;
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
  load(): Promise<void> {
    return this.#core.load();
  }

  /** owner is the UID owning ip ('' for an element without comment), or undefined when ip is not in the sets. */
  owner(ip: string): string | undefined {
    return this.#core.owner(ip);
  }

  /**
   * held lists what the sets hold (not the view: an entry whose add timed out is there too), every IP with its
   * owner, and brings the view in line with it. Rejects with NftablesError (`ENOENT`: a set is missing).
   */
  held(): Promise<{ ip: string; owner: string }[]> {
    return this.#core.held();
  }

  /** entries lists the view: every IP with its owner. */
  entries(): { ip: string; owner: string }[] {
    return this.#core.entries();
  }

  /**
   * add puts ip in the set of its family for owner. Same owner: nothing to do. Another owner: with 'takeover' the
   * element is replaced (in one batch) and the conflict reported; with 'error' it rejects with
   * ProbeOwnerConflictError (`ERR_PROBE_OWNER_CONFLICT`) and changes nothing. Throws InvalidArgumentError for a bad
   * ip or owner (an IPv6 address when ipv6 is off too); rejects with NftablesError when the kernel refuses.
   */
  add(ip: string, owner: string): Promise<AddOutcome> {
    return this.#core.add(ip, owner);
  }

  /**
   * remove deletes ip only when owner owns it; a mismatch is reported (logged and passed to onOwnerMismatch), never
   * thrown. Throws InvalidArgumentError for a bad ip or owner; rejects with NftablesError when the kernel fails the
   * delete (an element already gone is fine).
   */
  remove(ip: string, owner: string): Promise<RemoveOutcome> {
    return this.#core.remove(ip, owner);
  }

  /**
   * prune removes every element whose IP is not in keep (a set of normalized addresses), as the sets hold them (an
   * element whose add timed out too); returns what it removed. Rejects with NftablesError when the kernel fails the
   * listing or a delete (the other deletes still go ahead).
   */
  prune(keep: ReadonlySet<string>): Promise<{ ip: string; owner: string }[]> {
    return this.#core.prune(keep);
  }
}

/** nftStore holds probe entries as elements of nft sets in table, the owner as each element's comment. */
function nftStore(nft: Nftables, table: NftTableRef): ProbeStore {
  return {
    add: (set, ip, owner, replace) => nft.addElement(table, set, { address: ip, comment: owner }, replace ? { replace: true } : undefined),
    // The kernel's word: the element's comment (one GET of that element, no dump).
    async conflictOwner(set, ip, viewed) {
      const found = await nft.testElement(table, set, ip);
      return found === undefined ? viewed : (found.comment ?? '');
    },
    async delete(set, ip) {
      try {
        await nft.deleteElement(table, set, { address: ip });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },
    async *list(set) {
      for (const e of await nft.elements(table, set)) yield { ip: e.address, owner: e.comment ?? '' };
    },
  };
}
