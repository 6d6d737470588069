#include "util/close_later.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "util/pin_library.h"

namespace podnet {

namespace {

class Closer {
 public:
  // Never destroyed: its thread may still be inside close(2) while the process runs its static destructors.
  static Closer& Get() {
    static Closer* closer = new Closer();
    return *closer;
  }

  void Close(int fd) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (started_ || Start()) {
        try {
          fds_.push_back(fd);
          pending_.fetch_add(1, std::memory_order_relaxed);
          fd = -1;
        } catch (const std::bad_alloc&) {
          // Closed here below: this runs in destructors, which must not throw.
        }
      }
    }
    if (fd < 0) wake_.notify_one();
    else close(fd);
  }

  int Pending() const { return pending_.load(std::memory_order_acquire); }

 private:
  // Called with m_ held.
  bool Start() {
    // Unpinned, the library could be unloaded under the thread (see pin_library.h): the caller then closes in place.
    if (!PinLibrary()) return false;
    try {
      std::thread(&Closer::Loop, this).detach();
    } catch (...) {
      return false;
    }
    started_ = true;
    return true;
  }

  void Loop() {
    pthread_setname_np(pthread_self(), "podnet-close");
    std::vector<int> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [this] { return !fds_.empty(); });
        batch.swap(fds_);
      }
      for (int fd : batch) {
        close(fd);
        pending_.fetch_sub(1, std::memory_order_release);
      }
      batch.clear();
    }
  }

  std::mutex m_;
  std::condition_variable wake_;
  std::vector<int> fds_;
  bool started_ = false;
  std::atomic<int> pending_{0};
};

}  // namespace

void CloseLater(int fd) { Closer::Get().Close(fd); }

int PendingCloses() { return Closer::Get().Pending(); }

}  // namespace podnet
