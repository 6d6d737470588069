/**
 * NetlinkPeer is what podnet's C++ netlink engine talks to instead of a kernel
 * socket: the same encoder and decoder run, only the bytes go to JS. podnet's
 * FakeNetlink (podnet/testing) implements it with an in-memory ipset kernel.
 */
export interface NetlinkPeer {
  /**
   * exchange receives the bytes of one sendmsg() on a NETLINK_NETFILTER socket: one or more netlink messages, each
   * padded to 4 bytes, processed in order as the kernel does. It returns the datagrams that recvmsg() would then
   * return, in order; one datagram may hold several netlink messages (dump pages do). Returning fewer replies than the
   * kernel would (a lost ACK) leaves the engine waiting until its deadline, which then fails with ETIMEDOUT; a
   * result that is not an array of Uint8Array fails the operation with PodnetSystemError `EPROTO`. The peer is called
   * on the JS thread.
   */
  exchange(request: Uint8Array): Uint8Array[];
}
