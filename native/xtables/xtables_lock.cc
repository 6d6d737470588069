#include "xtables/xtables_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>

namespace podnet {

ErrorInfo TryXtablesLock(const std::string& path, int* fd) {
  // O_NONBLOCK keeps the open itself from waiting (a FIFO at the path); the
  // flock decides the rest.
  int f = open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0600);
  if (f < 0) return SystemError(errno, "open").With("path", path);
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    close(f);
    return SystemError(err, "flock").With("path", path);
  }
  *fd = f;
  return ErrorInfo{};
}

ErrorInfo PrivateLockPath(std::string* path) {
  static std::once_flag once;
  static int memfd = -1;
  static int made_errno = 0;
  std::call_once(once, [] {
    memfd = memfd_create("podnet-xtables-lock", MFD_CLOEXEC);
    if (memfd < 0) made_errno = errno;
  });
  if (memfd < 0) return SystemError(made_errno, "memfd_create");
  *path = "/proc/" + std::to_string(getpid()) + "/fd/" + std::to_string(memfd);
  return ErrorInfo{};
}

}  // namespace podnet
