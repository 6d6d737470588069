#pragma once

#include <memory>

#include "netlink/transport.h"

namespace podnet::nl {

// A netlink socket of one protocol (NETLINK_NETFILTER, NETLINK_ROUTE),
// created inside the namespace of netnsFd (or the caller's when netnsFd < 0)
// and bound to it for life. receiveBufferBytes > 0 sets SO_RCVBUF to it (the
// kernel doubles it, caps it at net.core.rmem_max and floors it at its
// minimum) instead of podnet's large default: for tests of a receive buffer
// that overflows.
class SocketTransport final : public Transport {
 public:
  static ErrorInfo Open(int netnsFd, int protocol, std::unique_ptr<SocketTransport>* out, int receiveBufferBytes = 0);
  ~SocketTransport() override;

  ErrorInfo Send(const uint8_t* data, size_t len) override;
  ErrorInfo Recv(RxBuffer* buf, size_t* len, int timeoutMs) override;
  void Drain() override;

 private:
  SocketTransport(int fd, int protocol) : fd_(fd), protocol_(protocol) {}
  int fd_;
  int protocol_;
  // Whether Send has asked for the large send buffer (it does on the first
  // request the default one refuses).
  bool sendBufferRaised_ = false;
};

}  // namespace podnet::nl
