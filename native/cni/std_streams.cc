#include "cni/std_streams.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>

namespace podnet::cni {

namespace {

// WaitFor polls fd for events until the deadline: 0 when ready, else ETIMEDOUT or poll's errno.
int WaitFor(int fd, short events, const Deadline& deadline) {
  for (;;) {
    int ms = deadline.RemainingMs();
    if (ms == 0) return ETIMEDOUT;
    pollfd p = {fd, events, 0};
    int rc = poll(&p, 1, ms);
    if (rc > 0) return 0;  // ready, or an error/hangup the next read or write reports
    if (rc < 0 && errno != EINTR) return errno;
  }
}

// A pipe that polls writable has room for PIPE_BUF bytes: writes of at most that never block on a blocking fd.
constexpr size_t kWriteChunk = 4096;

}  // namespace

void EnsureStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    // open returns the lowest free number, which is fd itself.
    int opened = open("/dev/null", O_RDWR);
    if (opened >= 0 && opened != fd) close(opened);
  }
}

ReadOutcome ReadInput(int fd, size_t max, const Deadline& deadline, std::string* out, int* err) {
  out->clear();
  char buf[65536];
  for (;;) {
    int waited = WaitFor(fd, POLLIN, deadline);
    if (waited == ETIMEDOUT) return ReadOutcome::kTimedOut;
    if (waited != 0) {
      *err = waited;
      return ReadOutcome::kFailed;
    }
    size_t want = std::min(sizeof buf, max + 1 - out->size());
    ssize_t n = read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *err = errno;
      return ReadOutcome::kFailed;
    }
    if (n == 0) return ReadOutcome::kComplete;
    out->append(buf, static_cast<size_t>(n));
    if (out->size() > max) return ReadOutcome::kTooLarge;
  }
}

bool WriteOutput(int fd, const std::string& data, const Deadline& deadline, int* err) {
  size_t done = 0;
  while (done < data.size()) {
    int waited = WaitFor(fd, POLLOUT, deadline);
    if (waited != 0) {
      *err = waited;
      return false;
    }
    ssize_t n = write(fd, data.data() + done, std::min(kWriteChunk, data.size() - done));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *err = errno;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace podnet::cni
