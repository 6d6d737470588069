#include "netlink/deferred_socket.h"

#include <errno.h>

namespace podnet::nl {

ErrorInfo DeferredSocket::OpenHere() {
  std::lock_guard<std::mutex> lock(opening_);
  if (opened()) return ErrorInfo{};
  ErrorInfo err = SocketTransport::Open(-1, protocol_, &socket_, receiveBufferBytes_);
  if (err.failed()) return err;
  opened_.store(true, std::memory_order_release);
  return ErrorInfo{};
}

// An operation reaches the socket only after OpenHere succeeded (SessionHandle::Start routes the first ones through
// it); EBADF stands for a caller that skipped that.
ErrorInfo DeferredSocket::Send(const uint8_t* data, size_t len) {
  if (!opened()) return SystemError(EBADF, "sendmsg");
  return socket_->Send(data, len);
}

ErrorInfo DeferredSocket::Recv(RxBuffer* buf, size_t* len, int timeoutMs) {
  if (!opened()) return SystemError(EBADF, "recvmsg");
  return socket_->Recv(buf, len, timeoutMs);
}

void DeferredSocket::Drain() {
  if (opened()) socket_->Drain();
}

}  // namespace podnet::nl
