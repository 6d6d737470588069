#include "cni/exchange.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>

namespace podnet::cni {

namespace {

// While the agent's backlog is full a non-blocking unix connect says EAGAIN and nothing can be polled for: the
// plugin retries at this interval until the deadline.
constexpr int kConnectRetryMs = 10;

std::string ErrnoText(int err) {
  const char* name = strerrorname_np(err);
  return std::string(strerror(err)) + " (" + (name ? name : "E" + std::to_string(err)) + ")";
}

// Socket owns the connection's fd.
class Socket {
 public:
  Socket() = default;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd_ = -1;
};

class Session {
 public:
  Session(const Deadline& deadline, uint32_t timeout_ms, ExchangeFailure* failure)
      : deadline_(deadline), timeout_ms_(timeout_ms), failure_(failure) {}

  bool Connect(const std::string& path) {
    sock_.fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (sock_.fd_ < 0) return SystemFailure("socket", errno);
    sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path.data(), std::min(path.size(), sizeof addr.sun_path - 1));
    socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
    for (;;) {
      if (connect(sock_.fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0) return true;
      int err = errno;
      if (err == EINTR) continue;
      if (err == EAGAIN) {
        int ms = deadline_.RemainingMs();
        if (ms == 0) return TimedOut("connecting (the agent's backlog stayed full)");
        poll(nullptr, 0, std::min(ms, kConnectRetryMs));
        continue;
      }
      if (err == EINPROGRESS) {
        if (!Wait(POLLOUT, "connecting")) return false;
        int so_error = 0;
        socklen_t so_len = sizeof so_error;
        if (getsockopt(sock_.fd_, SOL_SOCKET, SO_ERROR, &so_error, &so_len) != 0) return SystemFailure("getsockopt", errno);
        if (so_error != 0) return SystemFailure("connect", so_error);
        return true;
      }
      return SystemFailure("connect", err);
    }
  }

  bool Send(const uint8_t* data, size_t len, int attach_fd) {
    iovec iov = {const_cast<uint8_t*>(data), len};
    msghdr msg;
    memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (attach_fd >= 0) {
      memset(control, 0, sizeof control);
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(cmsg), &attach_fd, sizeof(int));
    }
    for (;;) {
      if (sendmsg(sock_.fd_, &msg, MSG_NOSIGNAL) >= 0) return true;
      int err = errno;
      if (err == EINTR) continue;
      if (err != EAGAIN) return SystemFailure("sendmsg", err);
      if (!Wait(POLLOUT, "sending the request")) return false;
    }
  }

  // Receive takes the next message into buf_ (*len 0: the agent closed).
  bool Receive(size_t* len) {
    for (;;) {
      iovec iov = {buf_, sizeof buf_};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
      msghdr msg;
      memset(&msg, 0, sizeof msg);
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      ssize_t n = recvmsg(sock_.fd_, &msg, MSG_CMSG_CLOEXEC);
      if (n < 0) {
        int err = errno;
        if (err == EINTR) continue;
        if (err != EAGAIN) return SystemFailure("recvmsg", err);
        if (!Wait(POLLIN, "waiting for the answer")) return false;
        continue;
      }
      bool had_fds = CloseReceivedFds(&msg);
      if (had_fds || (msg.msg_flags & MSG_CTRUNC)) return Broken("the answer carried file descriptors");
      if (msg.msg_flags & MSG_TRUNC) return Broken("an answer message over " + std::to_string(kMaxMessage) + " bytes");
      *len = static_cast<size_t>(n);
      return true;
    }
  }

  const uint8_t* buffer() const { return buf_; }

  bool Broken(const std::string& why) {
    failure_->reason = "broken answer: " + why;
    failure_->details = "the answer breaks docs/cni-protocol.md; is the agent the same podnet version as the plugin?";
    return false;
  }

 private:
  static bool CloseReceivedFds(msghdr* msg) {
    bool any = false;
    for (cmsghdr* c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        close(fd);
        any = true;
      }
    }
    return any;
  }

  bool Wait(short events, const char* doing) {
    for (;;) {
      int ms = deadline_.RemainingMs();
      if (ms == 0) return TimedOut(doing);
      pollfd p = {sock_.fd_, events, 0};
      int rc = poll(&p, 1, ms);
      if (rc > 0) return true;  // ready, or a hangup the next call reports
      if (rc < 0 && errno != EINTR) return SystemFailure("poll", errno);
    }
  }

  bool TimedOut(const char* doing) {
    failure_->reason = "no answer within " + std::to_string(timeout_ms_) + " ms";
    failure_->details = std::string("timed out ") + doing + " (timeoutMs " + std::to_string(timeout_ms_) + ")";
    return false;
  }

  bool SystemFailure(const char* syscall, int err) {
    failure_->reason = std::string(syscall) + ": " + ErrnoText(err);
    const char* name = strerrorname_np(err);
    failure_->details = std::string(syscall) + " failed with " + (name ? name : "E" + std::to_string(err));
    return false;
  }

  const Deadline& deadline_;
  uint32_t timeout_ms_;
  ExchangeFailure* failure_;
  Socket sock_;
  uint8_t buf_[kMaxMessage];
};

}  // namespace

bool Exchange(const std::string& socket_path, const Deadline& deadline, uint32_t timeout_ms, int netns_fd,
              const std::vector<uint8_t>& header, const std::string& config, AnswerReader* answer,
              ExchangeFailure* failure) {
  Session session(deadline, timeout_ms, failure);
  if (!session.Connect(socket_path)) return false;
  if (!session.Send(header.data(), header.size(), netns_fd)) return false;
  const uint8_t* bytes = reinterpret_cast<const uint8_t*>(config.data());
  for (size_t off = 0; off < config.size(); off += kMaxMessage) {
    if (!session.Send(bytes + off, std::min(kMaxMessage, config.size() - off), -1)) return false;
  }
  for (;;) {
    size_t len = 0;
    if (!session.Receive(&len)) return false;
    switch (answer->Take(session.buffer(), len)) {
      case AnswerReader::Step::kMore:
        break;
      case AnswerReader::Step::kDone:
        return true;
      case AnswerReader::Step::kBroken:
        return session.Broken(answer->error());
    }
  }
}

}  // namespace podnet::cni
