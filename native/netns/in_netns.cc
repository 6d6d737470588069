#include "netns/in_netns.h"

#include <errno.h>
#include <sched.h>

#include <exception>
#include <system_error>
#include <thread>

namespace podnet {

ErrorInfo RunInNetns(int netnsFd, const std::function<void()>& fn) {
  if (netnsFd < 0) {
    fn();
    return ErrorInfo{};
  }
  ErrorInfo result;
  std::exception_ptr failure;
  std::thread worker;
  try {
    worker = std::thread([&] {
    if (setns(netnsFd, CLONE_NEWNET) != 0) {
      result = SystemError(errno, "setns");
      return;
    }
    try {
      fn();
    } catch (...) {
      failure = std::current_exception();
    }
    // The thread ends here, still inside the namespace: that is the point.
    });
  } catch (const std::system_error& e) {
    return SystemError(e.code().value(), "pthread_create");
  }
  worker.join();
  if (failure) std::rethrow_exception(failure);
  return result;
}

}  // namespace podnet
