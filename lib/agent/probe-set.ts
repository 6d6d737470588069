/**
 * ProbeSet: the host's pod-IP sets for kubelet probes, one hash:ip set per family with the owning pod's UID as each
 * entry's comment. The ownership rules (exclusive adds, conflicts resolved by policy and reported, removals only when
 * IP and owner match, one IP's work serialized, a view of owners refreshed from the kernel when it disagrees) are
 * ProbeOwnership's, shared with NftProbeSet; this module says how ipset holds the entries. It assumes it is the only
 * writer of its sets, as the node agent is.
 */
import type { Ipset } from '../ipset/client.js';
import { ProbeOwnership, type ProbeSetCommonOptions, type ProbeStore } from './probe-ownership.js';

export { normalizeIp, type AddOutcome, type ConflictPolicy, type ProbeConflict, type ProbeOwnerMismatch, type RemoveOutcome } from './probe-ownership.js';

/** ProbeSetOptions configure a ProbeSet: the ipset client it writes through, its set names and its conflict policy. */
export interface ProbeSetOptions extends ProbeSetCommonOptions {
  /** The client of the host namespace's ipset (the ProbeSet does not close it). */
  ipset: Ipset;
}

/** The longest comment ipset keeps (IPSET_MAX_COMMENT_SIZE). */
const OWNER_MAX = 255;

/**
 * ProbeSet keeps the host's pod-IP sets for kubelet probes (`<prefix>-v4`, `<prefix>-v6`, hash:ip with comments), the
 * owning pod's UID as each entry's comment. Adds are exclusive in the kernel, so a conflict with another owner is
 * detected atomically and resolved by its ConflictPolicy; removals happen only when the owner matches (see
 * ProbeOwnership for add, remove, prune, held, load, owner and entries; they reject with IpsetError). It assumes it
 * is the only writer of its sets. The constructor throws InvalidArgumentError (`ERR_INVALID_ARG_VALUE`,
 * `ERR_INVALID_ARG_TYPE`) for a bad prefix or policy.
 */
export class ProbeSet extends ProbeOwnership {
  readonly #ipset: Ipset;

  constructor(options: ProbeSetOptions) {
    super({ ...options, store: ipsetStore(options.ipset), prefix: options.prefix ?? 'istio-inpod-probes', ipv6: options.ipv6 ?? true, ownerMax: OWNER_MAX });
    this.#ipset = options.ipset;
  }

  /**
   * ensure creates the sets; an existing set of the same type and options is accepted. Rejects with IpsetError
   * (`IPSET_ERR_TYPE_MISMATCH` and the like when a set of that name exists with other options).
   */
  async ensure(): Promise<void> {
    await this.#ipset.create(this.v4Name, { type: 'hash:ip', family: 'inet', comment: true }, { exist: true });
    if (this.ipv6) await this.#ipset.create(this.v6Name, { type: 'hash:ip', family: 'inet6', comment: true }, { exist: true });
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
