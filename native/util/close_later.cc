#include "util/close_later.h"

#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <new>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "util/pin_library.h"

namespace podnet {

namespace {

class Closer {
 public:
  // Never destroyed: its threads may still be inside close(2) while the process runs its static destructors.
  static Closer& Get() {
    static Closer* closer = new Closer();
    return *closer;
  }

  void Close(int fd) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (started_ || Start()) {
        try {
          uint64_t seq = next_;
          open_.insert(seq);
          try {
            queue_.emplace_back(seq, fd);
          } catch (const std::bad_alloc&) {
            open_.erase(seq);
            throw;
          }
          next_++;
          fd = -1;
        } catch (const std::bad_alloc&) {
          // Closed here below: this runs in destructors, which must not throw.
        }
      }
    }
    if (fd < 0) wake_.notify_one();
    else close(fd);
  }

  int Pending() {
    std::lock_guard<std::mutex> lock(m_);
    return static_cast<int>(open_.size());
  }

  void WhenClosed(std::function<void()> done) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!open_.empty()) {
        waiters_.emplace_back(next_, std::move(done));
        return;
      }
    }
    done();
  }

 private:
  // How many threads close. One: four side by side released a 120-pod removal burst no faster (215 against 225-231
  // pods/s), the kernel's releases waiting for the same destroy work one after another. All start with the first
  // close, so the process's thread count does not move with the load afterwards.
  static constexpr int kThreads = 1;

  // Called with m_ held.
  bool Start() {
    // Unpinned, the library could be unloaded under the threads (see pin_library.h): the caller then closes in place.
    if (!PinLibrary()) return false;
    for (int i = 0; i < kThreads; i++) {
      try {
        std::thread(&Closer::Loop, this).detach();
        started_ = true;
      } catch (...) {
        break;  // fewer threads: those started close everything
      }
    }
    return started_;
  }

  void Loop() {
    pthread_setname_np(pthread_self(), "podnet-close");
    for (;;) {
      std::pair<uint64_t, int> next;
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [this] { return !queue_.empty(); });
        next = queue_.front();
        queue_.pop_front();
      }
      close(next.second);
      std::vector<std::function<void()>> ready;
      {
        std::lock_guard<std::mutex> lock(m_);
        open_.erase(next.first);
        // A waiter is done once every fd handed over before it is closed, whichever thread closed it.
        uint64_t lowestOpen = open_.empty() ? next_ : *open_.begin();
        for (auto it = waiters_.begin(); it != waiters_.end();) {
          if (it->first > lowestOpen) {
            ++it;
            continue;
          }
          ready.push_back(std::move(it->second));
          it = waiters_.erase(it);
        }
      }
      for (auto& done : ready) done();
    }
  }

  std::mutex m_;
  std::condition_variable wake_;
  std::deque<std::pair<uint64_t, int>> queue_;
  bool started_ = false;
  // Sequence numbers of the fds handed over and not closed yet, the next one to hand out, and who waits for every fd
  // below a number to be closed.
  std::set<uint64_t> open_;
  uint64_t next_ = 0;
  std::vector<std::pair<uint64_t, std::function<void()>>> waiters_;
};

}  // namespace

void CloseLater(int fd) { Closer::Get().Close(fd); }

int PendingCloses() { return Closer::Get().Pending(); }

void WhenClosed(std::function<void()> done) { Closer::Get().WhenClosed(std::move(done)); }

}  // namespace podnet
