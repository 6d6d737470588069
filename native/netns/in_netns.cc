#include "netns/in_netns.h"

#include <errno.h>
#include <sched.h>

#include <exception>
#include <system_error>
#include <thread>

namespace podnet {

// Runs fn on a thread of its own once enter() succeeded there; enter's error otherwise. The thread ends right after
// fn, still inside whatever namespace enter put it in: that is the point.
static ErrorInfo OnShortLivedThread(const std::function<ErrorInfo()>& enter, const std::function<void()>& fn) {
  ErrorInfo result;
  std::exception_ptr failure;
  std::thread worker;
  try {
    worker = std::thread([&] {
      result = enter();
      if (result.failed()) return;
      try {
        fn();
      } catch (...) {
        failure = std::current_exception();
      }
    });
  } catch (const std::system_error& e) {
    return SystemError(e.code().value(), "pthread_create");
  }
  worker.join();
  if (failure) std::rethrow_exception(failure);
  return result;
}

ErrorInfo RunInNetns(int netnsFd, const std::function<void()>& fn) {
  if (netnsFd < 0) {
    fn();
    return ErrorInfo{};
  }
  return OnShortLivedThread(
      [netnsFd] { return setns(netnsFd, CLONE_NEWNET) != 0 ? SystemError(errno, "setns") : ErrorInfo{}; }, fn);
}

ErrorInfo RunInNewNetns(const std::function<void()>& fn) {
  return OnShortLivedThread([] { return unshare(CLONE_NEWNET) != 0 ? SystemError(errno, "unshare") : ErrorInfo{}; },
                            fn);
}

}  // namespace podnet
