// The xtables lock as iptables-legacy takes it (an exclusive flock on its lock
// file), taken without waiting. iptables-legacy-restore has no form that does
// not wait (`--wait=0` and no `--wait` both wait forever), so a caller that
// must not wait holds the lock itself and gives the program a private lock
// file that nothing else contends for. No N-API here.
#pragma once

#include <string>

#include "util/sys_error.h"

namespace podnet {

// TryXtablesLock opens path (created 0600 as iptables creates it) and takes an
// exclusive flock without blocking. On success *fd holds the lock until it is
// closed; a held lock fails with EWOULDBLOCK (syscall "flock").
ErrorInfo TryXtablesLock(const std::string& path, int* fd);

// PrivateLockPath is a lock file only this process's children use: a memfd
// made once per process, named by its /proc/<pid>/fd path, which a child opens
// as its own file description (so its flock never waits) and which leaves no
// file behind when the process ends.
ErrorInfo PrivateLockPath(std::string* path);

}  // namespace podnet
