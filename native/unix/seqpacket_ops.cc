#include "unix/seqpacket_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <memory>

namespace podnet {

namespace {

ErrorInfo PathError(int err, const char* syscall, const std::string& path) {
  return SystemError(err, syscall).With("path", path);
}

bool FillAddress(const std::string& path, sockaddr_un* addr, socklen_t* len) {
  if (path.empty() || path.size() > UnixPathMax()) return false;
  memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  memcpy(addr->sun_path, path.data(), path.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return true;
}

// Whether a listener answers at path. ECONNREFUSED means a socket file that
// nobody listens on any more (its server died without unlinking it).
ErrorInfo ProbeExisting(const std::string& path, bool* stale) {
  *stale = false;
  int fd = -1;
  ErrorInfo err = NewSeqpacketSocket(&fd);
  if (err.failed()) return err;
  sockaddr_un addr;
  socklen_t len = 0;
  FillAddress(path, &addr, &len);  // the caller checked the length
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
  } while (rc != 0 && errno == EINTR);
  int saved = rc == 0 ? 0 : errno;
  close(fd);
  // EAGAIN: a listener with a full backlog; EPROTOTYPE: one of another type.
  if (rc == 0 || saved == EAGAIN || saved == EPROTOTYPE) {
    ErrorInfo inUse = PathError(EADDRINUSE, "bind", path);
    inUse.message = "EADDRINUSE: a server is listening at '" + path + "', bind";
    return inUse;
  }
  if (saved == ECONNREFUSED) {
    *stale = true;
    return ErrorInfo{};
  }
  return PathError(saved, "connect", path);
}

ErrorInfo ClearStale(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return ErrorInfo{};
    return PathError(errno, "lstat", path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    ErrorInfo exists = PathError(EEXIST, "bind", path);
    exists.message = "EEXIST: '" + path + "' exists and is not a socket, bind";
    return exists;
  }
  bool stale = false;
  ErrorInfo err = ProbeExisting(path, &stale);
  if (err.failed()) return err;
  if (stale && unlink(path.c_str()) != 0 && errno != ENOENT) return PathError(errno, "unlink", path);
  return ErrorInfo{};
}

ErrorInfo UnixError(const char* code, std::string message) {
  ErrorInfo info;
  info.kind = "unix";
  info.code = code;
  info.syscall = "recvmsg";
  info.message = std::move(message);
  return info;
}

std::string FdsClosed(size_t n) {
  return n == 0 ? std::string("no fd came with it") : std::to_string(n) + (n == 1 ? " fd" : " fds") + " that came with it closed";
}

}  // namespace

size_t UnixPathMax() { return sizeof(sockaddr_un::sun_path) - 1; }

ErrorInfo NewSeqpacketSocket(int* fd) {
  *fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (*fd < 0) return SystemError(errno, "socket");
  return ErrorInfo{};
}

ErrorInfo ListenSeqpacket(const std::string& path, unsigned mode, int backlog, ListenedSocket* out) {
  sockaddr_un addr;
  socklen_t len;
  if (!FillAddress(path, &addr, &len)) return PathError(ENAMETOOLONG, "bind", path);
  ErrorInfo err = ClearStale(path);
  if (err.failed()) return err;

  int fd = -1;
  if ((err = NewSeqpacketSocket(&fd)).failed()) return err;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    err = PathError(errno, "bind", path);
    close(fd);
    return err;
  }
  // bind() applied the umask; nobody can connect before listen(), so setting
  // the exact mode now leaves no window with looser permissions.
  struct stat st;
  const char* failed = nullptr;
  if (chmod(path.c_str(), mode) != 0) {
    failed = "chmod";
  } else if (lstat(path.c_str(), &st) != 0) {
    failed = "lstat";
  } else if (listen(fd, backlog) != 0) {
    failed = "listen";
  }
  if (failed != nullptr) {
    err = PathError(errno, failed, path);
    unlink(path.c_str());
    close(fd);
    return err;
  }
  out->fd = fd;
  out->dev = static_cast<uint64_t>(st.st_dev);
  out->ino = static_cast<uint64_t>(st.st_ino);
  return ErrorInfo{};
}

void UnlinkIfSame(const std::string& path, uint64_t dev, uint64_t ino) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return;
  if (!S_ISSOCK(st.st_mode) || static_cast<uint64_t>(st.st_dev) != dev || static_cast<uint64_t>(st.st_ino) != ino) return;
  unlink(path.c_str());
}

IoStatus ConnectSeqpacket(int fd, const std::string& path, ErrorInfo* err) {
  sockaddr_un addr;
  socklen_t len;
  if (!FillAddress(path, &addr, &len)) {
    *err = PathError(ENAMETOOLONG, "connect", path);
    return IoStatus::kFailed;
  }
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), len);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) return IoStatus::kDone;
  if (errno == EAGAIN) return IoStatus::kWouldBlock;
  *err = PathError(errno, "connect", path);
  return IoStatus::kFailed;
}

ErrorInfo ReadPeerCredentials(int fd, PeerCredentials* cred) {
  struct ucred uc;
  socklen_t len = sizeof uc;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) != 0) return SystemError(errno, "getsockopt");
  cred->pid = uc.pid;
  cred->uid = uc.uid;
  cred->gid = uc.gid;
  return ErrorInfo{};
}

IoStatus AcceptSeqpacket(int listenFd, int* fd, PeerCredentials* cred, ErrorInfo* err) {
  for (;;) {
    int conn = accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (conn < 0) {
      // A client that gave up while queued is not this server's failure.
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN) return IoStatus::kWouldBlock;
      *err = SystemError(errno, "accept4");
      return IoStatus::kFailed;
    }
    ErrorInfo credErr = ReadPeerCredentials(conn, cred);
    if (credErr.failed()) {
      close(conn);
      *err = credErr;
      return IoStatus::kFailed;
    }
    *fd = conn;
    return IoStatus::kDone;
  }
}

IoStatus SendSeqpacket(int fd, const char* data, size_t len, const int* fds, size_t fdCount, ErrorInfo* err) {
  iovec iov{const_cast<char*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // uint64_t storage keeps the cmsghdr aligned.
  std::unique_ptr<uint64_t[]> control;
  if (fdCount > 0) {
    size_t space = CMSG_SPACE(sizeof(int) * fdCount);
    control.reset(new uint64_t[(space + 7) / 8]());
    msg.msg_control = control.get();
    msg.msg_controllen = space;
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fdCount);
    memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * fdCount);
  }
  ssize_t n;
  do {
    n = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n >= 0) return IoStatus::kDone;
  if (errno == EAGAIN) return IoStatus::kWouldBlock;
  *err = SystemError(errno, "sendmsg");
  return IoStatus::kFailed;
}

IoStatus ReceiveSeqpacket(int fd, std::vector<char>* buffer, size_t maxFds, ReceivedMessage* out, ErrorInfo* err) {
  iovec iov{buffer->data(), buffer->size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  // Room for one fd more than allowed, so that "too many" shows as a count
  // (CMSG_SPACE rounds up and could fit an extra fd unnoticed otherwise).
  size_t space = CMSG_SPACE(sizeof(int) * (maxFds + 1));
  std::unique_ptr<uint64_t[]> control(new uint64_t[(space + 7) / 8]());
  msg.msg_control = control.get();
  msg.msg_controllen = space;

  ssize_t n;
  do {
    // MSG_TRUNC makes recvmsg return the message's real length.
    n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN) return IoStatus::kWouldBlock;
    *err = SystemError(errno, "recvmsg");
    return IoStatus::kFailed;
  }

  std::vector<int> fds;
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    size_t at = fds.size();
    fds.resize(at + count);
    memcpy(fds.data() + at, CMSG_DATA(cmsg), count * sizeof(int));
  }

  size_t size = static_cast<size_t>(n);
  if ((msg.msg_flags & MSG_TRUNC) != 0 || size > buffer->size()) {
    CloseFds(fds);
    *err = UnixError("ERR_UNIX_TRUNCATED", "message of " + std::to_string(size) + " bytes is longer than maxBytes " +
                                               std::to_string(buffer->size()) + " and was discarded, " +
                                               FdsClosed(fds.size()));
    err->With("size", std::to_string(size)).With("maxBytes", std::to_string(buffer->size()));
    err->With("receivedFds", std::to_string(fds.size()));
    return IoStatus::kFailed;
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0 || fds.size() > maxFds) {
    CloseFds(fds);
    *err = UnixError("ERR_UNIX_CTRUNC", "message carried more fds than maxFds " + std::to_string(maxFds) +
                                            " and was discarded, " + FdsClosed(fds.size()));
    err->With("maxFds", std::to_string(maxFds)).With("receivedFds", std::to_string(fds.size()));
    err->With("size", std::to_string(size));
    return IoStatus::kFailed;
  }

  if (size == 0 && fds.empty()) {
    // A zero-length message and the end of the stream both read as 0 bytes.
    // A peer that has not shut down sent an empty message. One that has may
    // have sent an empty message and more before closing: a message still
    // queued (SIOCINQ is the next message's length) means this was not the end.
    // Only an empty message with nothing but empty ones after it reads as the end.
    pollfd pfd{fd, POLLRDHUP, 0};
    int rc;
    do {
      rc = poll(&pfd, 1, 0);
    } while (rc < 0 && errno == EINTR);
    bool shut = rc < 0 || (pfd.revents & (POLLRDHUP | POLLHUP)) != 0;
    int queued = 0;
    if (shut && ioctl(fd, SIOCINQ, &queued) == 0 && queued > 0) shut = false;
    out->eof = shut;
  }
  out->size = size;
  out->fds = std::move(fds);
  return IoStatus::kDone;
}

void CloseFds(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

}  // namespace podnet
