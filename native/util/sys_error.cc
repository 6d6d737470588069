#include "util/sys_error.h"

#include <string.h>

namespace podnet {

ErrorInfo SystemError(int err, const char* syscall) {
  ErrorInfo info;
  info.err = err;
  info.syscall = syscall;
  return info;
}

std::string ErrnoName(int err) {
  const char* name = strerrorname_np(err);
  if (name != nullptr) return name;
  return "E" + std::to_string(err);
}

}  // namespace podnet
