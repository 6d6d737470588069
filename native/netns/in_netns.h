// The one way podnet runs native work inside a network namespace.
//
// setns() and unshare() change the namespace of the calling thread only. Doing it on the JS
// thread or on a libuv pool thread would leak the namespace into unrelated
// work if the switch back ever failed, so the work runs on podnet's own hop
// thread: it enters the namespace, runs the work, and goes back home before it
// takes the next; a hop thread that cannot go back ends and is replaced. No
// thread that runs anything else has ever been in another namespace. Sockets
// created there stay bound to that namespace whichever thread uses them later.
#pragma once

#include <functional>

#include "util/sys_error.h"

namespace podnet {

// Runs fn inside the namespace of netnsFd on the hop thread (one hop at a
// time; a thread of its own when no hop thread can be started) and waits for
// it. With netnsFd < 0, fn runs on the calling thread in its own
// namespace. Exceptions thrown by fn are rethrown to the caller.
ErrorInfo RunInNetns(int netnsFd, const std::function<void()>& fn);

// Runs fn on a short-lived thread that has just unshared into a new, empty
// network namespace (unshare(CLONE_NEWNET)), and waits for it; the thread then
// ends there. The namespace outlives the thread only if fn keeps a reference
// to it (an fd, a process). Exceptions thrown by fn are rethrown to the caller.
ErrorInfo RunInNewNetns(const std::function<void()>& fn);

}  // namespace podnet
