// A promise settled by a hop that nobody blocks on (QueueInNetns): the
// baton's Inside() runs in the namespace on the hop thread, its Result() on
// the JS thread, to which the hop thread hands the finished job through the
// instance's HopReturn. Compared with a libuv worker that waits for the hop
// (PromiseWorker around RunInNetns), it spares a thread hand-off each way.
//
// Baton requirements:
//   void Inside();                        // hop thread, in the namespace, no N-API, no throw
//   Napi::Value Result(Napi::Env env);    // JS thread, on success
//   void Abandon();                       // any thread: the instance is gone, drop JS references unreleased
//   ErrorInfo error;                      // set by Inside() on failure
#pragma once

#include <napi.h>

#include <memory>
#include <mutex>
#include <utility>

#include "netns/in_netns.h"
#include "util/js_error.h"

namespace podnet {

// A finished hop on its way back to the JS thread.
class ReturningHop : public HopJob {
 public:
  // JS thread: resolves or rejects the job's promise.
  virtual void Settle(Napi::Env env) = 0;
  // The instance is gone: drop JS references without releasing them.
  virtual void Abandon() = 0;
};

// HopReturn is how finished hops reach one addon instance's JS thread: one
// thread-safe function, referenced only while hops are out (an idle process
// exits as it would), and a flag, under its own lock, that the instance's
// teardown sets so that no hop uses the function after it. Made on first use
// and never freed: the hop thread may still hold it when the instance ends.
class HopReturn {
 public:
  static HopReturn& Of(Napi::Env env);
  // JS thread: a hop leaves (the function is referenced while any is out).
  void Out(Napi::Env env);
  // Hop thread: hands the finished job to the JS thread, or drops it once the instance is gone.
  void Back(std::unique_ptr<ReturningHop> job);

 private:
  static void Deliver(Napi::Env env, Napi::Function, HopReturn* self, ReturningHop* job);
  using Function = Napi::TypedThreadSafeFunction<HopReturn, ReturningHop, &HopReturn::Deliver>;
  Function fn_;
  int out_ = 0;
  std::mutex m_;
  bool closed_ = false;
};

template <typename Baton>
class HopPromise final : public ReturningHop {
 public:
  // JS thread: queues the baton's hop into netnsFd's namespace (open until the promise settles) and returns its promise.
  static Napi::Promise Queue(Napi::Env env, int netnsFd, std::unique_ptr<Baton> baton) {
    auto job = std::unique_ptr<HopPromise>(new HopPromise(env, std::move(baton)));
    Napi::Promise promise = job->deferred_.Promise();
    HopReturn& back = HopReturn::Of(env);
    back.Out(env);
    job->back_ = &back;
    QueueInNetns(netnsFd, std::move(job));
    return promise;
  }

  void Inside() override {
    try {
      baton_->Inside();
    } catch (const std::bad_alloc&) {
      baton_->error = SystemError(ENOMEM, "malloc");
    }
  }

  void Finished(std::unique_ptr<HopJob> self) override {
    self.release();
    back_->Back(std::unique_ptr<ReturningHop>(this));
  }

  void Settle(Napi::Env env) override {
    Napi::HandleScope scope(env);
    const ErrorInfo& failed = entered.failed() ? entered : baton_->error;
    if (failed.failed()) {
      deferred_.Reject(MakeError(env, failed));
      return;
    }
    try {
      deferred_.Resolve(baton_->Result(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

  void Abandon() override { baton_->Abandon(); }

 private:
  HopPromise(Napi::Env env, std::unique_ptr<Baton> baton) : deferred_(Napi::Promise::Deferred::New(env)), baton_(std::move(baton)) {}

  Napi::Promise::Deferred deferred_;
  std::unique_ptr<Baton> baton_;
  HopReturn* back_ = nullptr;
};

}  // namespace podnet
