// Opening and identifying network namespace files (/proc/PID/ns/net,
// /run/netns/NAME, ...). Every fd is close-on-exec.
#pragma once

#include <stdint.h>

#include <string>

#include "util/sys_error.h"

namespace podnet {

struct NetnsIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
};

// Opens path and checks with the kernel that it is a network namespace.
// On failure returns the error (the path is recorded in it) and leaves *fd at -1.
ErrorInfo OpenNetns(const std::string& path, int* fd, NetnsIdentity* id);

// Identity of an open namespace fd, checking that it is a network namespace.
ErrorInfo IdentifyNetns(int fd, NetnsIdentity* id);

}  // namespace podnet
