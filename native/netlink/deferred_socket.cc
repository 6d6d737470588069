#include "netlink/deferred_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

namespace podnet::nl {

ErrorInfo DeferredSocket::Make(int netnsFd, int protocol, int receiveBufferBytes, std::unique_ptr<DeferredSocket>* out) {
  int own = fcntl(netnsFd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) return SystemError(errno, "fcntl");
  out->reset(new DeferredSocket(own, protocol, receiveBufferBytes));
  return ErrorInfo{};
}

// The last baton that held the session is done with the namespace: hops are only queued from operations that hold it.
DeferredSocket::~DeferredSocket() { close(netnsFd_); }

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
