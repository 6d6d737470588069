#include "netns/in_netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
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

// The hop thread: one long-lived thread that enters a namespace, runs the
// work and goes back to the process's own namespace before it takes the next.
// Making a thread per hop costs more than the work (a socket or two); this one
// only ever leaves home for the span of one fn. If it cannot go back, it ends
// (it is never handed work again) and the next hop starts another.
class HopThread {
 public:
  // Runs fn in netnsFd's namespace on the hop thread. false when there is no
  // hop thread to be had (the caller then makes a thread of its own).
  bool Run(int netnsFd, const std::function<void()>& fn, ErrorInfo* result, std::exception_ptr* failure) {
    std::lock_guard<std::mutex> one(callers_);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!alive_ && !Start()) return false;
      work_ = Work{netnsFd, &fn, result, failure};
      done_.store(false, std::memory_order_relaxed);
      pending_.store(true, std::memory_order_release);
    }
    wake_.notify_one();
    if (!SpinUntil(done_)) {
      std::unique_lock<std::mutex> lock(m_);
      finished_.wait(lock, [this] { return done_.load(std::memory_order_acquire); });
    }
    return true;
  }

 private:
  struct Work {
    int netnsFd = -1;
    const std::function<void()>* fn = nullptr;
    ErrorInfo* result = nullptr;
    std::exception_ptr* failure = nullptr;
  };

  // A hop's own work is a few microseconds of syscalls, less than putting a
  // thread to sleep and waking it again costs here (on a VM, an interrupt to
  // the other CPU each way). So the caller, blocked for the hop anyway, and
  // the hop thread, which is often handed the next hop right away (a pod's
  // clients are opened one after another), first watch the flag for a short,
  // bounded time before they sleep on the condition variable.
  static constexpr auto kSpin = std::chrono::microseconds(50);
  static bool SpinUntil(const std::atomic<bool>& flag) {
    auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0;; i++) {
      if (flag.load(std::memory_order_acquire)) return true;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) return false;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
  }

  // Called with m_ held.
  bool Start() {
    try {
      std::thread(&HopThread::Loop, this).detach();
    } catch (const std::system_error&) {
      return false;
    }
    alive_ = true;
    return true;
  }

  // Home is the namespace of the process's main thread (/proc/self names the thread group leader), opened for
  // each return, so the process keeps no fd of its own for it.
  static bool GoHome() {
    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0) return false;
    bool ok = setns(home, CLONE_NEWNET) == 0;
    close(home);
    return ok;
  }

  void Loop() {
    for (;;) {
      if (!SpinUntil(pending_)) {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [this] { return pending_.load(std::memory_order_acquire); });
      }
      Work w;
      {
        std::lock_guard<std::mutex> lock(m_);
        pending_.store(false, std::memory_order_relaxed);
        w = work_;
      }
      bool home_again = true;
      if (setns(w.netnsFd, CLONE_NEWNET) != 0) {
        *w.result = SystemError(errno, "setns");
      } else {
        try {
          (*w.fn)();
        } catch (...) {
          *w.failure = std::current_exception();
        }
        home_again = GoHome();
      }
      {
        std::lock_guard<std::mutex> lock(m_);
        // Still inside the last namespace: this thread takes no more work.
        if (!home_again) alive_ = false;
        done_.store(true, std::memory_order_release);
      }
      finished_.notify_one();
      if (!home_again) return;
    }
  }

  std::mutex callers_;
  std::mutex m_;
  std::condition_variable wake_, finished_;
  Work work_;
  bool alive_ = false;
  std::atomic<bool> pending_{false}, done_{false};
};

ErrorInfo RunInNetns(int netnsFd, const std::function<void()>& fn) {
  if (netnsFd < 0) {
    fn();
    return ErrorInfo{};
  }
  // Never destroyed: the detached hop thread waits on it until the process ends.
  static HopThread* hop = new HopThread();
  ErrorInfo result;
  std::exception_ptr failure;
  if (!hop->Run(netnsFd, fn, &result, &failure)) {
    // No hop thread to be had: a thread of its own, which ends inside the namespace.
    return OnShortLivedThread(
        [netnsFd] { return setns(netnsFd, CLONE_NEWNET) != 0 ? SystemError(errno, "setns") : ErrorInfo{}; }, fn);
  }
  if (failure) std::rethrow_exception(failure);
  return result;
}

ErrorInfo RunInNewNetns(const std::function<void()>& fn) {
  return OnShortLivedThread([] { return unshare(CLONE_NEWNET) != 0 ? SystemError(errno, "unshare") : ErrorInfo{}; },
                            fn);
}

}  // namespace podnet
