// The one way podnet runs native work inside a network namespace.
//
// setns() and unshare() change the namespace of the calling thread only. Doing
// either on the JS thread or on a libuv pool thread would leak the namespace
// into unrelated work if the switch back ever failed, so the work runs on a
// thread created for it, which joins (or makes) the namespace and then ends: no
// thread that outlives the work has ever been in another namespace. Sockets and
// fds created there stay bound to that namespace whichever thread uses them
// later.
#pragma once

#include <functional>

#include "util/sys_error.h"

namespace podnet {

// Runs fn inside the namespace of netnsFd on a short-lived thread and waits
// for it. With netnsFd < 0, fn runs on the calling thread in its own
// namespace. Exceptions thrown by fn are rethrown to the caller.
ErrorInfo RunInNetns(int netnsFd, const std::function<void()>& fn);

// Runs fn on a short-lived thread that has just unshared into a new, empty
// network namespace (unshare(CLONE_NEWNET)), and waits for it. The namespace
// outlives the thread only if fn keeps a reference to it (an fd, a process).
// Exceptions thrown by fn are rethrown to the caller.
ErrorInfo RunInNewNetns(const std::function<void()>& fn);

}  // namespace podnet
