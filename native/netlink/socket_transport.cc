#include "netlink/socket_transport.h"

#include <errno.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "netns/in_netns.h"
#include "util/close_later.h"

namespace podnet::nl {

// Batches put thousands of replies on the socket before we read any. The
// default 212 KiB receive buffer loses ACKs past ~3000 of them (ENOBUFS), so
// ask for far more; SO_RCVBUFFORCE (root) ignores rmem_max.
constexpr int kSocketBuffer = 8 << 20;
// Dump datagrams reach ~32 KiB; error replies echo requests of up to 64 KiB.
constexpr size_t kRecvBuffer = 256 << 10;

int64_t MonotonicMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

static void SetBuffer(int fd, int force, int plain, int size) {
  if (setsockopt(fd, SOL_SOCKET, force, &size, sizeof size) != 0) {
    setsockopt(fd, SOL_SOCKET, plain, &size, sizeof size);
  }
}

ErrorInfo SocketTransport::Open(int netnsFd, int protocol, std::unique_ptr<SocketTransport>* out, int receiveBufferBytes) {
  int fd = -1;
  ErrorInfo inner;
  ErrorInfo err = RunInNetns(netnsFd, [&] {
    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
    if (fd < 0) inner = SystemError(errno, "socket");
  });
  if (err.failed()) return err;
  if (inner.failed()) return inner;
  if (receiveBufferBytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &receiveBufferBytes, sizeof receiveBufferBytes);
  } else {
    SetBuffer(fd, SO_RCVBUFFORCE, SO_RCVBUF, kSocketBuffer);
  }
  int one = 1;
  // Extended ACKs carry the kernel's own error text; harmless where absent.
  setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  struct sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int e = errno;
    close(fd);
    return SystemError(e, "bind");
  }
  out->reset(new SocketTransport(fd, protocol));
  return ErrorInfo{};
}

SocketTransport::~SocketTransport() {
  if (fd_ < 0) return;
  // The kernel releases a netfilter socket only after nf_tables' deferred destroy work has run, an RCU grace period
  // whenever any namespace has deleted tables, chains, rules or elements (util/close_later.h): off this thread, which
  // is the JS thread whenever a client closes.
  if (protocol_ == NETLINK_NETFILTER) CloseLater(fd_);
  else close(fd_);
}

ErrorInfo SocketTransport::Send(const uint8_t* data, size_t len) {
  struct sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  for (;;) {
    ssize_t n = sendto(fd_, data, len, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel);
    if (n >= 0) return ErrorInfo{};
    if (errno == EINTR) continue;
    // A request larger than the send buffer is refused whole with EMSGSIZE
    // (netlink_sendmsg), nothing of it taken: the buffer is raised then and
    // the request sent again. Raised on demand, as most sockets (a pod's two
    // clients) never send more than the default 212 KiB holds.
    if (errno == EMSGSIZE && !sendBufferRaised_) {
      sendBufferRaised_ = true;
      SetBuffer(fd_, SO_SNDBUFFORCE, SO_SNDBUF, kSocketBuffer);
      continue;
    }
    return SystemError(errno, "sendto");
  }
}

ErrorInfo SocketTransport::Recv(RxBuffer* buf, size_t* len, int timeoutMs) {
  if (buf->size() < kRecvBuffer) buf->resize(kRecvBuffer);
  // The clock is read only once there is something to wait for: a reply that
  // is already queued (the usual case) costs one recv() and nothing else.
  int64_t deadlineMs = -1;
  for (;;) {
    // The kernel answers inside sendmsg(), so the reply is usually queued
    // already: try first, and only poll when nothing is there yet.
    ssize_t n = recv(fd_, buf->data(), buf->size(), MSG_DONTWAIT | MSG_TRUNC);
    if (n >= 0) {
      if (static_cast<size_t>(n) > buf->size()) return SystemError(EMSGSIZE, "recv");
      *len = static_cast<size_t>(n);
      return ErrorInfo{};
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return SystemError(errno, "recv");
    if (deadlineMs < 0) deadlineMs = MonotonicMs() + timeoutMs;
    int64_t wait = deadlineMs - MonotonicMs();
    if (wait <= 0) return SystemError(ETIMEDOUT, "recv");
    struct pollfd pfd{fd_, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(wait));
    if (ready < 0 && errno != EINTR) return SystemError(errno, "poll");
    if (ready == 0) return SystemError(ETIMEDOUT, "recv");
  }
}

void SocketTransport::Drain() {
  uint8_t scratch[4096];
  for (;;) {
    ssize_t n = recv(fd_, scratch, sizeof scratch, MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0 && errno == EINTR) continue;
    // ENOBUFS is reported once and cleared: keep draining past it.
    if (n < 0 && errno == ENOBUFS) continue;
    if (n < 0) return;
  }
}

}  // namespace podnet::nl
