#include "netns/netns_open.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <string>

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif
// From linux/nsfs.h (4.11+); defined here so older headers still build.
#ifndef NS_GET_NSTYPE
#define NS_GET_NSTYPE _IO(0xb7, 0x3)
#endif

namespace podnet {

static ErrorInfo NotANetns(const char* syscall, const std::string& detail) {
  ErrorInfo info;
  info.err = EINVAL;
  info.code = "ERR_NOT_NETNS";
  info.syscall = syscall;
  info.message = "not a network namespace: " + detail;
  return info;
}

// Whether fd's file is on nsfs, where every namespace file is.
static ErrorInfo CheckOnNsfs(int fd) {
  struct statfs fs;
  if (fstatfs(fd, &fs) != 0) return SystemError(errno, "fstatfs");
  if (static_cast<unsigned long>(fs.f_type) != NSFS_MAGIC) return NotANetns("fstatfs", "not on nsfs");
  return ErrorInfo{};
}

// The namespace type and identity of fd, a file already known to be on nsfs.
static ErrorInfo IdentifyNsfsFile(int fd, NetnsIdentity* id) {
  int type = ioctl(fd, NS_GET_NSTYPE);
  if (type < 0) return SystemError(errno, "ioctl");
  if (type != CLONE_NEWNET) return NotANetns("ioctl", "a namespace of another type");

  struct stat st;
  if (fstat(fd, &st) != 0) return SystemError(errno, "fstat");
  id->dev = static_cast<uint64_t>(st.st_dev);
  id->ino = static_cast<uint64_t>(st.st_ino);
  return ErrorInfo{};
}

ErrorInfo IdentifyNetns(int fd, NetnsIdentity* id) {
  ErrorInfo err = CheckOnNsfs(fd);
  return err.failed() ? err : IdentifyNsfsFile(fd, id);
}

// err, a failure to open path as a network namespace, naming the path.
static ErrorInfo AboutPath(ErrorInfo err, const std::string& path) {
  if (err.code == "ERR_NOT_NETNS") err.message = "not a network namespace: '" + path + "'";
  return err.With("path", path);
}

ErrorInfo OpenNetns(const std::string& path, int* fd, NetnsIdentity* id) {
  *fd = -1;
  // O_PATH first: it opens nothing (a FIFO would block open() until a writer
  // came, a device could act on it), yet says which filesystem the file is on.
  int pathFd = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (pathFd < 0) return SystemError(errno, "open").With("path", path);
  ErrorInfo onNsfs = CheckOnNsfs(pathFd);
  if (onNsfs.failed()) {
    close(pathFd);
    return AboutPath(onNsfs, path);
  }
  // The real open goes through the O_PATH fd, so it is the same nsfs inode
  // whatever the path names by now; setns and the ioctl need a real open.
  // O_NONBLOCK all the same: nothing here may wait.
  std::string self = "/proc/self/fd/" + std::to_string(pathFd);
  int nfd = open(self.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  int openErr = errno;
  close(pathFd);
  if (nfd < 0) return SystemError(openErr, "open").With("path", path);

  // The same inode the O_PATH fd showed to be on nsfs: only its type and identity are left to read.
  ErrorInfo err = IdentifyNsfsFile(nfd, id);
  if (err.failed()) {
    close(nfd);
    return AboutPath(err, path);
  }
  *fd = nfd;
  return err;
}

}  // namespace podnet
