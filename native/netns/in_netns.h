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
#include <memory>

#include "util/sys_error.h"

namespace podnet {

// HopJob is work for the hop thread that nobody blocks on: Inside() runs in
// the namespace; then, once the thread is home again, Finished() hands the job
// (with `entered`, the error of entering the namespace if it could not be)
// wherever its result goes, on the hop thread.
class HopJob {
 public:
  virtual ~HopJob() = default;
  // Runs inside the namespace; must not throw (a job keeps its own errors).
  virtual void Inside() = 0;
  // Runs on the hop thread after Inside (or instead of it, when entering
  // failed); owns the job from here.
  virtual void Finished(std::unique_ptr<HopJob> self) = 0;
  ErrorInfo entered;
};

// Queues job to run inside the namespace of netnsFd (>= 0, open until the job
// finished) on the hop thread, behind the hops queued before it, and returns
// at once. When no hop thread can be had, the job finishes at once with that
// error (entered: pthread_create's).
void QueueInNetns(int netnsFd, std::unique_ptr<HopJob> job);

// Runs fn inside the namespace of netnsFd on the hop thread (one hop at a
// time, in the order queued; a thread of its own when no hop thread can be
// started) and waits for it. With netnsFd < 0, fn runs on the calling thread in its own
// namespace. Exceptions thrown by fn are rethrown to the caller.
ErrorInfo RunInNetns(int netnsFd, const std::function<void()>& fn);

// Runs fn on a short-lived thread that has just unshared into a new, empty
// network namespace (unshare(CLONE_NEWNET)), and waits for it; the thread then
// ends there. The namespace outlives the thread only if fn keeps a reference
// to it (an fd, a process). Exceptions thrown by fn are rethrown to the caller.
ErrorInfo RunInNewNetns(const std::function<void()>& fn);

}  // namespace podnet
