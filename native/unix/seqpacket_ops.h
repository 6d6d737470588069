// The syscalls of AF_UNIX SOCK_SEQPACKET sockets with SCM_RIGHTS, one
// nonblocking attempt each: no N-API and no libuv here, so that every fd
// rule (close-on-exec, nothing leaked on an error path) is checked in one
// small place. The event-driven waiting lives in fd_waiter / op_driver.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "util/sys_error.h"

namespace podnet {

// SCM_MAX_FD of the kernel (include/net/scm.h, not exported to userspace):
// more fds in one message are refused with EINVAL.
constexpr size_t kUnixMaxFds = 253;

// What one nonblocking attempt came to.
enum class IoStatus { kDone, kWouldBlock, kFailed };

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

struct ListenedSocket {
  int fd = -1;
  // Identity of the socket file, so close() unlinks it only while it is ours.
  uint64_t dev = 0;
  uint64_t ino = 0;
};

// The longest path a sockaddr_un holds (its sun_path without the NUL).
size_t UnixPathMax();

// Binds and listens at path with exactly mode: a stale socket file there (no
// listener answers) is replaced; a live one is EADDRINUSE, a file that is not
// a socket EEXIST. Nothing is left behind on failure.
ErrorInfo ListenSeqpacket(const std::string& path, unsigned mode, int backlog, ListenedSocket* out);

// Unlinks path if it still is the socket file (dev, ino). Best effort: the
// server is going away and nothing can be done about a failure.
void UnlinkIfSame(const std::string& path, uint64_t dev, uint64_t ino);

// A fresh nonblocking, close-on-exec SOCK_SEQPACKET socket.
ErrorInfo NewSeqpacketSocket(int* fd);

// One connect attempt. kWouldBlock when the listener's backlog is full
// (AF_UNIX answers EAGAIN and offers nothing to poll for: retry later).
IoStatus ConnectSeqpacket(int fd, const std::string& path, ErrorInfo* err);

// One accept4 (nonblocking, close-on-exec) with the peer's SO_PEERCRED.
IoStatus AcceptSeqpacket(int listenFd, int* fd, PeerCredentials* cred, ErrorInfo* err);

ErrorInfo ReadPeerCredentials(int fd, PeerCredentials* cred);

// One sendmsg (MSG_NOSIGNAL) of data with fds attached as SCM_RIGHTS.
// SOCK_SEQPACKET sends a message whole or not at all.
IoStatus SendSeqpacket(int fd, const char* data, size_t len, const int* fds, size_t fdCount, ErrorInfo* err);

struct ReceivedMessage {
  bool eof = false;
  size_t size = 0;        // bytes of data (the message's whole length)
  std::vector<int> fds;  // owned by the caller once kDone is returned
};

// One recvmsg (MSG_CMSG_CLOEXEC) into buffer (its size is maxBytes). A
// message longer than the buffer (ERR_UNIX_TRUNCATED) or with more than
// maxFds fds (ERR_UNIX_CTRUNC) is a failure, and every fd that arrived with
// it is closed. eof is set when the peer has closed and nothing is queued.
IoStatus ReceiveSeqpacket(int fd, std::vector<char>* buffer, size_t maxFds, ReceivedMessage* out, ErrorInfo* err);

// Closes each fd; close() releases the fd even when it reports EINTR on
// Linux, so it is never retried.
void CloseFds(const std::vector<int>& fds);

}  // namespace podnet
