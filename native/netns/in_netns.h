// The one way podnet runs native work inside a network namespace.
//
// setns() changes the namespace of the calling thread only. Doing it on the JS
// thread or on a libuv pool thread would leak the namespace into unrelated
// work if the switch back ever failed, so the work runs on a thread created
// for it, which joins the namespace and then ends: no thread that outlives the
// work has ever been in another namespace. Sockets created there stay bound to
// that namespace whichever thread uses them later.
#pragma once

#include <functional>

#include "util/sys_error.h"

namespace podnet {

// Runs fn inside the namespace of netnsFd on a short-lived thread and waits
// for it. With netnsFd < 0, fn runs on the calling thread in its own
// namespace. Exceptions thrown by fn are rethrown to the caller.
ErrorInfo RunInNetns(int netnsFd, const std::function<void()>& fn);

}  // namespace podnet
