#include "unix/op_driver.h"

#include <errno.h>
#include <sys/socket.h>

#include <algorithm>

#include "util/js_error.h"

namespace podnet {

OpDriver::OpDriver(Napi::Env env, const char* resourceName) : env_(env), context_(env, resourceName) {
  if (napi_get_uv_event_loop(env, &loop_) != napi_ok) throw Napi::Error::New(env, "no event loop");
}

OpDriver::~OpDriver() { DetachWaiter(); }

void OpDriver::DetachWaiter() {
  if (waiter_ == nullptr) return;
  waiter_->Detach();
  waiter_ = nullptr;
}

Napi::Promise OpDriver::Submit(int queue, std::unique_ptr<PendingOp> op) {
  Napi::Promise promise = op->deferred.Promise();
  if (op->timeoutMs >= 0) op->deadlineNs = NowNs() + static_cast<uint64_t>(op->timeoutMs) * 1000000u;
  auto& q = queues_[queue];
  if (q.empty() && Attempt(queue, *op)) return promise;
  if (!PrepareToWait(queue, *op)) return promise;
  q.push_back(std::move(op));
  UpdateWaiter();
  return promise;
}

void OpDriver::Resolve(PendingOp& op, Napi::Value value) { op.deferred.Resolve(value); }

void OpDriver::Reject(PendingOp& op, const ErrorInfo& err) { op.deferred.Reject(MakeError(env_, err)); }

void OpDriver::RejectAll(const ErrorInfo& err) {
  for (auto& q : queues_) {
    // Taken out first: rejecting runs the JS error factory.
    std::deque<std::unique_ptr<PendingOp>> ops;
    ops.swap(q);
    for (auto& op : ops) Reject(*op, err);
  }
  UpdateWaiter();
}

void OpDriver::Pump() {
  for (int queue = 0; queue < 2; queue++) {
    auto& q = queues_[queue];
    for (;;) {
      while (!q.empty() && Attempt(queue, *q.front())) q.pop_front();
      // The clock is read after the attempts: what arrived by the deadline is taken.
      uint64_t now = NowNs();
      bool expired = false;
      for (auto it = q.begin(); it != q.end();) {
        if ((*it)->deadlineNs <= now) {
          std::unique_ptr<PendingOp> op = std::move(*it);
          it = q.erase(it);
          Reject(*op, OpError(queue, *op, ETIMEDOUT));
          expired = true;
        } else {
          ++it;
        }
      }
      // A new head may go through where the expired one could not.
      if (!expired || q.empty()) break;
    }
  }
}

void OpDriver::UpdateWaiter() {
  int events = 0;
  uint64_t next = kNoDeadline;
  bool waiting = false;
  for (int queue = 0; queue < 2; queue++) {
    const auto& q = queues_[queue];
    if (q.empty()) continue;
    waiting = true;
    events |= EventsFor(queue, *q.front());
    next = std::min(next, RetryAtNs(*q.front()));
    for (const auto& op : q) next = std::min(next, op->deadlineNs);
  }
  if (!waiting) {
    if (waiter_ != nullptr) waiter_->Close();
    waiter_ = nullptr;
    return;
  }
  int uvErr = 0;
  if (waiter_ == nullptr) {
    waiter_ = FdWaiter::Open(loop_, fd_, this, &uvErr);
    if (waiter_ != nullptr) KeepAlive(true);
  }
  if (waiter_ != nullptr) uvErr = waiter_->Watch(events);
  if (uvErr != 0) {
    // Nothing would ever wake these operations: fail them rather than hang.
    ErrorInfo err = SystemError(-uvErr, "uv_poll_start");
    for (auto& q : queues_) {
      std::deque<std::unique_ptr<PendingOp>> ops;
      ops.swap(q);
      for (auto& op : ops) Reject(*op, err);
    }
    if (waiter_ != nullptr) waiter_->Close();
    waiter_ = nullptr;
    return;
  }
  if (next == kNoDeadline) {
    waiter_->DisarmTimer();
  } else {
    uint64_t now = NowNs();
    // Rounded up, and checked against the clock when it fires (Pump), so a
    // deadline never fires early even though the loop's time lags.
    waiter_->ArmTimer(next > now ? (next - now + 999999u) / 1000000u : 0);
  }
}

template <typename Fn>
void OpDriver::InCallback(Fn&& fn) {
  try {
    Napi::HandleScope scope(env_);
    // Settling promises outside any JS frame: the scope runs the microtasks
    // (the awaiting code) when it closes, as Node does after its callbacks.
    Napi::CallbackScope callbackScope(env_, context_);
    try {
      fn();
    } catch (const Napi::Error& e) {
      napi_fatal_exception(env_, e.Value());
    }
  } catch (...) {
    // No JS frame to throw into and the scopes failed: nothing else to do.
  }
}

void OpDriver::OnPollReady(int status, int events) {
  InCallback([&] {
    Pump();
    if (status >= 0 || fd_ < 0) return;
    // The kernel flagged an error on the socket that no syscall above has
    // reported (reading SO_ERROR clears it, so it is reported once).
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err == 0) return;
    for (int queue = 0; queue < 2; queue++) {
      std::deque<std::unique_ptr<PendingOp>> ops;
      ops.swap(queues_[queue]);
      for (auto& op : ops) Reject(*op, OpError(queue, *op, err));
    }
  });
  AfterCallback();
}

void OpDriver::OnTimer() {
  InCallback([&] { Pump(); });
  AfterCallback();
}

void OpDriver::AfterCallback() {
  // Only now, after the microtasks the callback scope ran: a read loop has
  // asked for its next message by then, and the waiter it finds open keeps
  // its poll registered. Closing it when the queue went empty in Pump cost a
  // pair of epoll_ctl calls and two handle inits per message.
  InCallback([&] { UpdateWaiter(); });
}

void OpDriver::OnWaiterClosed() {
  try {
    KeepAlive(false);
  } catch (...) {
    // Only at environment teardown, when nothing is held any more.
  }
}

}  // namespace podnet
