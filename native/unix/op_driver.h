// What the socket and server wraps share: queues of pending operations, each
// tried with a nonblocking syscall first and, on EAGAIN, waited for with an
// FdWaiter, in call order, each with its own deadline. All on the JS thread.
//
// Lifetime: a waiter exists only while some operation waits (and through
// the callback that settled the last one, so a read loop's next read finds
// it still registered), and each waiter holds a reference to the wrap's JS
// object (KeepAlive) until its handles have closed, so no libuv callback can
// reach a collected wrap, and an idle wrap keeps neither the loop nor itself
// alive.
#pragma once

#include <napi.h>
#include <stdint.h>
#include <uv.h>

#include <deque>
#include <memory>

#include "unix/fd_waiter.h"
#include "util/sys_error.h"

namespace podnet {

constexpr uint64_t kNoDeadline = UINT64_MAX;

struct PendingOp {
  explicit PendingOp(Napi::Env env) : deferred(Napi::Promise::Deferred::New(env)) {}
  virtual ~PendingOp() = default;
  Napi::Promise::Deferred deferred;
  int64_t timeoutMs = -1;         // as asked; -1: none
  uint64_t deadlineNs = kNoDeadline;  // uv_hrtime() clock
};

class OpDriver : protected FdWaiter::Owner {
 public:
  static uint64_t NowNs() { return uv_hrtime(); }

 protected:
  enum Queue { kRead = 0, kWrite = 1 };

  OpDriver(Napi::Env env, const char* resourceName);
  ~OpDriver();
  OpDriver(const OpDriver&) = delete;
  OpDriver& operator=(const OpDriver&) = delete;

  // One nonblocking try of op, the head of queue q: true once it settled op.
  virtual bool Attempt(int queue, PendingOp& op) = 0;
  // Poll events the waiting head of queue q needs (0: only its timer).
  virtual int EventsFor(int queue, const PendingOp& op) = 0;
  // When op wants another try without any poll event (connect retries).
  virtual uint64_t RetryAtNs(const PendingOp& op) { return kNoDeadline; }
  // Makes op independent of the JS call that made it, before it waits
  // (copies its input, duplicates fds). False when it rejected op instead.
  virtual bool PrepareToWait(int queue, PendingOp& op) { return true; }
  // The error for op failing with err (ETIMEDOUT at its deadline, or an
  // error the kernel flagged on the socket).
  virtual ErrorInfo OpError(int queue, const PendingOp& op, int err) = 0;
  // Holds (true) or releases (false) the wrap's JS object.
  virtual void KeepAlive(bool on) = 0;

  // Starts op on queue: tried at once when nothing is queued before it.
  Napi::Promise Submit(int queue, std::unique_ptr<PendingOp> op);
  void Resolve(PendingOp& op, Napi::Value value);
  void Reject(PendingOp& op, const ErrorInfo& err);
  // Rejects everything pending with err and stops waiting.
  void RejectAll(const ErrorInfo& err);
  // For the wrap's destructor, before it closes the fd: no callback after.
  void DetachWaiter();

  Napi::Env env_;
  int fd_ = -1;

 private:
  void Pump();
  void AfterCallback();
  void UpdateWaiter();
  template <typename Fn>
  void InCallback(Fn&& fn);

  void OnPollReady(int status, int events) override;
  void OnTimer() override;
  void OnWaiterClosed() override;

  std::deque<std::unique_ptr<PendingOp>> queues_[2];
  FdWaiter* waiter_ = nullptr;
  uv_loop_t* loop_ = nullptr;
  Napi::AsyncContext context_;
};

}  // namespace podnet
