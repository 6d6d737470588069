/**
 * The ipset fake's former names, kept for one release: FakeNetlink is FakeIpsetKernel, and its options and snapshot
 * types are FakeIpsetKernelOptions and FakeIpsetSnapshot (lib/testing/fake-ipset/).
 */
import { FakeIpsetKernel, type FakeIpsetKernelOptions } from '../fake-ipset/fake-ipset-kernel.js';
import type { FakeIpsetSnapshot } from '../fake-ipset/snapshot.js';

/** FakeNetlink is FakeIpsetKernel under the name it had before. @deprecated use FakeIpsetKernel */
export const FakeNetlink = FakeIpsetKernel;
/** FakeNetlink is FakeIpsetKernel under the name it had before. @deprecated use FakeIpsetKernel */
export type FakeNetlink = FakeIpsetKernel;
/** FakeNetlinkOptions are FakeIpsetKernelOptions. @deprecated use FakeIpsetKernelOptions */
export type FakeNetlinkOptions = FakeIpsetKernelOptions;
/** FakeNetlinkSnapshot is FakeIpsetSnapshot. @deprecated use FakeIpsetSnapshot */
export type FakeNetlinkSnapshot = FakeIpsetSnapshot;
