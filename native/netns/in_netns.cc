#include "netns/in_netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

#include "util/pin_library.h"

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
// only ever leaves home for the span of one hop. Hops queue in call order,
// whether a caller waits for its hop (Run) or not (Queue). If the thread
// cannot go back, it ends (it is never handed work again) and another takes
// the queue.
class HopThread {
 public:
  // Runs fn in netnsFd's namespace on the hop thread and waits for it. false
  // when there is no hop thread to be had (the caller then makes a thread of
  // its own).
  bool Run(int netnsFd, const std::function<void()>& fn, ErrorInfo* result, std::exception_ptr* failure) {
    std::atomic<bool> done{false};
    Entry e;
    e.netnsFd = netnsFd;
    e.fn = &fn;
    e.result = result;
    e.failure = failure;
    e.done = &done;
    if (!Push(e)) return false;
    if (!SpinUntil(done)) {
      std::unique_lock<std::mutex> lock(m_);
      finished_.wait(lock, [&done] { return done.load(std::memory_order_acquire); });
    }
    return true;
  }

  // Queues job; when there is no hop thread to be had, it finishes at once with that error.
  void Queue(int netnsFd, std::unique_ptr<HopJob> job) {
    Entry e;
    e.netnsFd = netnsFd;
    e.job = std::move(job);
    if (Push(e)) return;
    e.job->entered = SystemError(EAGAIN, "pthread_create");
    Complete(e);
  }

 private:
  // One hop: a waiting caller's (fn, result, failure, done) or a queued job.
  struct Entry {
    int netnsFd = -1;
    const std::function<void()>* fn = nullptr;
    ErrorInfo* result = nullptr;
    std::exception_ptr* failure = nullptr;
    std::atomic<bool>* done = nullptr;
    std::unique_ptr<HopJob> job;
  };

  // A hop's own work is a few microseconds of syscalls, less than putting a
  // thread to sleep and waking it again costs here (on a VM, an interrupt to
  // the other CPU each way). So a waiting caller and the hop thread, which is
  // often handed the next hop right away (a pod's clients are opened one after
  // another), first watch a flag for a short, bounded time before they sleep.
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

  // Queues e (moved from only when it was queued); false when there is no hop thread to be had.
  bool Push(Entry& e) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!alive_ && !Start()) return false;
      queue_.push_back(std::move(e));
      pending_.store(true, std::memory_order_release);
    }
    wake_.notify_one();
    return true;
  }

  // Called with m_ held.
  bool Start() {
    PinLibrary();
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

  // Runs one hop; false when the thread could not go home afterwards.
  static bool Hop(Entry& e) {
    ErrorInfo entered;
    bool home = true;
    if (setns(e.netnsFd, CLONE_NEWNET) != 0) {
      entered = SystemError(errno, "setns");
    } else {
      if (e.job) {
        e.job->Inside();
      } else {
        try {
          (*e.fn)();
        } catch (...) {
          *e.failure = std::current_exception();
        }
      }
      home = GoHome();
    }
    if (e.job) e.job->entered = entered;
    else *e.result = entered;
    return home;
  }

  void Loop() {
    for (;;) {
      if (!SpinUntil(pending_)) {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [this] { return pending_.load(std::memory_order_acquire); });
      }
      Entry e;
      {
        std::lock_guard<std::mutex> lock(m_);
        e = std::move(queue_.front());
        queue_.pop_front();
        pending_.store(!queue_.empty(), std::memory_order_relaxed);
      }
      bool home = Hop(e);
      Complete(e);
      if (!home) {
        Retire();
        return;
      }
    }
  }

  // Still inside the last namespace: this thread takes no more work; another takes what is queued, or, when none
  // can be started, every queued hop fails as a hop with no thread would.
  void Retire() {
    std::deque<Entry> orphans;
    {
      std::lock_guard<std::mutex> lock(m_);
      alive_ = false;
      if (queue_.empty() || Start()) return;
      orphans.swap(queue_);
      pending_.store(false, std::memory_order_relaxed);
    }
    for (Entry& e : orphans) {
      if (e.job) e.job->entered = SystemError(EAGAIN, "pthread_create");
      else *e.result = SystemError(EAGAIN, "pthread_create");
      Complete(e);
    }
  }

  // Hands a finished hop over: a queued job to its Finished(), a waiting caller its done flag (set under m_, so a
  // caller that checked it and went to sleep is woken).
  void Complete(Entry& e) {
    if (e.job) {
      e.job->Finished(std::move(e.job));
      return;
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      e.done->store(true, std::memory_order_release);
    }
    finished_.notify_all();
  }

  std::mutex m_;
  std::condition_variable wake_, finished_;
  std::deque<Entry> queue_;
  bool alive_ = false;
  std::atomic<bool> pending_{false};
};

// Never destroyed: the detached hop thread waits on it until the process ends.
static HopThread& Hops() {
  static HopThread* hop = new HopThread();
  return *hop;
}

ErrorInfo RunInNetns(int netnsFd, const std::function<void()>& fn) {
  if (netnsFd < 0) {
    fn();
    return ErrorInfo{};
  }
  ErrorInfo result;
  std::exception_ptr failure;
  if (!Hops().Run(netnsFd, fn, &result, &failure)) {
    // No hop thread to be had: a thread of its own, which ends inside the namespace.
    return OnShortLivedThread(
        [netnsFd] { return setns(netnsFd, CLONE_NEWNET) != 0 ? SystemError(errno, "setns") : ErrorInfo{}; }, fn);
  }
  if (failure) std::rethrow_exception(failure);
  return result;
}

void QueueInNetns(int netnsFd, std::unique_ptr<HopJob> job) { Hops().Queue(netnsFd, std::move(job)); }

ErrorInfo RunInNewNetns(const std::function<void()>& fn) {
  return OnShortLivedThread([] { return unshare(CLONE_NEWNET) != 0 ? SystemError(errno, "unshare") : ErrorInfo{}; },
                            fn);
}

}  // namespace podnet
