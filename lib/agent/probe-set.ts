/**
 * ProbeSet: the host's pod-IP sets for kubelet probes, one hash:ip set per family with the owning pod's UID as each
 * entry's comment. The ownership rules (exclusive adds, conflicts resolved by policy and reported, removals only when
 * IP and owner match, one IP's work serialized, a view of owners refreshed from the kernel when it disagrees) are
 * probe-ownership.ts's, shared with NftProbeSet; this module says how ipset holds the entries. It assumes it is the
 * only writer of its sets, as the node agent is.
 */
import type { Ipset } from '../ipset/client.js';
import type { Logger } from '../logger.js';
import { checkString } from '../validate.js';
import {
  ProbeOwnership,
  type AddOutcome,
  type ConflictPolicy,
  type ProbeConflict,
  type ProbeOwnerMismatch,
  type ProbeStore,
  type RemoveOutcome,
} from './probe-ownership.js';

export { normalizeIp, type AddOutcome, type ConflictPolicy, type ProbeConflict, type ProbeOwnerMismatch, type RemoveOutcome } from './probe-ownership.js';

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
  readonly #core: ProbeOwnership;

  constructor(options: ProbeSetOptions) {
    const prefix = options.prefix ?? 'istio-inpod-probes';
    checkString('prefix', prefix, 28);
    this.v4Name = `${prefix}-v4`;
    this.v6Name = `${prefix}-v6`;
    this.ipv6 = options.ipv6 ?? true;
    this.#ipset = options.ipset;
    const { v4Name, v6Name, ipv6 } = this;
    this.#core = new ProbeOwnership({ ...options, store: ipsetStore(options.ipset), v4Name, v6Name, ipv6, ownerMax: 255 });
  }

  /** setNames are the sets this ProbeSet keeps. */
  get setNames(): string[] {
    return this.#core.setNames;
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
  load(): Promise<void> {
    return this.#core.load();
  }

  /**
   * owner is the UID owning ip ('' for an entry without comment), or undefined when ip is not in the sets. Throws
   * InvalidArgumentError when ip is not an IP address.
   */
  owner(ip: string): string | undefined {
    return this.#core.owner(ip);
  }

  /**
   * held lists what the sets hold (not the view: an entry whose add timed out is there too), every IP with its
   * owner, and brings the view in line with it. Rejects with IpsetError (`ENOENT`: a set is missing).
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
   * entry is replaced and the conflict reported; with 'error' it rejects with ProbeOwnerConflictError
   * (`ERR_PROBE_OWNER_CONFLICT`) and changes nothing. Throws InvalidArgumentError for a bad ip or owner (an IPv6
   * address when ipv6 is off too); rejects with IpsetError when the kernel refuses the entry.
   */
  add(ip: string, owner: string): Promise<AddOutcome> {
    return this.#core.add(ip, owner);
  }

  /**
   * remove deletes ip only when owner owns it; a mismatch is reported (logged and passed to onOwnerMismatch), never
   * thrown. Throws InvalidArgumentError for a bad ip or owner; rejects with IpsetError when the kernel fails the delete.
   */
  remove(ip: string, owner: string): Promise<RemoveOutcome> {
    return this.#core.remove(ip, owner);
  }

  /**
   * prune removes every entry whose IP is not in keep (an IP set of normalized addresses), as the sets hold them (an
   * entry whose add timed out too); returns what it removed. Rejects with IpsetError when the kernel fails the listing
   * or a delete (the other deletes still go ahead).
   */
  prune(keep: ReadonlySet<string>): Promise<{ ip: string; owner: string }[]> {
    return this.#core.prune(keep);
  }
}

/** ipsetStore holds probe entries in hash:ip sets, the owner as each entry's comment. */
function ipsetStore(ipset: Ipset): ProbeStore {
  return {
    add: (set, ip, owner, replace) => (replace ? ipset.add(set, { ip, comment: owner }, { replace: true }) : ipset.add(set, { ip, comment: owner })),
    // The view knows the owner of every entry this (single) writer made or loaded; only an entry it has never
    // seen costs a dump of the set. (A restarted agent re-syncing 10k pods stays linear.)
    conflictOwner: async (set, ip, viewed) => viewed ?? (await kernelOwner(ipset, set, ip)),
    delete: (set, ip) => ipset.del(set, { ip }, { ignoreMissing: true }),
    async *list(set) {
      for await (const e of ipset.entries(set)) yield { ip: e.ip, owner: e.comment ?? '' };
    },
  };
}

/** kernelOwner is the kernel's word on who owns ip (a dump of its set; conflicts are rare). */
async function kernelOwner(ipset: Ipset, set: string, ip: string): Promise<string | undefined> {
  for await (const e of ipset.entries(set)) {
    if (e.ip === ip) return e.comment ?? '';
  }
  return undefined;
}
