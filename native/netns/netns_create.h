// Making a new, anonymous network namespace: no name, no bind mount, nothing to
// delete. It lives as long as the fd CreateNetns returns (or a process inside).
#pragma once

#include "netns/netns_open.h"
#include "util/sys_error.h"

namespace podnet {

// Makes a network namespace on a short-lived thread (RunInNewNetns), opens it
// close-on-exec into *fd and brings its loopback up, as a pod's namespace has
// it. On failure returns the error (syscall and errno) and leaves *fd at -1:
// the half-made namespace then goes with the thread. Blocks while the kernel
// sets the namespace up: call it off the JS thread.
ErrorInfo CreateNetns(int* fd, NetnsIdentity* id);

}  // namespace podnet
