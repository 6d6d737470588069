#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "netlink/socket_transport.h"

namespace podnet::nl {

// A socket of one protocol that is opened inside another namespace by the
// handle's first operation, in the same hop as that operation's exchange
// (SessionHandle::Start): a client opened for one batch, as the node agent's
// per pod, then pays for one thread hand-off each way instead of two. Until
// then it holds the namespace's fd, which its owner keeps open while the
// handle and its operations live (lib's NetlinkClient closes the namespace
// only after them).
class DeferredSocket final : public Transport {
 public:
  DeferredSocket(int netnsFd, int protocol, int receiveBufferBytes)
      : netnsFd_(netnsFd), protocol_(protocol), receiveBufferBytes_(receiveBufferBytes) {}

  DeferredSocket* Deferred() override { return this; }
  int netnsFd() const { return netnsFd_; }
  // Whether the socket is open; once true, it stays so and operations run anywhere.
  bool opened() const { return opened_.load(std::memory_order_acquire); }
  // Opens the socket in the calling thread's namespace (the hop thread's,
  // inside netnsFd's), unless an earlier operation did. A failure leaves it
  // unopened, for the next operation to try again.
  ErrorInfo OpenHere();

  ErrorInfo Send(const uint8_t* data, size_t len) override;
  ErrorInfo Recv(RxBuffer* buf, size_t* len, int timeoutMs) override;
  void Drain() override;

 private:
  const int netnsFd_;
  const int protocol_;
  const int receiveBufferBytes_;
  std::mutex opening_;
  std::unique_ptr<SocketTransport> socket_;
  std::atomic<bool> opened_{false};
};

}  // namespace podnet::nl
