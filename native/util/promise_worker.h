// Async work in sharp's "baton" style: the JS thread copies every input into a
// plain C++ baton, Execute() runs on a libuv worker with no N-API call, and the
// result or error is built back on the JS thread in OnOK().
#pragma once

#include <napi.h>

#include <memory>
#include <utility>

#include "util/js_error.h"

namespace podnet {

// Baton requirements:
//   void Execute();                       // worker thread, no N-API
//   Napi::Value Result(Napi::Env env);    // JS thread, on success
//   ErrorInfo error;                      // set by Execute() on failure
template <typename Baton>
class PromiseWorker final : public Napi::AsyncWorker {
 public:
  static Napi::Promise Queue(Napi::Env env, const char* name, std::unique_ptr<Baton> baton) {
    auto* worker = new PromiseWorker(env, name, std::move(baton));
    Napi::Promise promise = worker->deferred_.Promise();
    worker->Napi::AsyncWorker::Queue();
    return promise;
  }

 private:
  PromiseWorker(Napi::Env env, const char* name, std::unique_ptr<Baton> baton)
      : Napi::AsyncWorker(env, name), deferred_(Napi::Promise::Deferred::New(env)), baton_(std::move(baton)) {}

  void Execute() override {
    try {
      baton_->Execute();
    } catch (const std::bad_alloc&) {
      baton_->error = SystemError(ENOMEM, "malloc");
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    if (baton_->error.failed()) {
      deferred_.Reject(MakeError(env, baton_->error));
      return;
    }
    try {
      deferred_.Resolve(baton_->Result(env));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

  void OnError(const Napi::Error& e) override { deferred_.Reject(e.Value()); }

  Napi::Promise::Deferred deferred_;
  std::unique_ptr<Baton> baton_;
};

}  // namespace podnet
