// A uv_poll_t on one fd plus a uv_timer_t for the earliest deadline, on the
// JS thread's loop: what a socket wrap waits with after a syscall answered
// EAGAIN. No N-API here. A waiter exists only while its owner has something
// waiting, so its handles are what keeps the event loop alive then, and
// nothing does when the owner is idle.
#pragma once

#include <stdint.h>
#include <uv.h>

namespace podnet {

class FdWaiter {
 public:
  class Owner {
   public:
    // status < 0 (UV_EBADF) when the kernel flagged an error on the fd;
    // libuv has stopped the poll then, and Watch() starts it again.
    virtual void OnPollReady(int status, int events) = 0;
    virtual void OnTimer() = 0;
    // After Close(): both handles are closed and the waiter is gone.
    virtual void OnWaiterClosed() = 0;

   protected:
    ~Owner() = default;
  };

  // Returns nullptr with a libuv error in *uvErr when the poll cannot start.
  static FdWaiter* Open(uv_loop_t* loop, int fd, Owner* owner, int* uvErr);

  // Polls for events (UV_READABLE | UV_WRITABLE); 0 stops polling.
  int Watch(int events);
  // Fires OnTimer after delayMs, replacing an earlier arming.
  void ArmTimer(uint64_t delayMs);
  void DisarmTimer();

  // Closes both handles; afterwards only OnWaiterClosed is called, then the
  // waiter frees itself. Safe inside the waiter's own callbacks.
  void Close();
  // Close() for an owner that is being destroyed: no callback at all.
  void Detach();

 private:
  FdWaiter() = default;
  ~FdWaiter() = default;
  static void PollCb(uv_poll_t* handle, int status, int events);
  static void TimerCb(uv_timer_t* handle);
  static void CloseCb(uv_handle_t* handle);

  uv_poll_t poll_;
  uv_timer_t timer_;
  Owner* owner_ = nullptr;
  int events_ = 0;
  int open_ = 0;  // handles not yet closed
  bool closing_ = false;
};

}  // namespace podnet
