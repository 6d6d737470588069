#include "unix/fd_waiter.h"

namespace podnet {

FdWaiter* FdWaiter::Open(uv_loop_t* loop, int fd, Owner* owner, int* uvErr) {
  auto* waiter = new FdWaiter();
  // A failed uv_poll_init registers nothing with the loop: plain delete is fine.
  *uvErr = uv_poll_init(loop, &waiter->poll_, fd);
  if (*uvErr != 0) {
    delete waiter;
    return nullptr;
  }
  uv_timer_init(loop, &waiter->timer_);
  waiter->poll_.data = waiter;
  waiter->timer_.data = waiter;
  waiter->owner_ = owner;
  waiter->open_ = 2;
  return waiter;
}

int FdWaiter::Watch(int events) {
  if (closing_) return 0;
  if (events == 0) {
    events_ = 0;
    return uv_poll_stop(&poll_);
  }
  // uv_poll_start resets the watcher even for the same events, and the next
  // loop turn pays epoll_ctl twice (an ADD refused with EEXIST, then a MOD):
  // a poll already watching these events is left alone.
  if (events == events_) return 0;
  int err = uv_poll_start(&poll_, events, PollCb);
  events_ = err == 0 ? events : 0;
  return err;
}

void FdWaiter::ArmTimer(uint64_t delayMs) {
  if (!closing_) uv_timer_start(&timer_, TimerCb, delayMs, 0);
}

void FdWaiter::DisarmTimer() {
  if (!closing_) uv_timer_stop(&timer_);
}

void FdWaiter::Close() {
  if (closing_) return;
  closing_ = true;
  // uv_close on a poll handle takes the fd out of epoll at once, so the
  // owner may close the fd right after this returns.
  uv_close(reinterpret_cast<uv_handle_t*>(&poll_), CloseCb);
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), CloseCb);
}

void FdWaiter::Detach() {
  owner_ = nullptr;
  Close();
}

void FdWaiter::PollCb(uv_poll_t* handle, int status, int events) {
  auto* waiter = static_cast<FdWaiter*>(handle->data);
  // libuv stopped the poll with an error report: the next Watch starts it again.
  if (status < 0) waiter->events_ = 0;
  if (!waiter->closing_ && waiter->owner_ != nullptr) waiter->owner_->OnPollReady(status, events);
}

void FdWaiter::TimerCb(uv_timer_t* handle) {
  auto* waiter = static_cast<FdWaiter*>(handle->data);
  if (!waiter->closing_ && waiter->owner_ != nullptr) waiter->owner_->OnTimer();
}

void FdWaiter::CloseCb(uv_handle_t* handle) {
  auto* waiter = static_cast<FdWaiter*>(handle->data);
  if (--waiter->open_ > 0) return;
  Owner* owner = waiter->owner_;
  delete waiter;
  if (owner != nullptr) owner->OnWaiterClosed();
}

}  // namespace podnet
