/**
 * NftProbeSet: the host's pod-IP sets for kubelet probes as nft sets in the host's `inet istio-ambient-nat` table
 * (`<prefix>-v4` of type ipv4_addr, `<prefix>-v6` of type ipv6_addr, the reference's comment), the owning pod's UID
 * as each element's comment. The same API and ownership semantics as ProbeSet on ipset (ProbeOwnership keeps
 * them for both): adds are exclusive (NLM_F_EXCL: the kernel detects an IP another pod still holds atomically, where
 * the reference's nft mode silently accepts the duplicate), the previous owner is read back from the element's
 * comment, a takeover replaces the element in one batch, and a removal deletes only when IP and owner match. Work on
 * one IP is serialized inside the process; like ProbeSet it assumes it is the only writer of its sets.
 */
import { isNotFound } from '../errors.js';
import type { Nftables } from '../nftables/client.js';
import type { NftTableRef } from '../nftables/index.js';
import { invalidType } from '../validate.js';
import { NFT_TABLES, nftProbeSets } from './nft-rules.js';
import { ProbeOwnership, type ProbeSetCommonOptions, type ProbeStore } from './probe-ownership.js';

/** The longest element comment the nftables client writes (libnftnl's user data record holds it with its NUL). */
const OWNER_MAX = 128;

/** NftProbeSetOptions configure an NftProbeSet: ProbeSetOptions with an Nftables client of the host instead of ipset. */
export interface NftProbeSetOptions extends ProbeSetCommonOptions {
  /** The client of the host namespace's nf_tables (the NftProbeSet does not close it). */
  nftables: Nftables;
}

/** The host table of the probe sets. */
const NFT_HOST_TABLE: NftTableRef = Object.freeze({ family: 'inet', name: NFT_TABLES.nat });

/**
 * NftProbeSet keeps the host's probe sets as nft sets with owner comments (see the module comment, and ProbeOwnership
 * for add, remove, prune, held, load, owner and entries; they reject with NftablesError). The constructor throws
 * InvalidArgumentError (`ERR_INVALID_ARG_VALUE`, `ERR_INVALID_ARG_TYPE`) for a bad client, prefix or policy.
 */
export class NftProbeSet extends ProbeOwnership {
  /** table is the host table the sets live in. */
  readonly table: NftTableRef = NFT_HOST_TABLE;
  readonly #prefix: string;
  readonly #nft: Nftables;

  constructor(options: NftProbeSetOptions) {
    if (typeof options !== 'object' || options === null) throw invalidType('options', 'an object', options);
    const nft = options.nftables as unknown as Record<string, unknown> | undefined;
    if (typeof nft?.run !== 'function' || typeof nft?.elements !== 'function') throw invalidType('nftables', 'an Nftables client', options.nftables);
    const ipv6 = options.ipv6 ?? true;
    if (typeof ipv6 !== 'boolean') throw invalidType('ipv6', 'a boolean', ipv6);
    const prefix = options.prefix ?? 'istio-inpod-probes';
    super({ ...options, store: nftStore(options.nftables, NFT_HOST_TABLE), prefix, ipv6, ownerMax: OWNER_MAX });
    this.#prefix = prefix;
    this.#nft = options.nftables;
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
