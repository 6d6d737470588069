#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "netlink/socket_transport.h"

namespace podnet::nl {

// A socket of one protocol that is opened inside another namespace by the
// handle's first operation, in the same hop as that operation's exchange
// (SessionHandle::Start): a client made for one batch (open, one exchange,
// close) then pays for one thread hand-off each way instead of two. It owns a
// duplicate of the namespace's fd for its whole life, so every operation
// queued before the socket is open enters that namespace whatever the caller
// did with its own fd since.
class DeferredSocket final : public Transport {
 public:
  // Duplicates netnsFd (close-on-exec); a failure leaves *out empty.
  static ErrorInfo Make(int netnsFd, int protocol, int receiveBufferBytes, std::unique_ptr<DeferredSocket>* out);
  ~DeferredSocket() override;

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
  DeferredSocket(int netnsFd, int protocol, int receiveBufferBytes)
      : netnsFd_(netnsFd), protocol_(protocol), receiveBufferBytes_(receiveBufferBytes) {}

  const int netnsFd_;
  const int protocol_;
  const int receiveBufferBytes_;
  std::mutex opening_;
  std::unique_ptr<SocketTransport> socket_;
  std::atomic<bool> opened_{false};
};

}  // namespace podnet::nl
