/**
 * The seams of the agent layer: how it opens namespaces, ipset, iptables, nftables and rtnetlink.
 * Defaults are the real ones; podnet/testing has fakes with the same shapes.
 */
import type { Ipset } from '../ipset/client.js';
import { Iptables } from '../iptables/iptables.js';
import { Netns, type NetnsLike } from '../netns.js';
import { Nftables } from '../nftables/client.js';
import { Rtnetlink } from '../rtnetlink/client.js';

/** AgentNetns is a namespace as the agent holds it while working on a pod. */
export interface AgentNetns {
  /** The path it was opened from. */
  readonly path: string;
  /** Unique per namespace (device and inode for real namespaces). */
  readonly id: string;
  /** The real handle, when there is one (fakes have none). */
  readonly handle?: Netns;
  /** An open fd of the namespace, handed to the node proxy (a fake's is of a namespace that stands for it). */
  readonly fd?: number;
  /** close releases the agent's handle (not the caller's). */
  close(): void;
}

/** NetnsOpener opens pod namespaces; it throws when the namespace is gone (ENOENT). */
export interface NetnsOpener {
  /** open returns a handle of the opener's own; throws PodnetSystemError `ENOENT` when the namespace is gone. */
  open(netns: NetnsLike): AgentNetns;
}

/** IptablesRequest says what an iptables client is wanted for: a namespace (undefined: the host's), a family, a backend. */
export interface IptablesRequest {
  /** The pod's namespace, or undefined for the host's. */
  netns: AgentNetns | undefined;
  /** IPv4 or IPv6 (iptables or ip6tables). */
  family: 4 | 6;
  /** The host's backend, so pods use the same one (no detection per pod). */
  backend?: 'nft' | 'legacy';
}

/**
 * IptablesFactory opens an iptables client for a request (NodeNetworkOptions.iptables; FakeNode supplies FakeIptables).
 * It rejects as Iptables.open does (PodnetSystemError `ENOENT` for a missing namespace or binary, PodnetError
 * `ERR_IPTABLES_VERSION`).
 */
export type IptablesFactory = (request: IptablesRequest) => Promise<Iptables>;

/** RtnetlinkFactory opens an rtnetlink client inside a pod's namespace (the caller closes it). */
export type RtnetlinkFactory = (request: { netns: AgentNetns }) => Promise<Rtnetlink>;

/** realRtnetlink opens real NETLINK_ROUTE sockets inside the namespace. */
export const realRtnetlink: RtnetlinkFactory = (request) => Rtnetlink.open({ netns: request.netns.handle ?? request.netns.path });

/**
 * NftablesFactory opens an nf_tables client in a pod's namespace, or with `netns` undefined in the host's
 * (NodeNetworkOptions.nftables; FakeNode supplies one FakeNftables per namespace). It rejects as Nftables.open does.
 */
export type NftablesFactory = (request: { netns: AgentNetns | undefined }) => Promise<Nftables>;

/** realNftables opens real NETLINK_NETFILTER sockets; the host's in hostNetns. */
export function realNftables(hostNetns: NetnsLike | undefined): NftablesFactory {
  return (request) => {
    const netns = request.netns?.handle ?? request.netns?.path ?? hostNetns;
    return Nftables.open(netns === undefined ? {} : { netns });
  };
}

/** realNetnsOpener opens real namespace files. */
export const realNetnsOpener: NetnsOpener = {
  open(netns: NetnsLike): AgentNetns {
    // A handle of our own, closed when the work is done: the caller keeps theirs.
    const handle = netns instanceof Netns ? netns.reopen() : Netns.open(netns);
    const path = netns instanceof Netns ? netns.path : netns;
    return { path, id: handle.id, handle, fd: handle.fd, close: () => handle.close() };
  },
};

/** realIptables opens real iptables clients; the host's uses hostNetns. */
export function realIptables(hostNetns: NetnsLike | undefined): IptablesFactory {
  return (request) =>
    Iptables.open({
      netns: request.netns?.handle ?? request.netns?.path ?? hostNetns,
      family: request.family,
      backend: request.backend ?? 'auto',
    });
}

export type { Ipset };
